import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import VaultCore
import VaultRemote

/// A refusal the receiver answers with: an HTTP status and a JSON error
/// `{"error":{"code","message","document"?}}` (docs/RECEIVE.md).
package struct Refusal: Error, Sendable, Equatable {
    /// The HTTP status (4xx, or 503 while shutting down or full).
    package var status: Int
    /// A stable code (`digest-mismatch`, `unauthorized`, `too-large`, ...).
    package var code: String
    /// What was wrong, in words.
    package var message: String
    /// The document concerned (from 1), when one is.
    package var document: Int?
    /// Seconds to wait before trying again (429, 503, 507).
    package var retryAfter: Int?
    /// For the receiver's log only: what went wrong in its own words (paths of its folder),
    /// which the answer does not carry.
    package var detail: String?

    package init(_ status: Int, _ code: String, _ message: String, document: Int? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.document = document
        self.retryAfter = retryAfter
    }

    /// The answer while the receiver's disk (or quota) is full: 507 Insufficient Storage, try
    /// again in a minute.
    package static func diskFull(_ detail: String) -> Refusal {
        var r = Refusal(
            507, "disk-full", "the back office is out of space: nothing of this batch was kept; send it again later",
            retryAfter: 60)
        r.detail = detail
        return r
    }

    /// The JSON body.
    package var body: [UInt8] {
        var o = Array(#"{"error":{"code":"#.utf8) + JSONString.quoted(code)
        if let document { o += Array(#","document":\#(document)"#.utf8) }
        o += Array(#","message":"#.utf8) + JSONString.quoted(message) + Array("}}".utf8)
        return o
    }

    /// The refusal for an error met while reading or storing a batch.
    static func of(_ error: any Error, document: Int?) -> Refusal {
        if let r = error as? Refusal { return r }
        let e = VaultError.from(error)
        if e.isNoSpace { return .diskFull(e.message) }
        switch e.code {
        case .headerMalformed, .truncated, .trailingData, .digestMismatch:
            return Refusal(400, e.code.rawValue, e.message, document: document)
        case .tooManyDocuments:
            return Refusal(413, e.code.rawValue, e.message, document: document.map { $0 + 1 })
        case .usage:
            return Refusal(415, "unsupported-media-type", e.message)
        case .wrongPassword:
            return Refusal(422, "not-sealed-to-this-receiver", e.message, document: document)
        case .headerAuthenticationFailed, .chunkAuthenticationFailed:
            return Refusal(400, e.code.rawValue, e.message, document: document)
        case .storeUnavailable:
            // A store that serves receivers together failed or did not answer: sending again helps.
            return Refusal(503, "store-unavailable", "the receiver's store did not answer; send again", retryAfter: 5)
        default:
            // The details (paths of the receiver's folder) stay in its log, not in the answer.
            var r = Refusal(500, "internal", "the receiver could not store the batch (\(e.code))")
            r.detail = e.message
            return r
        }
    }
}

/// The back office's side of a delivery: stations known by their tokens, batches taken whole
/// into the receiver's own vault and answered with a signed receipt (docs/FORMAT.md), a
/// resent batch (the same `Idempotency-Key`) answered again without storing anything twice,
/// and each station's history head followed, so a station rolled back or forked is refused.
///
/// Everything it keeps is a projection of the vault's history (`station`, `receive`,
/// `receiver` records), rebuilt when it starts. Receivers that share a remote vault keep those
/// records in the store's receivers' log instead (`SharedReceiverLog`), read again before
/// each batch and appended to by conditional writes, so they share stations, batches and heads.
public final class Receiver: Sendable {
    /// Bounds on what one request may cost.
    public struct Limits: Sendable {
        /// Most documents in a batch.
        public var documents = 20
        /// Most bytes in a batch's body.
        public var bytes: UInt64 = 4 << 30
        /// Most batches taken at once (more are answered 503).
        public var concurrentBatches = 32
        /// Failed authentications from one address per minute before it is answered 429.
        public var failedAuthenticationsPerMinute = 10
        /// A body must arrive at this many bytes per second on average, after the first
        /// ``graceSeconds``.
        public var minimumBytesPerSecond: UInt64 = 16 << 10
        /// Seconds a body may take before ``minimumBytesPerSecond`` applies.
        public var graceSeconds: Double = 30

        /// The defaults: 20 documents, 4 GiB, 32 batches at once, 10 failures a minute,
        /// 16 KiB/s after 30 s.
        public init() {}
    }

    /// A station's last refusal.
    public struct LastRefusal: Sendable, Equatable {
        /// When, in milliseconds since 1970.
        public var millis: Int64
        /// Its code (`digest-mismatch`, `station-forked`, …).
        public var code: String
    }

    /// A station as the receiver knows it.
    public struct Station: Sendable, Equatable {
        /// Its name.
        public var name: String
        /// The keyed hash of its token.
        package var tokenDigest: [UInt8]
        /// The last history head it sent with an accepted batch.
        package var lastHead: HistoryHead?
        /// Batches taken from it since the receiver started.
        public var batches = 0
        /// Documents taken from it since the receiver started.
        public var documents = 0
        /// Payload bytes taken from it since the receiver started.
        public var bytes: UInt64 = 0
        /// Refusals since the receiver started.
        public var refusals = 0
        /// The last refusal since the receiver started.
        public var lastRefusal: LastRefusal?
        /// When it was last heard from (milliseconds since 1970), since the receiver started.
        public var lastSeenMillis: Int64?
        /// The last history head (`<records>-<tag>`) it sent with an accepted batch.
        public var head: String? { lastHead?.description }
    }

    private struct BatchKey: Hashable {
        var station: String
        var key: String
    }

    /// A batch taken: what a resend under its key is compared with.
    fileprivate struct Taken {
        var payloadSHA256: [UInt8]
        var answer: [UInt8]
        /// Whether it came sealed: a resend must too.
        var sealed = false
        /// The proof its sealed documents carried: a resend must carry the same.
        var proof: [UInt8]?
    }

    private struct State {
        var stations: [String: Station] = [:]
        var taken: [BatchKey: Taken] = [:]
        /// Batches being received, each with whether it is a request's body (counted against
        /// ``Limits/concurrentBatches``) or a tus upload (bounded by the tus endpoint itself).
        var inFlight: [BatchKey: Bool] = [:]
        /// The alerts recorded for each station since its last accepted batch, by reason: one
        /// record per station and reason, whatever heads it keeps sending (projected from the
        /// history, so a restart does not record them again).
        var alerted: [String: Set<String>] = [:]
        var failures: [String: (count: Int, since: Date)] = [:]
        var closing = false
        /// Since when a batch found the disk (or quota) full, and the space free then.
        var diskFull: (since: Date, free: UInt64)?
        /// The token digests of removed stations, with their names: a token used after its
        /// station was removed is told apart from a stranger's guess.
        var removed: [[UInt8]: String] = [:]
        /// The history's head when the stations and batches were last read from it.
        var head: HistoryHead?
        /// What is wrong with the history (finding codes): while anything is, no station is
        /// trusted (a cut log could bring back a removed station or forget a batch).
        var problems: [String] = []
    }

    /// The receiver's vault.
    public let vault: Vault
    /// Its signing key.
    package let identity: ReceiverIdentity
    /// Its bounds.
    public let limits: Limits
    /// The age identities that open sealed batches (none: sealed batches are refused, 415).
    package let identities: [AgeIdentity]
    /// Plaintext batches are refused (415): documents reach this receiver sealed only.
    package let requireSealed: Bool
    private let state: Mutex<State>
    /// Held while the receiver lives: one receiver per vault.
    private let lock: OpenFile?
    /// The log shared with other receivers, for a vault on a store (nil: the vault's history).
    private let shared: SharedReceiverLog?

    /// A receiver on `vault`, its signing key made when it has none, its stations and the
    /// batches it took read from the history.
    /// - Parameters:
    ///   - vault: the receiver's vault, unlocked.
    ///   - limits: what one request may cost.
    ///   - serving: take the vault's receiver lock (a server; not a command that only lists or
    ///     changes stations).
    public convenience init(vault: Vault, limits: Limits = Limits(), serving: Bool = true) throws {
        try self.init(vault: vault, limits: limits, serving: serving, identities: [])
    }

    /// A receiver as above that also takes batches sealed to one of `identities`.
    package convenience init(
        vault: Vault, limits: Limits = Limits(), serving: Bool = true, identities: [AgeIdentity],
        requireSealed: Bool = false
    ) throws {
        precondition(!requireSealed || !identities.isEmpty, "internal error: sealed only, with no identity")
        let lock = serving ? try vault.lockReceiver() : nil
        try vault.recoverInterruptedIntake()
        guard let identity = try vault.receiverIdentity(create: true) else {
            throw VaultError(.internal, "no receiver key was made")
        }
        let projected = try Self.project(vault)
        if !projected.problems.isEmpty { throw Self.untrusted(projected.problems) }
        self.init(
            vault: vault, identity: identity, limits: limits, identities: identities, requireSealed: requireSealed,
            lock: lock, shared: nil, state: projected)
    }

    private init(
        vault: Vault, identity: ReceiverIdentity, limits: Limits, identities: [AgeIdentity], requireSealed: Bool,
        lock: OpenFile?, shared: SharedReceiverLog?, state: State
    ) {
        self.vault = vault
        self.identity = identity
        self.limits = limits
        self.identities = identities
        self.requireSealed = requireSealed
        self.lock = lock
        self.shared = shared
        self.state = Mutex(state)
    }

    /// A receiver of a remote vault that other receivers may share: its key, stations and
    /// batches are the store's (`SharedReceiverLog`); its key is made there when the store has
    /// none. Any number of receivers may serve one store at once.
    package static func sharing(
        _ log: SharedReceiverLog, limits: Limits = Limits(), identities: [AgeIdentity] = [],
        requireSealed: Bool = false
    ) async throws -> Receiver {
        precondition(!requireSealed || !identities.isEmpty, "internal error: sealed only, with no identity")
        guard let identity = try await log.identity(create: true) else {
            throw VaultError(.internal, "no receiver key was made")
        }
        return Receiver(
            vault: log.vault, identity: identity, limits: limits, identities: identities, requireSealed: requireSealed,
            lock: nil, shared: log, state: Self.project(log))
    }

    /// Where the stations and batches are recorded, for messages: the vault, or the store's log.
    package var sharedLog: SharedReceiverLog? { shared }

    /// The refusal to serve from a history that does not verify.
    static func untrusted(_ problems: [String]) -> VaultError {
        VaultError(
            .vaultDamaged,
            "the receiver's history has findings (\(problems.joined(separator: ", "))): its stations and batches "
                + "cannot be trusted until a password holder has audited the vault and accepted what it found")
    }

    /// Reads the stations and batches again when the history changed since they were read (a
    /// station added or removed by another command while the receiver runs), keeping the
    /// counters of this run.
    private func refresh() async throws {
        if let shared {
            // The log only grows: its new entries are applied to what was read before.
            try await shared.catchUp()
            let entries = shared.entries
            state.withLock { s in
                let known = s.head?.count ?? 0
                guard entries.count > known else { return }
                Self.apply(entries[known...].lazy.map { ($0.operation, $0.detail) }, to: &s)
                s.head = HistoryHead(count: entries.count, tag: [])
            }
            return
        }
        let head = vault.storedHead()
        guard head != state.withLock({ $0.head }) else { return }
        let fresh = try Self.project(vault)
        state.withLock { s in
            var stations = fresh.stations
            for (name, old) in s.stations {
                guard var station = stations[name], station.tokenDigest == old.tokenDigest else { continue }
                (station.batches, station.documents, station.bytes) = (old.batches, old.documents, old.bytes)
                (station.refusals, station.lastSeenMillis) = (old.refusals, old.lastSeenMillis)
                station.lastRefusal = old.lastRefusal
                stations[name] = station
            }
            s.stations = stations
            s.taken = fresh.taken
            s.removed = fresh.removed
            s.alerted = fresh.alerted
            s.head = fresh.head
            s.problems = fresh.problems
        }
    }

    /// The stations and batches the history records.
    private static func project(_ vault: Vault) throws -> State {
        let scan = try vault.settledHistory()
        var s = project(scan.records.lazy.filter { $0.1.outcome == .ok }.map { ($0.1.operation, $0.1.detail) })
        s.head = vault.storedHead()
        s.problems = Array(Set((scan.findings + scan.noted).map(\.code.rawValue))).sorted()
        return s
    }

    /// The stations and batches the store's receivers' log records (as far as it was read).
    private static func project(_ log: SharedReceiverLog) -> State {
        let entries = log.entries
        var s = project(entries.lazy.map { ($0.operation, $0.detail) })
        // The log's length stands for a head: the projection is of that many entries.
        s.head = HistoryHead(count: entries.count, tag: [])
        return s
    }

    /// The stations and batches records (operation, detail) say, in order.
    private static func project(_ records: some Sequence<(HistoryRecord.Operation, String?)>) -> State {
        var s = State()
        apply(records, to: &s)
        return s
    }

    /// Applies what records (operation, detail) say, in order, to `s`.
    private static func apply(_ records: some Sequence<(HistoryRecord.Operation, String?)>, to s: inout State) {
        for (operation, detail) in records {
            switch operation {
            case .station:
                guard let change = StationChange(detail: detail) else { continue }
                switch change.action {
                case .add:
                    if let digest = change.token.flatMap(Hex.decode) {
                        s.stations[change.name] = Station(name: change.name, tokenDigest: digest)
                    }
                    s.alerted[change.name] = nil
                case .remove:
                    if let gone = s.stations[change.name] { s.removed[gone.tokenDigest] = change.name }
                    s.stations[change.name] = nil
                    s.alerted[change.name] = nil
                case .alert:
                    if let reason = change.reason { s.alerted[change.name, default: []].insert(reason) }
                }
            case .receive:
                guard let batch = ReceivedBatch(detail: detail), let sha = Hex.decode(batch.payloadSHA256)
                else { continue }
                s.taken[BatchKey(station: batch.station, key: batch.batch)] = Taken(
                    payloadSHA256: sha, answer: Array(batch.answer.utf8), sealed: batch.sealed == true,
                    proof: batch.proof.flatMap(Hex.decode))
                if let head = batch.head.flatMap(HistoryHead.init) { s.stations[batch.station]?.lastHead = head }
                s.alerted[batch.station] = nil
            default: continue
            }
        }
    }

    // MARK: Stations

    /// The stations, by name.
    public var stations: [Station] { state.withLock { $0.stations.values.sorted { $0.name < $1.name } } }

    /// Adds a station: records its token's keyed hash in the history.
    /// - Returns: the token, which nothing keeps: the caller shows it once.
    /// - Throws: a `VaultError`: `already-exists` when the name is taken, `usage` for a name
    ///   that is not 1–64 letters, digits, `.`, `_` or `-`.
    public func addStation(_ name: String) async throws -> String {
        guard Self.isStationName(name) else {
            throw VaultError(.usage, "a station's name is 1 to 64 letters, digits, '.', '_' or '-'")
        }
        let token = ReceiverIdentity.newToken()
        let digest = identity.tokenDigest(token)
        try await record(StationChange(action: .add, name: name, token: Hex.encode(digest))) {
            guard $0.stations[name] == nil else {
                throw VaultError(.alreadyExists, "there is already a station named '\(name)'")
            }
        }
        state.withLock { $0.stations[name] = Station(name: name, tokenDigest: digest) }
        return token
    }

    /// Removes a station: its token is refused from now on.
    public func removeStation(_ name: String) async throws {
        try await record(StationChange(action: .remove, name: name)) {
            guard $0.stations[name] != nil else { throw VaultError(.notFound, "there is no station named '\(name)'") }
        }
        _ = state.withLock { $0.stations.removeValue(forKey: name) }
    }

    /// Whether `name` may name a station.
    package static func isStationName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { $0 < 0x80 && ($0.isASCIIAlphanumeric || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D) }
    }

    /// Records `change` when `check` passes on what is recorded: in the vault's history, or, for
    /// a shared store, in its log (read again and checked again when another receiver appended
    /// first).
    private func record(_ change: StationChange, check: (State) throws -> Void = { _ in }) async throws {
        let detail = change.detail
        guard let shared else {
            try check(state.withLock { $0 })
            _ = try vault.appendToHistory(HistoryRecord(.station, detail: detail))
            return
        }
        while true {
            try await refresh()
            try check(state.withLock { $0 })
            if try await shared.append(.station, detail: detail) { return }
        }
    }

    /// The station whose token `authorization` (`Bearer <token>`) carries, or a refusal: 401,
    /// or 429 for an address that failed too often in the last minute. Tokens are compared by
    /// their keyed hashes, in constant time, against every station.
    package func authenticate(
        _ authorization: String?, from address: String, now: Date = Date()
    ) async throws(Refusal)
        -> String
    {
        let limit = limits.failedAuthenticationsPerMinute
        let blocked = state.withLock { s -> Bool in
            guard let f = s.failures[address] else { return false }
            if now.timeIntervalSince(f.since) >= 60 {
                s.failures[address] = nil
                return false
            }
            return f.count >= limit
        }
        if blocked {
            throw Refusal(429, "too-many-failures", "too many failed authentications; wait a minute", retryAfter: 60)
        }
        do { try await refresh() } catch {
            // Said in the receiver's log (the station only learns that it cannot).
            if shared != nil { VaultNotices.post("the receivers' log cannot be read: \(error)") }
            throw Refusal(503, "history-unreadable", "the receiver cannot read its history", retryAfter: 5)
        }
        if !state.withLock({ $0.problems.isEmpty }) {
            throw Refusal(
                503, "history-damaged", "the receiver's history does not verify; it takes nothing until it does")
        }
        var token: String?
        if let authorization, authorization.utf8.count <= 512, authorization.hasPrefix("Bearer ") {
            token = String(authorization.dropFirst(7))
        }
        let digest = identity.tokenDigest(token ?? "")
        let (found, removed) = state.withLock { s -> (String?, String?) in
            var found: String?
            for station in s.stations.values where Self.constantTimeEqual(station.tokenDigest, digest) {
                found = station.name
            }
            if found == nil, token != nil || authorization != nil {
                let f = s.failures[address] ?? (0, now)
                s.failures[address] = (f.count + 1, f.since)
                if s.failures.count > 10_000 {
                    s.failures = s.failures.filter { now.timeIntervalSince($0.value.since) < 60 }
                }
            }
            return (found, found == nil ? s.removed[digest] : nil)
        }
        if let removed, token != nil {
            var r = Refusal(
                401, "station-removed",
                "this station was removed at the back office; it must be added again and its new token used")
            r.detail = "the token of removed station '\(removed)' was used"
            throw r
        }
        guard let found, token != nil else {
            throw Refusal(401, "unauthorized", "a station's token is needed: Authorization: Bearer <token>")
        }
        return found
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var d: UInt8 = 0
        for i in a.indices { d |= a[i] ^ b[i] }
        return d == 0
    }

    // MARK: Batches

    /// What the receiver answers a batch with: 200 and the receipt (`duplicate` when it was
    /// taken before), or a refusal.
    package struct Answer: Sendable {
        /// The HTTP status.
        package var status: Int
        /// The JSON body.
        package var body: [UInt8]
        /// For the log: the documents and bytes taken, and whether it was a resend.
        package var documents = 0
        package var bytes: UInt64 = 0
        package var duplicate = false
        /// Whether its documents came sealed (age files to the office's recipients).
        package var sealed = false
    }

    /// True for an `Idempotency-Key` a batch may have: 1–256 visible ASCII characters (no
    /// space, so that the log's `batch=` field cannot imitate others).
    package static func isBatchKey(_ key: String) -> Bool {
        (1...256).contains(key.utf8.count) && key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
    }

    /// Starts taking a batch: checks the station's head and the batch key, and returns the
    /// intake to feed the body to. A batch already taken gives an intake that only hashes the
    /// body (to answer the same receipt, or refuse a different payload under the same key).
    /// - Parameter paced: refuse a body that arrives slower than ``Limits/minimumBytesPerSecond``
    ///   (a request's body; not a tus upload, whose chunks may come hours apart).
    package func begin(
        station: String, key: String?, head: String?, contentType: String?, contentLength: UInt64?,
        paced: Bool = true, now: Date = Date()
    ) async throws(Refusal) -> BatchIntake {
        guard let key, Self.isBatchKey(key) else {
            throw Refusal(
                400, "idempotency-key-missing", "a batch needs an Idempotency-Key of 1–256 visible characters")
        }
        if let contentLength, contentLength > limits.bytes {
            throw Refusal(
                413, "too-large", "the batch is \(contentLength) bytes; this receiver takes at most \(limits.bytes)")
        }
        var stationHead: HistoryHead?
        if let head {
            guard let h = HistoryHead(head) else {
                throw Refusal(400, "head-malformed", "X-Vault-Log-Head is not <count>-<tag>")
            }
            stationHead = h
        }
        let batchKey = BatchKey(station: station, key: key)
        let (taken, busy, closing, known) = state.withLock { s in
            (s.taken[batchKey], s.inFlight[batchKey] != nil, s.closing, s.stations[station]?.lastHead)
        }
        if closing { throw Refusal(503, "shutting-down", "the receiver is shutting down; send again", retryAfter: 5) }
        if busy {
            throw Refusal(503, "batch-in-progress", "this batch is being received on another connection", retryAfter: 5)
        }
        if taken == nil, let stationHead, let known, let reason = Self.headProblem(stationHead, known: known) {
            // Recorded once per station and reason until it sends a batch that is taken: a
            // station that keeps sending heads, even different ones, does not grow the history.
            if state.withLock({ $0.alerted[station]?.contains(reason) != true }) {
                try? await record(
                    StationChange(
                        action: .alert, name: station, head: stationHead.description, knownHead: known.description,
                        reason: reason))
                state.withLock { _ = $0.alerted[station, default: []].insert(reason) }
            }
            throw Refusal(
                409, "station-\(reason)",
                reason == "rolled-back"
                    ? "the station's history is at \(stationHead), behind \(known) that it sent before: "
                        + "its vault was rolled back"
                    : "the station's history \(stationHead) forks from \(known) that it sent before")
        }
        let full = state.withLock { s -> Bool in
            if paced, s.inFlight.values.filter({ $0 }).count >= limits.concurrentBatches { return true }
            s.inFlight[batchKey] = paced
            return false
        }
        if full {
            throw Refusal(503, "busy", "the receiver is taking as many batches as it may; send again", retryAfter: 5)
        }
        do {
            return try BatchIntake(
                receiver: self, station: station, key: key, head: stationHead, contentType: contentType,
                taken: taken, paced: paced, now: now,
                done: { [weak self] in self?.state.withLock { _ = $0.inFlight.removeValue(forKey: batchKey) } })
        } catch {
            state.withLock { _ = $0.inFlight.removeValue(forKey: batchKey) }
            throw Refusal.of(error, document: nil)
        }
    }

    /// Why a station's `head` cannot follow `known`, the head it sent before: `rolled-back`
    /// (fewer records) or `forked` (as many, another last record); nil when it can.
    package static func headProblem(_ head: HistoryHead, known: HistoryHead) -> String? {
        if head.count < known.count { return "rolled-back" }
        if head.count == known.count && head.tag != known.tag { return "forked" }
        return nil
    }

    /// Records a batch an intake committed (and its station's head) in memory.
    fileprivate func taken(
        station: String, key: String, head: HistoryHead?, batch: Taken, documents: Int, bytes: UInt64, now: Date
    ) {
        state.withLock { s in
            s.taken[BatchKey(station: station, key: key)] = batch
            if let head { s.stations[station]?.lastHead = head }
            s.stations[station]?.batches += 1
            s.stations[station]?.documents += documents
            s.stations[station]?.bytes += bytes
            s.stations[station]?.lastSeenMillis = Int64(now.timeIntervalSince1970 * 1000)
            s.alerted[station] = nil
            s.diskFull = nil
        }
    }

    /// What the records say of a batch and its station now (after reading them again): the batch
    /// as taken (by any receiver of a shared store), and the station's last head.
    fileprivate func settled(
        station: String, key: String
    ) async throws -> (taken: Taken?, head: HistoryHead?) {
        try await refresh()
        return state.withLock { s in (s.taken[BatchKey(station: station, key: key)], s.stations[station]?.lastHead) }
    }

    /// Counts a refusal as a failed authentication of `address`: a station refused for its
    /// history (rolled back, forked) is slowed down like a wrong token, so its requests cannot
    /// come as fast as it sends them.
    package func countFailure(from address: String, now: Date = Date()) {
        state.withLock { s in
            let f = s.failures[address] ?? (0, now)
            s.failures[address] = (f.count + 1, f.since)
        }
    }

    /// Whether a refusal of this code counts against the sender's address
    /// (``countFailure(from:now:)``): a history that went back or forked.
    package static func countsAsFailure(_ code: String) -> Bool {
        code == "station-rolled-back" || code == "station-forked"
    }

    /// Counts a refusal against a station, which was heard from all the same.
    package func refused(station: String, code: String, now: Date = Date()) {
        let millis = Int64(now.timeIntervalSince1970 * 1000)
        state.withLock { s in
            guard s.stations[station] != nil else { return }
            s.stations[station]?.refusals += 1
            s.stations[station]?.lastRefusal = LastRefusal(millis: millis, code: code)
            s.stations[station]?.lastSeenMillis = millis
        }
    }

    /// A batch found the disk full (``Refusal/diskFull(_:)``): `/healthz` says so until a batch
    /// is stored again or 64 MiB more are free.
    package func noteDiskFull(now: Date = Date()) {
        let free = FileSystem.freeSpace(at: vault.store.root) ?? 0
        state.withLock { $0.diskFull = (now, free) }
    }

    /// Nil when the receiver can take batches, else why not (`disk-full`).
    package var degraded: String? {
        guard let full = state.withLock({ $0.diskFull }) else { return nil }
        if let free = FileSystem.freeSpace(at: vault.store.root), free >= full.free &+ (64 << 20) {
            state.withLock { $0.diskFull = nil }
            return nil
        }
        return "disk-full"
    }

    /// From now on, new batches are answered 503; those in flight finish.
    public func close() { state.withLock { $0.closing = true } }

    /// The receiver's Ed25519 public key (32 bytes): stations check receipts with it.
    public var publicKey: [UInt8] { identity.publicKey }

    /// Batches being received now.
    public var batchesInFlight: Int { state.withLock { $0.inFlight.count } }
}

/// One batch being received: fed the body as it arrives (``read(_:)``), then ``finish()``
/// commits it whole and signs its receipt. Any error, or going away unfinished, keeps nothing.
package final class BatchIntake {
    private let receiver: Receiver
    private let station: String
    private let key: String
    private let head: HistoryHead?
    private var reader: BatchReader
    private let intake: IntakeBatch?
    private let taken: Receiver.Taken?
    private let started: Date
    private let paced: Bool
    private let done: () -> Void
    private var hasher = SHA256()
    private var received: UInt64 = 0
    private var documents: [Receipt.Document] = []
    private var begun = 0
    private var closed = false

    fileprivate init(
        receiver: Receiver, station: String, key: String, head: HistoryHead?, contentType: String?,
        taken: Receiver.Taken?, paced: Bool, now: Date, done: @escaping () -> Void
    ) throws {
        self.paced = paced
        reader = try BatchReader(
            contentType: contentType, maxDocuments: receiver.limits.documents, identities: receiver.identities,
            requireSealed: receiver.requireSealed)
        self.receiver = receiver
        self.station = station
        self.key = key
        self.head = head
        self.taken = taken
        self.started = now
        self.done = done
        intake = taken == nil ? IntakeBatch(vault: receiver.vault) : nil
    }

    deinit { close() }

    private func close() {
        guard !closed else { return }
        closed = true
        intake?.discard()
        done()
    }

    /// How the batch came (`json`, `form`).
    package var wire: String { reader.wire.rawValue }

    /// Whether the documents read so far came sealed (a sealed batch's every document is).
    package var sealed: Bool { !reader.sealedFileKeys.isEmpty }

    /// The document being read (from 1), for a refusal.
    private var document: Int? { begun == 0 ? nil : begun }

    /// Reads the next piece of the body.
    /// - Throws: a ``Refusal`` (the batch is then dropped).
    package func read(_ piece: UnsafeRawBufferPointer, now: Date = Date()) throws(Refusal) {
        do {
            received += UInt64(piece.count)
            if received > receiver.limits.bytes {
                throw Refusal(
                    413, "too-large", "the batch is over \(receiver.limits.bytes) bytes, the most this receiver takes")
            }
            let seconds = now.timeIntervalSince(started)
            if paced, seconds > receiver.limits.graceSeconds,
                Double(received) / seconds < Double(receiver.limits.minimumBytesPerSecond)
            {
                throw Refusal(
                    408, "too-slow", "the body arrives at under \(receiver.limits.minimumBytesPerSecond) bytes/s")
            }
            hasher.update(bufferPointer: piece)
            // A batch taken before is read all the same (not stored): a resend must hold the
            // same documents.
            try reader.read(piece) { event in
                switch event {
                case .begin(let index, let header):
                    begun = index + 1
                    try checkProof(header, index: index)
                    // Names cross as relative paths (DocumentName): a back office writes them out as
                    // files, under a folder a name must never leave.
                    if let name = header.name, let why = DocumentName.problem(name) {
                        throw VaultError(.headerMalformed, "document \(index + 1): its name \(why)")
                    }
                    try intake?.begin(
                        name: DocumentName.normalized(header.name ?? "document-\(index + 1)"),
                        contentType: header.contentType ?? "application/octet-stream", tags: header.tags)
                    pendingID = header.id
                case .data(let bytes):
                    try intake?.write(bytes)
                case .end(_, let size, let sha):
                    guard let intake else {
                        documents.append(
                            Receipt.Document(
                                id: pendingID ?? DocumentID(bytes: [UInt8](repeating: 0, count: 16)), sha256: sha,
                                size: size))
                        return
                    }
                    let record = try intake.end()
                    guard record.metadata.size == size, record.metadata.sha256 == sha else {
                        throw VaultError(.internal, "the stored document differs from what was read")
                    }
                    documents.append(Receipt.Document(id: pendingID ?? record.id, sha256: sha, size: size))
                }
            }
        } catch {
            close()
            throw Refusal.of(error, document: document)
        }
    }

    private var pendingID: DocumentID?
    /// The proof the body's sealed documents carry (the same in each).
    private var proof: [UInt8]?

    /// The refusal of a resend that is not the batch taken under its key: the same for every
    /// kind of difference, so that what differs is not told.
    private static let reused = Refusal(
        422, "idempotency-key-reused",
        "this Idempotency-Key was used for another payload; a resend must be the same bytes")

    /// A sealed batch's proof is the same in every document. A resend of a batch that came
    /// sealed must come sealed, and with the proof it came with, and a resend with a proof must
    /// be of a batch that came with the same (batches of stations from before the proof, with
    /// none, are still compared by documents): else it is refused here, at
    /// its first document, before any of its data is read, so that a hop's guess of a sealed
    /// batch's documents is refused the same way whether it is right or wrong (docs/SECURITY.md,
    /// "A resend is the station's").
    private func checkProof(_ header: PayloadReader.Header, index: Int) throws {
        if index == 0 {
            proof = header.proof
        } else if header.proof != proof {
            throw VaultError(.headerMalformed, "document \(index + 1) carries another batch proof than the first")
        }
        guard let taken else { return }
        // Whichever came first: a hop that holds the station's batch back and posts its own guess
        // under the key stores a batch without the proof, and the station's batch, come later,
        // must not be compared with it by documents (that answered right and wrong guesses apart).
        if taken.sealed && !header.sealed { throw Self.reused }
        if header.proof != taken.proof { throw Self.reused }
    }

    /// Whether the body read holds the documents (SHA-256 and size, in order) of the receipt
    /// `answer`.
    private func sameDocuments(as answer: [UInt8]) -> Bool {
        guard (try? reader.finish()) != nil, let before = try? Receipt.answer(answer).receipt.documents,
            before.count == documents.count
        else { return false }
        return zip(before, documents).allSatisfy { $0.sha256 == $1.sha256 && $0.size == $1.size }
    }

    /// The answer to a batch taken before: its receipt again, when this body holds the same
    /// bytes or (a form's boundary differs from one send to the next) the same documents in the
    /// same order.
    private func resent(_ taken: Receiver.Taken, sha: [UInt8]) throws(Refusal) -> Receiver.Answer {
        guard taken.payloadSHA256 == sha || sameDocuments(as: taken.answer), !taken.sealed || sealed,
            taken.proof == nil || taken.proof == proof
        else { throw Self.reused }
        return Receiver.Answer(status: 200, body: try sealedForStation(taken.answer), duplicate: true, sealed: sealed)
    }

    /// Ends the body: checks its end, commits the batch and signs the receipt.
    package func finish(now: Date = Date()) async throws(Refusal) -> Receiver.Answer {
        defer { close() }
        let sha = Array(hasher.finalize())
        if let taken {
            let answer = try resent(taken, sha: sha)
            if let shared = receiver.sharedLog { await shared.sweep(station: station, batch: key) }
            return answer
        }
        guard let intake else { throw Refusal(500, "internal", "no intake") }
        do {
            try reader.finish()
            guard !documents.isEmpty else { throw Refusal(400, "empty-batch", "the batch has no documents") }
            let receipt = Receipt(
                batch: key, documents: documents, payloadSHA256: sha, receiver: receiver.vault.id, station: station,
                timeMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))
            let answer = receipt.signed(with: receiver.identity.signingKey)
            let detail = ReceivedBatch(
                station: station, batch: key, head: head?.description, wire: reader.wire.rawValue,
                payloadSHA256: Hex.encode(sha), answer: String(decoding: answer, as: UTF8.self),
                sealed: sealed ? true : nil, proof: proof.map(Hex.encode))
            if let shared = receiver.sharedLog {
                if let earlier = try await commit(intake, to: shared, detail: detail.detail, now: now) {
                    return try resent(earlier, sha: sha)
                }
            } else {
                try intake.commit(HistoryRecord(payload: detail, now: now))
            }
            receiver.taken(
                station: station, key: key, head: head,
                batch: .init(payloadSHA256: sha, answer: answer, sealed: sealed, proof: proof),
                documents: documents.count, bytes: received, now: now)
            return Receiver.Answer(
                status: 200, body: try sealedForStation(answer), documents: documents.count, bytes: received,
                sealed: sealed)
        } catch {
            throw Refusal.of(error, document: document)
        }
    }

    /// Commits the batch to a shared store: its envelopes are noted as pending, sent, and then
    /// named by an entry appended to the receivers' log (the commit point), unless, when this
    /// receiver reads the log again, another receiver took the batch first (its envelopes are
    /// then taken back, and its receipt returned) or the station's head moved where this batch's
    /// cannot follow (409).
    /// - Returns: the batch as another receiver took it, or nil when this one committed it.
    private func commit(
        _ intake: IntakeBatch, to shared: SharedReceiverLog, detail: String, now: Date
    ) async throws -> Receiver.Taken? {
        let staged = intake.stagedEnvelopes
        let ids = staged.map(\.record.id)
        let note = try await shared.announce(station: station, batch: key, documents: ids)
        // Once an entry was sent, a failure leaves its outcome unknown (the PUT may have landed
        // and its answer been lost): the envelopes and the note then stay, and whoever settles
        // the batch next keeps what an entry names and deletes the rest.
        var entrySent = false
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = staged.makeIterator()
                func launch() -> Bool {
                    guard let (path, record) = next.next() else { return false }
                    group.addTask { try await shared.send(envelope: path, id: record.id) }
                    return true
                }
                for _ in 0..<4 where launch() {}
                while try await group.next() != nil { _ = launch() }
            }
            while true {
                let current = try await receiver.settled(station: station, key: key)
                if let taken = current.taken {
                    await shared.withdraw(ids, note: note)
                    await shared.sweep(station: station, batch: key)
                    return taken
                }
                if let head, let known = current.head, let reason = Receiver.headProblem(head, known: known) {
                    throw Refusal(
                        409, "station-\(reason)",
                        "the station's history \(head) cannot follow \(known), which another receiver took meanwhile")
                }
                entrySent = true
                if try await shared.append(.receive, detail: detail, documents: ids, now: now) { break }
            }
        } catch {
            if !entrySent { await shared.withdraw(ids, note: note) }
            throw error
        }
        await shared.sweep(station: station, batch: key)
        intake.discard()
        return nil
    }

    /// The answer as the station gets it: for a sealed batch, sealed under a key from its
    /// documents' file keys (``SealedAnswer``), so no hop that sees the answer reads the
    /// receipt's digests; a plaintext batch's answer as it is.
    private func sealedForStation(_ answer: [UInt8]) throws(Refusal) -> [UInt8] {
        let keys = reader.sealedFileKeys
        guard !keys.isEmpty else { return answer }
        do {
            return try SealedAnswer.seal(answer, key: SealedAnswer.key(fileKeys: keys, batch: key))
        } catch {
            throw Refusal(500, "internal", "the receipt could not be sealed")
        }
    }
}
