#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Synchronization
import VaultCore
import VaultRemote

/// One record of what a back office keeps: its receivers' key, a station added, removed or
/// alerted on, a batch taken, an operator added or removed. In a vault folder it is a record of
/// the vault's history; on a store, an entry of the receivers' log.
package struct OfficeRecord: Sendable {
    /// What happened (`receiver`, `station`, `receive`, `operator`, …).
    package var operation: HistoryRecord.Operation
    /// The record's payload as JSON (``StationChange``, ``ReceivedBatch``, …).
    package var detail: String?
    /// The documents a `receive` record took, in the receipt's order (on a store, entries written
    /// before names were kept there name them by id only: an empty name, size 0).
    package var documents: [HistoryRecord.Document]
    /// When, in milliseconds since 1970.
    package var timeMillis: Int64

    /// The record's payload, when it is of kind `T`.
    package func payload<T: HistoryPayload>(_: T.Type) -> T? {
        operation == T.operation ? T(detail: detail) : nil
    }
}

/// What changed in an office's records since they were last read.
package enum OfficeChange: Sendable {
    /// Records were added after those read (the receivers' log only grows).
    case appended([OfficeRecord], head: HistoryHead)
    /// The records, read again whole (the history moved: another command appended, or it was
    /// audited), with what is wrong with them (finding codes).
    case reread([OfficeRecord], head: HistoryHead?, problems: [String])
}

/// Where a back office keeps its records (``OfficeRecord``): the one interface its receivers,
/// operators and commands read and append through, with two homes: ``FolderHome`` (the vault
/// folder's history, one receiver at a time) and ``StoreHome`` (a store's receivers' log, shared
/// by any number of receivers). Nothing outside a home knows which it is.
package protocol OfficeHome: Sendable {
    /// The office's vault, unlocked.
    var vault: Vault { get }
    /// Where the records are, for messages: "the vault's history", "the receivers' log at …".
    var recordsDescription: String { get }
    /// The records as they are now, or what changed since they were read as far as `head`
    /// (nil: nothing did).
    func changes(since head: HistoryHead?) async throws -> OfficeChange?
    /// Every record, read now, with what is wrong with them (finding codes; none: they verify).
    func records() async throws -> (records: [OfficeRecord], problems: [String])
    /// Appends a record (naming `documents`) after those read, unless another receiver appended first.
    /// - Returns: false when one did: read the changes and decide again.
    func append(
        _ operation: HistoryRecord.Operation, detail: String?, documents: [HistoryRecord.Document]
    ) async throws -> Bool
    /// The receivers' signing key, made (and recorded) when there is none and `create` is true.
    func identity(create: Bool) async throws -> ReceiverIdentity?
    /// Takes what a serving receiver needs alone (a folder's receiver lock; a store's receivers
    /// share it and take nothing).
    func lockForServing() throws -> OpenFile?
    /// Makes a batch's staged envelopes the office's and records `batch` as taken, whole or not
    /// at all, unless `takenBefore` (asked before each try, after the records were read again)
    /// says another receiver took it first, or throws.
    /// - Returns: true when this receiver recorded it; false when another had.
    func commit(
        _ intake: IntakeBatch, batch: ReceivedBatch, now: Date, takenBefore: () async throws -> Bool
    ) async throws -> Bool
    /// A batch taken before was answered again: clears what a receiver killed while committing it
    /// may have left.
    func settled(station: String, batch: String) async
    /// Document `id` of the office, and the vault to open it with; nil when it has none.
    func document(_ id: DocumentID) async throws -> (record: DocumentRecord, vault: Vault)?
}

extension OfficeHome {
    /// Appends a record that names no document (see ``append(_:detail:documents:)``).
    package func append(_ operation: HistoryRecord.Operation, detail: String?) async throws -> Bool {
        try await append(operation, detail: detail, documents: [])
    }
}

/// A back office in a vault folder: its records are the vault's history, its key `receiver.vlt`,
/// and one receiver serves it at a time (`receiver.lock`).
///
/// What it appends itself (a receiver's batches, alerts and downloads) it remembers with where
/// each went (``HistoryStep``), so that a reader behind by only those records gets them from
/// memory: the history is read whole, and verified, only when someone else moved it (a command
/// in another process, an audit) — not after each of this receiver's own batches, which made a
/// batch's cost grow with the number of batches before it.
package final class FolderHome: OfficeHome {
    package let vault: Vault
    /// This home's own appends not yet read by every follower, oldest first (at most
    /// ``Self/remembered``).
    private let own = OwnSteps()
    /// How many times the history was read whole (for the tests that show a batch does not).
    private let wholeReads = Atomic<Int>(0)
    /// How many own appends are kept for followers behind: a follower further behind reads whole.
    private static let remembered = 1_000

    /// Commits the batches that are ready together (``GroupCommitter``).
    let committer: GroupCommitter

    package init(vault: Vault) {
        self.vault = vault
        committer = GroupCommitter { [own] steps in own.add(steps, keeping: Self.remembered) }
    }

    package var recordsDescription: String { "the vault's history" }

    /// How many times the records were read whole since this home was made.
    package var timesReadWhole: Int { wholeReads.load(ordering: .relaxed) }

    /// What the records say now, read synchronously (a command that names a document).
    package func book() throws -> OfficeBook {
        guard case .reread(let records, _, _) = try read() else { return OfficeBook([]) }
        return OfficeBook(records)
    }

    /// The records now, read synchronously (as a receiver starts).
    package func read() throws -> OfficeChange {
        wholeReads.add(1, ordering: .relaxed)
        let scan = try vault.settledHistory()
        let records = scan.records.lazy.filter { $0.1.outcome == .ok }.map { _, r in Self.officeRecord(r) }
        let problems = Array(Set((scan.findings + scan.noted).map(\.code.rawValue))).sorted()
        return .reread(Array(records), head: vault.storedHead(), problems: problems)
    }

    private static func officeRecord(_ r: HistoryRecord) -> OfficeRecord {
        OfficeRecord(operation: r.operation, detail: r.detail, documents: r.documents, timeMillis: r.timeMillis)
    }

    package func changes(since head: HistoryHead?) async throws -> OfficeChange? {
        let now = vault.storedHead()
        guard now != head else { return nil }
        if let head, let now, let records = ownRecords(from: head, to: now) { return .appended(records, head: now) }
        if let head {
            // One of this home's appends may be between the head's write and its step's
            // remembering: looked at again once the writer lock is free.
            let settled = try vault.settledHead()
            if settled == head { return nil }
            if let settled, let records = ownRecords(from: head, to: settled) {
                return .appended(records, head: settled)
            }
        }
        return try read()
    }

    /// The records this home appended that lead from `head` to `now`, in order; nil unless
    /// they are exactly what lies between (anything else appended meanwhile: read whole) and
    /// `now` is the head of this home's last append. A history put back to a head between two
    /// of its appends (someone who can write the folder restoring an older log) is read whole,
    /// and its index's witness refuses it.
    private func ownRecords(from head: HistoryHead, to now: HistoryHead) -> [OfficeRecord]? {
        own.steps.withLock { steps in
            guard steps.last?.after == now else { return nil }
            var at = head
            var records: [OfficeRecord] = []
            while at != now {
                guard let step = steps.first(where: { $0.before == at }) else { return nil }
                records.append(Self.officeRecord(step.record))
                at = step.after
            }
            return records
        }
    }

    /// Remembers an append of this home's (under the writer lock: before anyone reads the head
    /// it made, but for the instant between the head's write and this).
    private func appended(_ step: HistoryStep) { own.add([step], keeping: Self.remembered) }

    package func records() async throws -> (records: [OfficeRecord], problems: [String]) {
        guard case .reread(let records, _, let problems) = try read() else { return ([], []) }
        return (records, problems)
    }

    package func append(
        _ operation: HistoryRecord.Operation, detail: String?, documents: [HistoryRecord.Document]
    ) async throws -> Bool {
        try vault.appendStep(HistoryRecord(operation, documents: documents, detail: detail)) { appended($0) }
        return true
    }

    package func identity(create: Bool) async throws -> ReceiverIdentity? {
        try vault.receiverIdentity(create: create)
    }

    package func lockForServing() throws -> OpenFile? { try vault.lockReceiver() }

    package func commit(
        _ intake: IntakeBatch, batch: ReceivedBatch, now: Date, takenBefore: () async throws -> Bool
    ) async throws -> Bool {
        // One receiver serves a folder: what it took is what its memory says (checked as the
        // batch began), and the history's append is the commit point.
        let handed = Handed(intake)
        // Each batch's envelopes are made durable on a thread of their own, so that those of
        // batches ending together are waited for together; then the batch joins the next group.
        _ = try await Self.offCooperativeThreads { try handed.value.syncStaged() }
        _ = try await committer.commit(handed, record: HistoryRecord(payload: batch, now: now))
        return true
    }

    package func settled(station: String, batch: String) async {}

    /// Runs `work` on a thread of its own and waits for it without holding one of Swift's
    /// cooperative threads (as many as cores): a commit waits for the disk (each envelope's
    /// fsync, the writer lock, the history's), and on those threads it stopped every other
    /// station's batch from being read meanwhile. Nor on Dispatch's pool: its few threads, held
    /// by other blocking work, left a batch's fsync waiting for minutes (a test under the whole
    /// suite's load), as they had the group commit.
    static func offCooperativeThreads<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            DetachedThread.run { done.resume(with: Result { try work() }) }
        }
    }

    package func document(_ id: DocumentID) async throws -> (record: DocumentRecord, vault: Vault)? {
        try vault.record(id).map { ($0, vault) }
    }
}

/// A back office on a store: its records are the store's receivers' log (`SharedReceiverLog`),
/// shared by every receiver that serves the store.
package final class StoreHome: OfficeHome {
    package let log: SharedReceiverLog
    /// The vault as the store was last listed: documents other receivers (or this one) put there
    /// since are read by listing it again.
    private let view: Mutex<Vault>

    package init(log: SharedReceiverLog) {
        self.log = log
        view = Mutex(log.vault)
    }

    package var vault: Vault { log.vault }

    package var recordsDescription: String { "the receivers' log at \(log.logDescription)" }

    package func changes(since head: HistoryHead?) async throws -> OfficeChange? {
        // The log only grows: its new entries are what changed. Its length stands for a head.
        // Read whole the first time (an entry missing from the middle is found then).
        if head == nil { try await log.readAll() } else { try await log.catchUp() }
        let entries = log.entries
        let known = head?.count ?? 0
        guard entries.count > known || head == nil else { return nil }
        let new = entries[min(known, entries.count)...].map { e in
            OfficeRecord(
                operation: e.operation, detail: e.detail,
                documents: e.files.map { $0.map(\.id.hex) } == e.documents
                    ? e.files ?? []
                    : e.documents.compactMap(DocumentID.init(hex:)).map {
                        HistoryRecord.Document(id: $0, name: "", sha256: "", size: 0)
                    },
                timeMillis: e.timeMillis)
        }
        return .appended(new, head: HistoryHead(count: entries.count, tag: []))
    }

    package func records() async throws -> (records: [OfficeRecord], problems: [String]) {
        guard case .appended(let records, _) = try await changes(since: nil) else { return ([], []) }
        return (records, [])
    }

    package func append(
        _ operation: HistoryRecord.Operation, detail: String?, documents: [HistoryRecord.Document]
    ) async throws -> Bool {
        try await log.append(operation, detail: detail, documents: documents)
    }

    package func identity(create: Bool) async throws -> ReceiverIdentity? {
        try await log.identity(create: create)
    }

    package func lockForServing() throws -> OpenFile? { nil }

    /// The batch's envelopes are noted as pending, sent, and then named by an entry appended to
    /// the receivers' log (the commit point), unless, when the log is read again, another
    /// receiver took the batch first (its envelopes are then taken back) or `takenBefore` refuses.
    package func commit(
        _ intake: IntakeBatch, batch: ReceivedBatch, now: Date, takenBefore: () async throws -> Bool
    ) async throws -> Bool {
        let log = self.log
        let staged = intake.stagedEnvelopes
        let ids = staged.map(\.record.id)
        let files = staged.map { HistoryRecord.Document($0.record) }
        let note = try await log.announce(station: batch.station, batch: batch.batch, documents: ids)
        // Once an entry was sent, a failure leaves its outcome unknown (the PUT may have landed
        // and its answer been lost): the envelopes and the note then stay, and whoever settles
        // the batch next keeps what an entry names and deletes the rest.
        var entrySent = false
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = staged.makeIterator()
                func launch() -> Bool {
                    guard let (path, record, metadata) = next.next() else { return false }
                    group.addTask { try await log.send(envelope: path, id: record.id, capturedMetadata: metadata) }
                    return true
                }
                for _ in 0..<4 where launch() {}
                while try await group.next() != nil { _ = launch() }
            }
            while true {
                if try await takenBefore() {
                    await log.withdraw(ids, note: note)
                    await log.sweep(station: batch.station, batch: batch.batch)
                    return false
                }
                entrySent = true
                if try await log.append(.receive, detail: batch.detail, documents: files, now: now) { break }
            }
        } catch {
            if !entrySent { await log.withdraw(ids, note: note) }
            throw error
        }
        await log.sweep(station: batch.station, batch: batch.batch)
        intake.discard()
        return true
    }

    package func settled(station: String, batch: String) async {
        await log.sweep(station: station, batch: batch)
    }

    /// A document the store's listing as last read lacks, but the receivers' log names as taken,
    /// is looked for again in a new listing.
    package func document(_ id: DocumentID) async throws -> (record: DocumentRecord, vault: Vault)? {
        let seen = view.withLock { $0 }
        if let record = try seen.record(id) { return (record, seen) }
        try await log.catchUp()
        guard log.names(id) else { return nil }
        let fresh = try await RemoteVault.reopened(seen, client: log.client, location: log.location, policy: log.policy)
            .vault
        view.withLock { $0 = fresh }
        return try fresh.record(id).map { ($0, fresh) }
    }

    /// Whether a tombstone of this vault on the store removed document `id`.
    package func removed(_ id: DocumentID) async throws -> Bool {
        let replicator = Replicator(vault: log.vault, client: log.client, location: log.location, policy: log.policy)
        return try await replicator.openTombstones([id]).valid[id] != nil
    }
}

/// The appends a ``FolderHome`` made itself, oldest first.
private final class OwnSteps: Sendable {
    let steps = Mutex<[HistoryStep]>([])

    /// Remembers `new`, forgetting the oldest beyond `keeping`.
    func add(_ new: [HistoryStep], keeping: Int) {
        steps.withLock { steps in
            steps += new
            if steps.count > keeping { steps.removeFirst(steps.count - keeping) }
        }
    }
}

/// Commits a folder receiver's batches in groups: a batch ready to commit while a commit is
/// under way waits for it, and then goes with every other batch that waited meanwhile, in one
/// critical section (``IntakeBatch/commit(_:interrupt:whileLocked:)-swift.type.method``).
///
/// A commit's cost is mostly waits for the disk under the writer lock (about nine fsyncs); one
/// by one, twenty stations' batches queued behind each other for them. A group pays them once;
/// a batch alone commits at once, as before. Like a database's group commit, nothing is delayed
/// on purpose: the group is whatever came while the disk was busy.
final class GroupCommitter: Sendable {
    private typealias Waiting = (
        intake: Handed<IntakeBatch>, record: HistoryRecord, done: CheckedContinuation<HistoryStep, any Error>
    )
    private struct Queue {
        var waiting: [Waiting] = []
        var running = false
    }
    private let queue = Mutex(Queue())
    /// The most batches in one group (their history records are one write).
    private static let largest = 64
    /// The most documents in one group, but for a batch alone: `intake.pending` names them all,
    /// and recovery reads at most 1 MiB of it (about 29,000 ids).
    private static let mostDocuments = 8_000
    /// How many groups were taken to be committed (for the tests).
    private let committed = Atomic<Int>(0)

    /// How many groups were taken to be committed since this committer was made.
    var groups: Int { committed.load(ordering: .relaxed) }
    /// How many batches wait for a group now.
    var waiting: Int { queue.withLock { $0.waiting.count } }
    /// Given each group's steps under the writer lock, in order.
    private let remember: @Sendable ([HistoryStep]) -> Void

    /// A committer that gives `remember` each group's steps before the writer lock is let go.
    init(remember: @escaping @Sendable ([HistoryStep]) -> Void) { self.remember = remember }

    /// Commits `intake` with `record`, in the next group.
    /// - Returns: where its record went. Throws what the group's commit threw.
    func commit(_ intake: Handed<IntakeBatch>, record: HistoryRecord) async throws -> HistoryStep {
        try await withCheckedThrowingContinuation { done in
            let start = queue.withLock { q in
                q.waiting.append((intake, record, done))
                defer { q.running = true }
                return !q.running
            }
            // Not on Dispatch's pool: a commit blocks on the disk and the writer lock, and the
            // pool's few threads, held by other blocking work, left a group waiting for minutes
            // (a test under the whole suite's load).
            if start { DetachedThread.run { self.drain() } }
        }
    }

    /// Commits groups until no batch waits (on a thread of its own: a commit waits for the disk).
    private func drain() {
        while true {
            let group: [Waiting] = queue.withLock { q in
                var documents = 0
                let group = Array(
                    q.waiting.prefix(Self.largest).prefix { w in
                        documents += w.intake.value.records.count
                        return documents <= Self.mostDocuments || documents == w.intake.value.records.count
                    })
                q.waiting.removeFirst(group.count)
                if group.isEmpty { q.running = false }
                return group
            }
            if group.isEmpty { return }
            committed.add(1, ordering: .relaxed)
            do {
                let steps = try IntakeBatch.commit(group.map { ($0.intake.value, $0.record) }, whileLocked: remember)
                for (waiting, step) in zip(group, steps) { waiting.done.resume(returning: step) }
            } catch {
                for waiting in group { waiting.done.resume(throwing: error) }
            }
        }
    }
}

/// A value handed to another thread and back, which nothing else touches meanwhile (a batch's
/// intake, while its commit runs off the cooperative threads).
// @unchecked: the sender waits for the thread it hands the value to and does not touch it meanwhile.
struct Handed<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
