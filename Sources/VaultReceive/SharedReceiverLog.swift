import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import Synchronization
import VaultCore
import VaultRemote
import VaultS3

/// What receivers that take batches into one remote vault share through its store, beside the
/// documents (docs/FORMAT.md, "Receivers on a store"):
///
/// - `receivers/key.vlt`: the receivers' one signing key, sealed under the vault key (written
///   once, with `If-None-Match: *`), so a receipt is valid whichever receiver signed it;
/// - `receivers/log/<n>` (`n` in 12 digits, from 1): the log of stations added, removed and
///   alerted on, and of batches taken with their documents, receipts and station heads. Each
///   entry is sealed as a state file whose role is its own key, names the SHA-256 of the entry
///   before it, and is written with `If-None-Match: *`: of two receivers that append at once,
///   one gets `n` and the other reads it and decides again (the batch may now be taken, or the
///   station's head moved). This is what makes idempotency and heads shared.
/// - `receivers/pending/<batch>/<random>`: the envelopes a receiver is putting on the store for
///   a batch (sealed ids), from before the first is sent until its entry is appended. Whoever
///   settles that batch later (its commit, or a resend of it) deletes the envelopes such a note
///   names that no entry names: what a receiver killed mid-commit, or beaten to the batch by
///   another, left behind.
///
/// Every object here is sealed with its role naming the vault's location and its own key
/// (`s3://BUCKET/PREFIX/receivers/log/<n>`), so it opens only where it was written. The store
/// cannot forge, reorder, swap or move entries (each opens only as itself, in this vault at this
/// location, and chains to the one before), and a running receiver checks, with each read of
/// what is new, that the last entry it read is still there unchanged. A store can still hide the
/// newest entries from a receiver that never read them, as a rolled-back folder hides a local
/// history's newest records.
package final class SharedReceiverLog: Sendable {
    /// One entry of the log: what one record of a receiver's history says.
    package struct Entry: Codable, Sendable, Equatable {
        /// What happened (`receiver`, `station`, `receive`).
        package var operation: HistoryRecord.Operation
        /// The record's detail (`StationChange`, `ReceivedBatch`, `ReceiverKeyRecord`), as JSON.
        package var detail: String?
        /// The documents a `receive` entry took, by id (hex).
        package var documents: [String]
        /// The same documents with their names, SHA-256 and sizes, as a history record has them
        /// (entries written before this field have none: their documents are known by id only).
        package var files: [HistoryRecord.Document]?
        /// When (milliseconds since 1970).
        package var timeMillis: Int64
        /// The SHA-256 (hex) of the entry before it as stored ("" for the first).
        package var previous: String
    }

    private struct State {
        var entries: [Entry] = []
        var lastDigest: [UInt8] = []
        /// The key epoch of the last entry: an entry's is never lower than the one before it.
        var lastEpoch: UInt32 = 0
        /// Every document a `receive` entry names.
        var committed: Set<DocumentID> = []
    }

    /// The remote vault, unlocked (its key seals and opens what is here).
    package let vault: Vault
    package let client: any ObjectStore
    package let location: RemoteLocation
    package let policy: RetryPolicy
    private let state = Mutex(State())
    /// One append at a time from this process: its batches then contend for a position only with
    /// other receivers' (else every commit but one of those at once would lose a round).
    private let gate = AppendGate()

    /// The most bytes an entry, the key or a pending note may have.
    static let entryLimit = 1 << 20
    static let keyName = "receivers/key.vlt"
    static let contentType = "application/octet-stream"

    /// The log of the receivers of the remote vault `vault` (opened in place) at `location`.
    package init(vault: Vault, client: any ObjectStore, location: RemoteLocation, policy: RetryPolicy = .store) {
        self.vault = vault
        self.client = client
        self.location = location
        self.policy = policy
    }

    /// The key of entry `n` under the vault's prefix.
    static func entryName(_ n: Int) -> String { "receivers/log/" + zeroPadded(n, 12) }

    /// The role an object at `name` (under the prefix) is sealed with: its whole location, so
    /// one copied to another prefix or bucket does not open there.
    func role(_ name: String) -> String { "\(location)/\(name)" }

    /// The entries read so far, in order.
    package var entries: [Entry] { state.withLock { $0.entries } }

    /// The log's head as far as it was read, in a history head's form: `<entries>-<the first 16
    /// bytes of the last entry's SHA-256, hex>` (`0-` and 32 zeros for an empty log).
    package var head: String {
        state.withLock { s in
            let tag = s.lastDigest.isEmpty ? [UInt8](repeating: 0, count: 16) : Array(s.lastDigest.prefix(16))
            return "\(s.entries.count)-" + Hex.encode(tag)
        }
    }

    /// Whether an entry read so far names document `id` as taken.
    package func names(_ id: DocumentID) -> Bool { state.withLock { $0.committed.contains(id) } }

    /// Where the log is, for messages: `s3://BUCKET/PREFIX/receivers/log/`.
    package var logDescription: String { "\(location)/receivers/log/" }

    private func retrying<T>(_ body: () async throws -> T) async throws -> T {
        try await policy.run(isTransient: VaultError.isTransientStoreFailure, body)
    }

    /// The object at `name` (under the prefix), or nil when there is none.
    private func fetch(_ name: String) async throws -> [UInt8]? {
        do {
            return try await retrying {
                try await client.getObject(
                    bucket: location.bucket, key: location.key(name), range: nil, limit: Self.entryLimit)
            }
        } catch let e as VaultError where e.code == .notFound {
            return nil
        }
    }

    // MARK: The log

    /// Reads the entries other receivers appended since the last read, until the store has no
    /// next one (one GET answered 404 when nothing is new).
    /// - Returns: whether any entry was new.
    /// - Throws: ``VaultError/Code/vaultDamaged`` for an entry that does not open as itself or
    ///   does not follow the one before it.
    @discardableResult
    package func catchUp() async throws -> Bool {
        var changed = false
        while true {
            let (n, last) = state.withLock { ($0.entries.count + 1, $0.lastDigest) }
            guard let bytes = try await fetch(Self.entryName(n)) else {
                if !changed, n > 1 { try await checkUnchanged(n - 1, digest: last) }
                return changed
            }
            try apply(bytes, at: n)
            changed = true
        }
    }

    /// Fails unless entry `n` is still on the store as it was read (`digest`): an entry deleted
    /// or replaced after this receiver read it would let it miss what was written in its place.
    private func checkUnchanged(_ n: Int, digest: [UInt8]) async throws {
        let name = Self.entryName(n)
        guard let bytes = try await fetch(name) else {
            throw VaultError(
                .vaultDamaged, "\(location)/\(name) was deleted after this receiver read it: the receivers' log was cut"
            )
        }
        guard Array(SHA256.hash(data: bytes)) == digest else {
            throw VaultError(
                .vaultDamaged,
                "\(location)/\(name) changed after this receiver read it: the receivers' log was rewritten")
        }
    }

    /// Reads the whole log as a receiver starts: the entries listed must be `1…n` with none
    /// missing, and every one of them must be read (an entry deleted from the middle is found
    /// here, rather than a new entry being written into its place).
    /// - Throws: ``VaultError/Code/vaultDamaged`` when one is missing or does not open.
    package func readAll() async throws {
        let prefix = location.key("receivers/log/")
        let listed = try await retrying {
            try await client.listObjects(bucket: location.bucket, prefix: prefix, pageSize: 1000)
        }
        let numbers = listed.compactMap { o -> Int? in
            let name = o.key.dropFirst(prefix.count)
            return name.utf8.count == 12 && name.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) ? Int(name) : nil
        }.sorted()
        if let gap = numbers.enumerated().first(where: { $0.offset + 1 != $0.element }) {
            throw VaultError(
                .vaultDamaged,
                "\(location)/\(Self.entryName(gap.offset + 1)) is missing from the receivers' log "
                    + "(it holds \(numbers.count) entries up to \(numbers.last ?? 0)): an entry was deleted")
        }
        try await catchUp()
        let read = state.withLock { $0.entries.count }
        guard read >= numbers.count else {
            throw VaultError(
                .vaultDamaged,
                "\(location)/\(Self.entryName(read + 1)) was listed but could not be read: the receivers' log is cut")
        }
    }

    /// Takes entry `n` as stored (`bytes`), unless another task took it already.
    private func apply(_ bytes: [UInt8], at n: Int) throws {
        let name = Self.entryName(n)
        let entry: Entry
        let epoch: UInt32
        do {
            // Entries written before a password change stay what they were; one written after it
            // under the old key (by someone who knew the old password) follows a later one.
            let opened = try vault.openStateOfAnyEpoch(bytes, purpose: .receiverLog, role: role(name), what: name)
            guard let body = opened.body else { throw Self.laterKey(name, epoch: opened.epoch) }
            epoch = opened.epoch
            entry = try JSONDecoder().decode(Entry.self, from: Data(body))
        } catch let e as VaultError where e.code == .storeUnavailable {
            throw e
        } catch {
            throw VaultError(
                .vaultDamaged, "\(location)/\(name) is not an entry of this vault's receivers' log: \(error)")
        }
        let ids = try entry.documents.map {
            guard let id = DocumentID(hex: $0) else {
                throw VaultError(.vaultDamaged, "\(location)/\(name) names a document id that is not one")
            }
            return id
        }
        try state.withLock { s in
            guard s.entries.count == n - 1 else { return }
            guard entry.previous == Hex.encode(s.lastDigest) else {
                throw VaultError(
                    .vaultDamaged,
                    "\(location)/\(name) does not follow the entry before it: the receivers' log was cut or reordered")
            }
            guard epoch >= s.lastEpoch else {
                throw VaultError(
                    .vaultDamaged,
                    """
                        \(location)/\(name) is sealed under key epoch \(epoch), older than the entry before it \
                        (\(s.lastEpoch)): it was written with an old password, after the password changed
                        """)
            }
            s.entries.append(entry)
            s.lastEpoch = epoch
            s.lastDigest = Array(SHA256.hash(data: bytes))
            s.committed.formUnion(ids)
        }
    }

    /// Appends an entry after the last one read, unless another receiver appended there first.
    /// - Returns: true when it was appended; false when the store had another entry there (the
    ///   log is then caught up: the caller decides again on what it now says).
    package func append(
        _ operation: HistoryRecord.Operation, detail: String?, documents: [HistoryRecord.Document] = [],
        now: Date = Date()
    ) async throws -> Bool {
        await gate.enter()
        do {
            let appended = try await appendAlone(operation, detail: detail, documents: documents, now: now)
            await gate.leave()
            return appended
        } catch {
            await gate.leave()
            throw error
        }
    }

    private func appendAlone(
        _ operation: HistoryRecord.Operation, detail: String?, documents: [HistoryRecord.Document], now: Date
    ) async throws -> Bool {
        let (n, previous) = state.withLock { ($0.entries.count + 1, Hex.encode($0.lastDigest)) }
        let entry = Entry(
            operation: operation, detail: detail, documents: documents.map(\.id.hex),
            files: documents.isEmpty ? nil : documents,
            timeMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), previous: previous)
        let name = Self.entryName(n)
        let sealed = try vault.sealState(
            Array(try JSONEncoder().encode(entry)), purpose: .receiverLog, role: role(name))
        let written = try await retrying {
            try await client.putObjectIfAbsent(
                bucket: location.bucket, key: location.key(name), body: ByteBuffer(bytes: sealed),
                contentType: Self.contentType)
        }
        if written {
            try apply(sealed, at: n)
            return true
        }
        // Another receiver's entry is there, or this one's, when a retried PUT's first try landed.
        let there = try await fetch(name)
        try await catchUp()
        return there == sealed
    }

    /// What sealed under a key epoch later than this vault's says: the password was changed since
    /// this receiver (or command) opened the vault; until it is started again with the new one,
    /// it answers 503 (stations send again later).
    private static func laterKey(_ name: String, epoch: UInt32) -> VaultError {
        VaultError(
            .storeUnavailable,
            "\(name) is sealed under key epoch \(epoch), later than this vault's: the vault's password was changed",
            hint: "start it again with the new password")
    }

    /// Marks a password change carried to the store (a `passwd` entry, under the new key): no
    /// entry sealed under an earlier key can follow it. Does nothing when the store has no
    /// receivers' log.
    /// - Returns: whether the store has one.
    @discardableResult
    package func markPasswordChange(detail: String) async throws -> Bool {
        try await readAll()
        guard state.withLock({ !$0.entries.isEmpty }) else { return false }
        while try await !append(.passwd, detail: detail) {}
        return true
    }

    // MARK: The key

    /// The receivers' signing key: opened from `receivers/key.vlt`, or made and written there
    /// (once, whoever is first) when the store has none and `create` is true. Its public key is
    /// the log's `receiver` entry; a key file that does not match it, or is missing while the
    /// log names one, is refused rather than replaced.
    package func identity(create: Bool) async throws -> ReceiverIdentity? {
        try await readAll()
        let recorded = recordedKey()
        let seed =
            create && recorded == nil ? try SecretBytes.random(count: SigningKey.seedSize, using: SystemRandom()) : nil
        guard let identity = try await storedIdentity(offering: seed) else {
            if let recorded {
                throw VaultError(
                    .vaultDamaged,
                    "\(location)/\(Self.keyName) is missing, and the receivers' log says their key is \(recorded)")
            }
            return nil
        }
        let mine = Hex.encode(identity.publicKey)
        let logged = try await logKey(mine)
        guard logged == mine else {
            throw VaultError(
                .vaultDamaged,
                "\(location)/\(Self.keyName) holds the key \(mine), but the receivers' log says \(logged)")
        }
        return identity
    }

    /// The identity `receivers/key.vlt` holds. When the store has none and `seed` is given, the
    /// seed is written there first (once, whoever is first: another receiver's may win, and is
    /// then the one returned); nil when there is none and no seed.
    private func storedIdentity(offering seed: SecretBytes?) async throws -> ReceiverIdentity? {
        var stored = try await fetch(Self.keyName)
        if stored == nil, let seed {
            var body = seed.withUnsafeBytes { Array($0) }
            defer { Sodium.wipe(&body) }
            let sealed = try vault.sealState(body, purpose: .receiver, role: role(Self.keyName))
            let written = try await retrying {
                try await client.putObjectIfAbsent(
                    bucket: location.bucket, key: location.key(Self.keyName), body: ByteBuffer(bytes: sealed),
                    contentType: Self.contentType)
            }
            stored = written ? sealed : try await fetch(Self.keyName)
            guard stored != nil else { throw VaultError(.vaultDamaged, "\(location)/\(Self.keyName) went missing") }
        }
        guard let stored else { return nil }
        // Of any epoch: the key is checked against the one the log names, whoever sealed it.
        let opened = try vault.openStateOfAnyEpoch(
            stored, purpose: .receiver, role: role(Self.keyName), what: "\(location)/\(Self.keyName)")
        guard var plain = opened.body else { throw Self.laterKey(Self.keyName, epoch: opened.epoch) }
        defer { Sodium.wipe(&plain) }
        guard plain.count == SigningKey.seedSize else {
            throw VaultError(.vaultDamaged, "\(location)/\(Self.keyName) is malformed")
        }
        return try ReceiverIdentity(seed: try plain.withUnsafeBytes { try SecretBytes(copying: $0) })
    }

    /// The public key (hex) of the log's `receiver` entry, appending one for `key` when the log
    /// has none (another receiver's may be appended first, and is then the one returned).
    private func logKey(_ key: String) async throws -> String {
        let detail = ReceiverKeyRecord(publicKey: key).detail
        while true {
            if let recorded = recordedKey() { return recorded }
            _ = try await append(.receiver, detail: detail)
        }
    }

    /// The public key (hex) the log's first `receiver` entry names.
    private func recordedKey() -> String? {
        state.withLock { s in
            s.entries.first { $0.operation == .receiver }.flatMap { ReceiverKeyRecord(detail: $0.detail)?.publicKey }
        }
    }

    // MARK: A local receiver moved to the store

    /// Carries a receiver served from a local vault to this store, so that receivers serving the
    /// store go on with its key, stations and batches: `seed` (its signing seed) becomes
    /// `receivers/key.vlt` and the log's `receiver` entry, unless the store's receivers already
    /// have a key, and each of `records` (its `station` and `receive` history records, in order)
    /// the log does not hold yet is appended. Run again after a failure, it carries the rest.
    package func carry(seed: SecretBytes, records: [HistoryRecord]) async throws -> OfficeCarried {
        try await readAll()
        let mine = Hex.encode(try ReceiverIdentity(seed: seed).publicKey)
        if let recorded = recordedKey(), recorded != mine { return .otherKey(recorded) }
        if recordedKey() == nil {
            // Offered a seed, the store holds a key afterwards: this one, or one made before it.
            let theirs = try await storedIdentity(offering: seed).map { Hex.encode($0.publicKey) } ?? ""
            if theirs != mine { return .otherKey(theirs) }
            let logged = try await logKey(mine)
            if logged != mine { return .otherKey(logged) }
        }
        var stations = 0
        var batches = 0
        var operators = 0
        for record in records
        where [.station, .receive, .operatorAccount, .download].contains(record.operation) && record.outcome == .ok {
            while true {
                // Two downloads may say the same: theirs are told apart by their times too.
                let held = state.withLock { s in
                    s.entries.contains {
                        $0.operation == record.operation && $0.detail == record.detail
                            && (record.operation != .download || $0.timeMillis == record.timeMillis)
                    }
                }
                if held { break }
                let when = Date(timeIntervalSince1970: Double(record.timeMillis) / 1000)
                if try await append(
                    record.operation, detail: record.detail, documents: record.documents, now: when)
                {
                    switch record.operation {
                    case .station: stations += 1
                    case .receive: batches += 1
                    default: operators += 1
                    }
                    break
                }
            }
        }
        return stations + batches + operators == 0
            ? .alreadyThere : .carried(stations: stations, batches: batches, operators: operators)
    }

    // MARK: Envelopes of a batch

    /// The folder of the pending notes of one batch.
    static func pendingFolder(station: String, batch: String) -> String {
        "receivers/pending/" + Hex.encode(Array(SHA256.hash(data: Data("\(station)\n\(batch)".utf8)).prefix(16)))
            + "/"
    }

    /// Notes, before any is sent, the envelopes this receiver is about to put on the store for a
    /// batch. - Returns: the note's key (for ``withdraw(_:note:)``).
    package func announce(station: String, batch: String, documents: [DocumentID]) async throws -> String {
        let name = Self.pendingFolder(station: station, batch: batch) + Hex.encode(SystemRandom().bytes(16))
        let sealed = try vault.sealState(
            Array(try JSONEncoder().encode(documents.map(\.hex))), purpose: .pendingIntake, role: role(name))
        try await retrying {
            try await client.putObject(
                bucket: location.bucket, key: location.key(name), body: ByteBuffer(bytes: sealed),
                contentType: Self.contentType, metadata: [:])
        }
        return name
    }

    /// Puts one envelope (sealed, from the file at `path`) on the store as `objects/<id>.vlt`; a
    /// document that came captured, its metadata file first, as `objects/<id>.meta.vlt`.
    package func send(envelope path: String, id: DocumentID, capturedMetadata: String? = nil) async throws {
        let replicator = Replicator(vault: vault, client: client, location: location, policy: policy)
        if let capturedMetadata {
            _ = try await retrying {
                try await replicator.send(id, from: capturedMetadata, key: location.capturedMetadataKey(id))
            }
        }
        _ = try await retrying { try await replicator.send(id, from: path) }
    }

    /// Takes a batch's envelopes back off the store (it was refused, or another receiver took it
    /// first), then its note. A failure leaves the note, so whoever settles the batch next
    /// deletes them.
    package func withdraw(_ documents: [DocumentID], note: String) async {
        do {
            try await deleteUnnamed(documents)
            try await retrying { try await client.deleteObject(bucket: location.bucket, key: location.key(note)) }
        } catch {
            VaultNotices.post("could not take a refused batch's envelopes off the store yet: \(error)")
        }
    }

    /// Deletes the envelopes of `documents` that no entry read so far names.
    private func deleteUnnamed(_ documents: [DocumentID]) async throws {
        let committed = state.withLock { $0.committed }
        for id in documents where !committed.contains(id) {
            // The data file first: a metadata file left alone names nothing (a data file would).
            try await retrying { try await client.deleteObject(bucket: location.bucket, key: location.objectKey(id)) }
            try await retrying {
                try await client.deleteObject(bucket: location.bucket, key: location.capturedMetadataKey(id))
            }
        }
    }

    /// Once a batch is settled (in the log): deletes what every pending note of it names that no
    /// entry names (a receiver killed mid-commit, or beaten to the batch, left it), then the
    /// notes. A note that does not open under this vault's key is left alone.
    package func sweep(station: String, batch: String) async {
        let folder = location.key(Self.pendingFolder(station: station, batch: batch))
        do {
            let notes = try await retrying {
                try await client.listObjects(bucket: location.bucket, prefix: folder, pageSize: 1000)
            }
            for note in notes.prefix(1000) {
                let name = String(note.key.dropFirst(location.key("").count))
                guard let bytes = try await fetch(name),
                    let plain = try? vault.openState(bytes, purpose: .pendingIntake, role: role(name), what: name),
                    let hexes = try? JSONDecoder().decode([String].self, from: Data(plain))
                else { continue }
                try await deleteUnnamed(hexes.compactMap(DocumentID.init(hex:)))
                try await retrying { try await client.deleteObject(bucket: location.bucket, key: note.key) }
            }
        } catch {
            VaultNotices.post("could not clear a batch's pending notes off the store yet: \(error)")
        }
    }
}

/// A lock for async code: ``enter()`` waits, in turn, until no one else is inside. (The standard
/// library's `Mutex` is not held across a suspension, and appending an entry awaits the store.)
actor AppendGate {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Waits until no one is inside, then is inside.
    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Leaves: the next waiting, if any, is inside.
    func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}

/// What a push carries for the office a vault keeps: its receiver's key and records go to the
/// store's receivers' log (``SharedReceiverLog/carry(seed:records:)``), and a password change
/// carried to the store is marked there.
package struct ReceiversLogCarrier: OfficeCarrier {
    package init() {}

    package func carry(_ vault: Vault, to replicator: Replicator) async throws -> OfficeCarried? {
        guard let seed = try vault.receiverSeed() else { return nil }
        return try await log(vault, replicator).carry(seed: seed, records: try vault.history().records.map(\.record))
    }

    package func markPasswordChange(_ vault: Vault, on replicator: Replicator, detail: String) async throws {
        try await log(vault, replicator).markPasswordChange(detail: detail)
    }

    private func log(_ vault: Vault, _ r: Replicator) -> SharedReceiverLog {
        SharedReceiverLog(vault: vault, client: r.client, location: r.location, policy: r.policy)
    }
}
