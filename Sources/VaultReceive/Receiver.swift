import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import VaultCore
import VaultRemote

/// The back office's side of a delivery: stations known by their tokens, batches taken whole
/// into the receiver's own vault and answered with a signed receipt (docs/FORMAT.md), a
/// resent batch (the same `Idempotency-Key`) answered again without storing anything twice,
/// and each station's history head followed, so a station rolled back or forked is refused.
///
/// Everything it keeps is a projection of the office's records (`station`, `receive`,
/// `receiver`), read from its home (`OfficeHome`) as it starts and again before each batch:
/// a vault folder's history, or, for receivers that share a remote vault, the store's
/// receivers' log, appended to by conditional writes so they share stations, batches and heads.
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

    /// The office's records: where they are kept.
    package let home: any OfficeHome

    private struct BatchKey: Hashable {
        var station: String
        var key: String
    }

    /// A batch taken: what a resend under its key is compared with.
    struct Taken {
        var payloadSHA256: [UInt8]
        var answer: [UInt8]
        /// Whether it came sealed: a resend must too.
        var sealed = false
        /// The proof its sealed documents carried: a resend must carry the same.
        var proof: [UInt8]?

        /// The batch a `receive` record names; nil for one whose digest is not hex.
        init?(_ batch: ReceivedBatch) {
            guard let sha = Hex.decode(batch.payloadSHA256) else { return nil }
            payloadSHA256 = sha
            answer = Array(batch.answer.utf8)
            sealed = batch.sealed == true
            proof = batch.proof.flatMap(Hex.decode)
        }

        init(payloadSHA256: [UInt8], answer: [UInt8], sealed: Bool, proof: [UInt8]?) {
            (self.payloadSHA256, self.answer, self.sealed, self.proof) = (payloadSHA256, answer, sealed, proof)
        }
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
        /// Names whose removed token's use is recorded since the name was last added.
        var removedTokenAlerted: Set<String> = []
        /// The history's head when the stations and batches were last read from it.
        var head: HistoryHead?
        /// What is wrong with the history (finding codes): while anything is, no station is
        /// trusted (a cut log could bring back a removed station or forget a batch).
        var problems: [String] = []
        /// What the records say the office took and heard, kept with them (the pages and the
        /// documents' queries read it, not the whole history, until the records change).
        var book = OfficeBook([])
    }

    /// The receiver's vault.
    public var vault: Vault { home.vault }
    /// Its signing key.
    package let identity: ReceiverIdentity
    /// Its bounds.
    public let limits: Limits
    /// The age identities that open sealed batches (none: sealed batches are refused, 415).
    package let identities: [AgeIdentity]
    /// Plaintext batches are refused (415): documents reach this receiver sealed only.
    package let requireSealed: Bool
    private let state: Mutex<State>
    /// Every tag's documents, as of the records up to `position` (``documents(tagged:in:)``).
    private let tagMap = Mutex<(position: Int, ids: [String: Set<DocumentID>])?>(nil)
    /// Held while the receiver lives, for a home one receiver serves at a time.
    private let lock: OpenFile?

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
        // An office keeps what it receives as envelopes it opens; a capture-only station keeps
        // sealed files only (a blind receiver is not built yet).
        if vault.capturesOnly {
            throw CapturedDocument.refusal(
                "it cannot receive batches", hint: "run vault receive on the office's own vault")
        }
        let home = FolderHome(vault: vault)
        let lock = serving ? try home.lockForServing() : nil
        try vault.recoverInterruptedIntake()
        guard let identity = try vault.receiverIdentity(create: true) else {
            throw VaultError(.internal, "no receiver key was made")
        }
        try self.init(
            home: home, identity: identity, limits: limits, identities: identities, requireSealed: requireSealed,
            lock: lock, first: try home.read())
    }

    /// A receiver of the office kept in `home`: its key (made there when it has none), stations
    /// and batches are the home's. Any number of receivers may serve a store's home at once.
    package static func serving(
        _ home: any OfficeHome, limits: Limits = Limits(), serving: Bool = true, identities: [AgeIdentity] = [],
        requireSealed: Bool = false
    ) async throws -> Receiver {
        if let folder = home as? FolderHome {
            return try Receiver(
                vault: folder.vault, limits: limits, serving: serving, identities: identities,
                requireSealed: requireSealed)
        }
        let lock = serving ? try home.lockForServing() : nil
        guard let identity = try await home.identity(create: true) else {
            throw VaultError(.internal, "no receiver key was made")
        }
        return try Receiver(
            home: home, identity: identity, limits: limits, identities: identities, requireSealed: requireSealed,
            lock: lock, first: try await home.changes(since: nil))
    }

    private init(
        home: any OfficeHome, identity: ReceiverIdentity, limits: Limits, identities: [AgeIdentity],
        requireSealed: Bool, lock: OpenFile?, first: OfficeChange?
    ) throws {
        var state = State()
        if let first { Self.take(first, into: &state) }
        if !state.problems.isEmpty { throw Self.untrusted(state.problems) }
        self.home = home
        self.identity = identity
        self.limits = limits
        self.identities = identities
        self.requireSealed = requireSealed
        self.lock = lock
        self.state = Mutex(state)
    }

    /// The refusal to serve from a history that does not verify.
    package static func untrusted(_ problems: [String]) -> VaultError {
        VaultError(
            .vaultDamaged,
            "the receiver's history has findings (\(problems.joined(separator: ", "))): its stations and batches "
                + "cannot be trusted until a password holder has audited the vault and accepted what it found")
    }

    /// Reads the stations and batches again when the office's records changed since they were
    /// read (a station added or removed by another command or receiver while this one runs),
    /// keeping the counters of this run.
    private func refresh() async throws {
        let head = state.withLock { $0.head }
        guard let change = try await home.changes(since: head) else { return }
        state.withLock { Self.take(change, into: &$0) }
    }

    /// Takes what changed in the records into `s`: new records are applied to what was read; records
    /// read again whole replace it, keeping the counters of this run for stations that are the same.
    private static func take(_ change: OfficeChange, into s: inout State) {
        switch change {
        case .appended(let records, let head):
            apply(records, to: &s)
            s.head = head
        case .reread(let records, let head, let problems):
            var fresh = State()
            apply(records, to: &fresh)
            for (name, old) in s.stations {
                guard var station = fresh.stations[name], station.tokenDigest == old.tokenDigest else { continue }
                (station.batches, station.documents, station.bytes) = (old.batches, old.documents, old.bytes)
                (station.refusals, station.lastSeenMillis) = (old.refusals, old.lastSeenMillis)
                if let last = old.lastRefusal, station.lastRefusal.map({ $0.millis < last.millis }) ?? true {
                    station.lastRefusal = last
                }
                fresh.stations[name] = station
            }
            s.stations = fresh.stations
            s.taken = fresh.taken
            s.removed = fresh.removed
            s.alerted = fresh.alerted
            s.removedTokenAlerted = fresh.removedTokenAlerted
            s.book = fresh.book
            s.head = head
            s.problems = problems
        }
    }

    /// Applies what `records` say, in order, to `s`.
    private static func apply(_ records: [OfficeRecord], to s: inout State) {
        s.book.apply(records)
        for record in records {
            switch record.operation {
            case .station:
                guard let change = record.payload(StationChange.self) else { continue }
                switch change.action {
                case .add:
                    if let digest = change.token.flatMap(Hex.decode) {
                        s.stations[change.name] = Station(name: change.name, tokenDigest: digest)
                    }
                    s.alerted[change.name] = nil
                    s.removedTokenAlerted.remove(change.name)
                case .remove:
                    if let gone = s.stations[change.name] { s.removed[gone.tokenDigest] = change.name }
                    s.stations[change.name] = nil
                    s.alerted[change.name] = nil
                case .alert where change.reason == Self.removedTokenUsed:
                    s.removedTokenAlerted.insert(change.name)
                case .alert:
                    if let reason = change.reason { s.alerted[change.name, default: []].insert(reason) }
                case .acknowledge:
                    continue
                case .refused:
                    guard let code = change.reason else { continue }
                    s.alerted[change.name, default: []].insert("refused " + code)
                    if s.stations[change.name]?.lastRefusal.map({ $0.millis <= record.timeMillis }) ?? true {
                        s.stations[change.name]?.lastRefusal = LastRefusal(millis: record.timeMillis, code: code)
                    }
                }
            case .receive:
                guard let batch = record.payload(ReceivedBatch.self), let taken = Taken(batch) else { continue }
                s.taken[BatchKey(station: batch.station, key: batch.batch)] = taken
                if let head = batch.head.flatMap(HistoryHead.init) { s.stations[batch.station]?.lastHead = head }
                s.alerted[batch.station] = nil
            default: continue
            }
        }
    }

    // MARK: Stations

    /// The stations, by name.
    public var stations: [Station] { state.withLock { $0.stations.values.sorted { $0.name < $1.name } } }

    /// What the office's records say it took and heard: as last read, with what was added to
    /// them since (read now).
    /// - Throws: ``VaultError/Code/vaultDamaged`` when they do not verify.
    package func book() async throws -> OfficeBook {
        try await refresh()
        return try state.withLock { s in
            if !s.problems.isEmpty { throw Self.untrusted(s.problems) }
            return s.book
        }
    }

    /// Adds a station: records its token's keyed hash in the history.
    /// - Returns: the token, which nothing keeps: the caller shows it once.
    /// - Throws: a `VaultError`: `already-exists` when the name is taken, `usage` for a name
    ///   that is not 1–64 letters, digits, `.`, `_` or `-`.
    public func addStation(_ name: String) async throws -> String {
        guard Self.isStationName(name) else {
            throw VaultError(
                .usage, "a station's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
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

    /// Whether `name` may name a station: 1–64 letters, digits, `.`, `_` or `-`, the first a
    /// letter or digit (so no station is named like the `-` the log gives a request no token
    /// identified).
    package static func isStationName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.first?.isASCIIAlphanumeric == true
            && name.utf8.allSatisfy { $0 < 0x80 && ($0.isASCIIAlphanumeric || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D) }
    }

    /// Records `change` in the office's records when `check` passes on what they say (read again,
    /// and checked again when another receiver appended first).
    private func record(_ change: StationChange, check: (State) throws -> Void = { _ in }) async throws {
        while true {
            try await refresh()
            try check(state.withLock { $0 })
            if try await home.append(.station, detail: change.detail) { return }
        }
    }

    /// The documents with tag `tag`, as the office's index says (each row authenticated): from a
    /// map of every tag kept with the records, followed batch by batch as they are taken, and
    /// made again from the index when anything else changed the documents (an `add`, a `tag`,
    /// a `remove`: ``OfficeBook/lastOtherChange``). What the documents page's tag filter reads,
    /// so that paging through a tag at 100,000 documents does not open each tagged row again.
    package func documents(tagged tag: String, in book: OfficeBook) async throws -> Set<DocumentID> {
        var map = tagMap.withLock { $0 }
        if let m = map, m.position <= book.position, book.lastOtherChange <= m.position {
            var ids = m.ids
            for b in book.batches.reversed() {
                guard b.recordPosition > m.position else { break }
                for d in b.documents {
                    guard let r = try await home.document(d.id)?.record else { continue }
                    for t in r.metadata.tags { ids[t, default: []].insert(d.id) }
                }
            }
            map = (book.position, ids)
        } else {
            var ids: [String: Set<DocumentID>] = [:]
            _ = try home.vault.forEachRecord { r in
                for t in r.metadata.tags { ids[t, default: []].insert(r.id) }
            }
            map = (book.position, ids)
        }
        tagMap.withLock { $0 = map }
        return map?.ids[tag] ?? []
    }

    /// Records that operator `name` saw alert `number` (its position among the office's records,
    /// ``OfficeBook/Notice/number``): it is no longer open.
    /// - Throws: ``VaultError/Code/notFound`` when there is no such alert.
    package func acknowledge(alert number: Int, by name: String) async throws {
        while true {
            let book = try await self.book()
            guard let notice = book.notices.first(where: { $0.number == number }) else {
                throw VaultError(.notFound, "there is no alert \(number)")
            }
            if notice.acknowledged != nil { return }
            let change = StationChange(
                action: .acknowledge, name: notice.station, reason: String(number), by: name)
            if try await home.append(.station, detail: change.detail) { return }
        }
    }

    /// Records that operator `name` downloaded `documents` from `address` (`via` a document's page
    /// or an archive): before the first byte is sent, so no download goes unrecorded.
    /// - Throws: when the record cannot be written (the download is then refused).
    package func recordDownload(
        _ documents: [HistoryRecord.Document], by name: String, from address: String, via: String
    ) async throws {
        let detail = DownloadRecord(operatorName: name, address: address, via: via).detail
        while true {
            try await refresh()
            if try await home.append(.download, detail: detail, documents: documents) { return }
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
            VaultNotices.post("\(home.recordsDescription) cannot be read: \(error)")
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
            await alertRemovedToken(removed)
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

    /// The reason of the alert recorded when a removed station's token is used.
    package static let removedTokenUsed = "removed-token-used"

    /// Records, once until the station is added again, that the token of removed station `name`
    /// was used: operators see it (pages, `station list`), and whoever holds the token was refused.
    private func alertRemovedToken(_ name: String) async {
        let first = state.withLock { $0.removedTokenAlerted.insert(name).inserted }
        guard first else { return }
        do {
            try await record(StationChange(action: .alert, name: name, reason: Self.removedTokenUsed))
        } catch {
            VaultNotices.post("the use of removed station \(name)'s token could not be recorded: \(error)")
        }
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
    /// - Parameter wire: how the batch came when not by the body's own shape (`tus`).
    package func begin(
        station: String, key: String?, head: String?, contentType: String?, contentLength: UInt64?,
        paced: Bool = true, wire: String? = nil, now: Date = Date()
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
            // Marked before it is recorded: requests at once record it once.
            if state.withLock({ $0.alerted[station, default: []].insert(reason).inserted }) {
                try? await record(
                    StationChange(
                        action: .alert, name: station, head: stationHead.description, knownHead: known.description,
                        reason: reason))
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
                taken: taken, paced: paced, wire: wire, now: now,
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
    func taken(
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
    func settled(
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

    /// Counts a refusal against a station, which was heard from all the same; a refusal of what
    /// the station sent (a 4xx, not the receiver's own state: busy, shutting down, out of
    /// space) is recorded, once per code until a batch of the station is taken, so operators
    /// and `station list` see it after a restart, and a station refused again and again does
    /// not grow the records.
    package func refused(station: String, code: String, status: Int, now: Date = Date()) async {
        let millis = Int64(now.timeIntervalSince1970 * 1000)
        let reason = "refused " + code
        let first = state.withLock { s -> Bool in
            guard s.stations[station] != nil else { return false }
            s.stations[station]?.refusals += 1
            s.stations[station]?.lastRefusal = LastRefusal(millis: millis, code: code)
            s.stations[station]?.lastSeenMillis = millis
            guard (400..<500).contains(status), status != 429, !Self.countsAsFailure(code),
                s.alerted[station]?.contains(reason) != true
            else { return false }
            s.alerted[station, default: []].insert(reason)
            return true
        }
        guard first else { return }
        do {
            try await record(StationChange(action: .refused, name: station, reason: code))
        } catch {
            VaultNotices.post("the refusal of station \(station)'s batch could not be recorded: \(error)")
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
