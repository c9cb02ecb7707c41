import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A batch of documents that enters the vault whole or not at all: a receiver's batch
/// (`vault receive`), whose documents arrive one after another in one request body.
///
/// Each document is encrypted as it arrives into a temporary file in `staging/` (the envelope
/// and pipeline of every add); when it ends, the kernel is asked to start writing it back, not
/// waited for. Nothing is in `objects/` until ``commit(_:)``, which:
/// 0. fsyncs every envelope of the batch (by then mostly written back: each costs one wait, not
///    a document's whole write, and none of them held up the reading of the body);
///
/// and then, under the writer lock:
/// 1. writes `intake.pending` (sealed: the ids about to be committed);
/// 2. links every envelope into `objects/` and fsyncs the folder;
/// 3. writes the documents' index rows and appends the history record that names them all —
///    the commit point: from here the batch is in the vault;
/// 4. deletes `intake.pending`.
///
/// A crash between 1 and 3 leaves objects no record names; the next command that opens the
/// index (``Vault/rollBackInterruptedIntake(_:)``) unlinks them instead of adopting them, so a
/// batch is never half kept. ``discard()`` (or dropping the batch) removes what was staged.
/// Batches that end together are committed together (``commit(_:interrupt:whileLocked:)-swift.type.method``):
/// steps 1–4 once for all of them, each still whole or not at all.
package final class IntakeBatch {
    private let vault: Vault
    /// Each document's file, with its metadata file when it came captured.
    private var staged: [(file: AtomicFile, metadata: AtomicFile?, record: DocumentRecord)] = []
    private var current: (file: AtomicFile, writer: EnvelopeWriter, id: DocumentID)?
    /// A document that came captured, being written as it came (``beginCaptured(metadata:now:)``).
    private var captured: (file: AtomicFile, metadata: [UInt8], id: DocumentID, digest: SHA256, size: UInt64)?
    private var capturedAt: Date = .distantPast
    private var done = false
    /// True once every staged envelope was fsynced (``syncStaged()``).
    private var synced = false

    /// A batch for `vault`; nothing is written yet.
    package init(vault: Vault) { self.vault = vault }

    /// The documents staged so far, in order.
    package var records: [DocumentRecord] { staged.map(\.record) }

    /// Where each staged envelope is (in `staging/`, sealed, not fsynced: the store keeps it), with
    /// its record and, for a document that came captured, its metadata file: a receiver on a
    /// store sends them from there instead of committing them here.
    package var stagedEnvelopes: [(path: String, record: DocumentRecord, metadata: String?)] {
        staged.map { ($0.file.temporaryPath, $0.record, $0.metadata?.temporaryPath) }
    }

    /// Whether a document of the batch came captured (two files, ``beginCaptured(metadata:now:)``).
    package var holdsCaptured: Bool { staged.contains { $0.metadata != nil } }

    /// Starts the next document: its envelope is written as ``write(_:)`` is given its bytes.
    /// - Throws: what the envelope's metadata refuses (a name or content type vault cannot keep).
    package func begin(name: String, contentType: String, tags: [String] = [], now: Date = Date()) throws {
        precondition(current == nil && captured == nil && !done, "internal error: a document begun inside another")
        let id = DocumentID.random(using: vault.random)
        let file = try AtomicFile(
            destination: vault.store.objectPath(id), staging: try vault.store.staging(), random: vault.random)
        let template = DocumentMetadata(
            name: name, contentType: contentType, size: 0, sha256: [UInt8](repeating: 0, count: 32),
            addedAtMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), tags: tags)
        // One chunk sealed at a time: a receiver writes many batches at once, and each writer's
        // buffers (five batches) stay at 320 KiB instead of 5 MiB.
        let writer = try EnvelopeWriter(
            output: SequentialFileOutput(file: file.file), keyringWhenDone: { [vault] in vault.keyring },
            documentID: id, metadata: template, random: vault.random, batchChunks: 1)
        current = (file, writer, id)
    }

    /// Encrypts the next bytes of the document begun last.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        if captured != nil {
            captured!.digest.update(bufferPointer: bytes)
            captured!.size += UInt64(bytes.count)
            try captured!.file.file.write(bytes)
            return
        }
        guard let current else { preconditionFailure("internal error: bytes outside a document") }
        try current.writer.write(bytes)
    }

    /// Ends the document begun last: its envelope is sealed and its writeback started (still in
    /// `staging/`; ``commit(_:interrupt:)`` fsyncs it).
    /// - Returns: its record (the size and SHA-256 of the bytes written).
    @discardableResult
    package func end() throws -> DocumentRecord {
        if captured != nil { return try endCaptured() }
        guard let current else { preconditionFailure("internal error: end outside a document") }
        self.current = nil
        let metadata = try current.writer.finish()
        Platform.startWriteback(current.file.file.descriptor, offset: 0, length: 0)
        let record = DocumentRecord(id: current.id, metadata: metadata)
        staged.append((current.file, nil, record))
        synced = false
        return record
    }

    /// Starts a document that came captured (a capture-only station's, docs/FORMAT.md): ``write(_:)``
    /// is given its data file's bytes, kept as they came, and `metadata` is its metadata age file.
    /// The office's record of it says only what the office knows without the identity.
    package func beginCaptured(metadata: [UInt8], now: Date = Date()) throws {
        precondition(current == nil && captured == nil && !done, "internal error: a document begun inside another")
        let id = DocumentID.random(using: vault.random)
        let file = try AtomicFile(
            destination: vault.store.objectPath(id), staging: try vault.store.staging(), random: vault.random)
        captured = (file, metadata, id, SHA256(), 0)
        capturedAt = now
    }

    /// Ends a captured document: its record (the pair's size and digest, as a station's), sealed
    /// into its metadata file beside the data.
    private func endCaptured() throws -> DocumentRecord {
        guard let c = captured else { preconditionFailure("internal error: end outside a document") }
        captured = nil
        let record = DocumentRecord(
            id: c.id,
            metadata: DocumentMetadata(
                name: CapturedDocument.sealedName, contentType: CapturedDocument.contentType,
                size: c.size + UInt64(c.metadata.count),
                sha256: CapturedDocument.digest(data: c.digest, metadata: c.metadata),
                addedAtMillis: Int64((capturedAt.timeIntervalSince1970 * 1000).rounded(.down)), tags: []))
        let metadata: AtomicFile
        do {
            metadata = try AtomicFile(
                destination: vault.store.capturedMetadataPath(c.id), staging: try vault.store.staging(),
                random: vault.random)
            try metadata.file.write(
                CapturedDocument.metadataFile(sealedRecord: try vault.sealCapturedRecord(record), metadata: c.metadata))
        } catch {
            c.file.discard()
            throw error
        }
        Platform.startWriteback(c.file.file.descriptor, offset: 0, length: 0)
        staged.append((c.file, metadata, record))
        synced = false
        return record
    }

    /// What a test makes ``commit(_:interrupt:)`` stop at, as a crash there would.
    package enum Interruption: Sendable { case afterLinking }

    /// Thrown by ``commit(_:interrupt:)`` where a test asked it to stop.
    package struct Interrupted: Error {}

    /// Makes every staged envelope durable (an fsync each; by the commit they are mostly written
    /// back already). ``commit(_:interrupt:whileLocked:)`` does it when it was not done: a caller
    /// that commits batches together does it first, for each batch on its own thread.
    package func syncStaged() throws {
        precondition(current == nil && captured == nil, "internal error: a batch synced mid-document")
        guard !synced else { return }
        for s in staged {
            try s.metadata?.file.sync()
            try s.file.file.sync()
        }
        synced = true
    }

    /// Puts every staged document into the vault together, recorded by `record` (given the
    /// records in order; its documents are set to them). Nothing is kept when this throws
    /// before the history record is appended.
    /// - Parameter interrupt: for the tests of crash recovery: leave the vault as a crash at
    ///   that point would (the objects linked, `intake.pending` written, nothing recorded).
    /// - Parameter whileLocked: given where the record went before the writer lock is let go
    ///   (``Vault/appendStep(_:whileLocked:)``).
    /// - Returns: where the record went in the history (``HistoryStep``).
    @discardableResult
    package func commit(
        _ record: HistoryRecord, interrupt: Interruption? = nil, whileLocked: (HistoryStep) -> Void = { _ in }
    ) throws -> HistoryStep {
        try Self.commit([(self, record)], interrupt: interrupt) { whileLocked($0[0]) }[0]
    }

    /// Commits several batches of one vault together, each whole, as ``commit(_:interrupt:whileLocked:)``
    /// commits one, in one critical section: one `intake.pending`, one fsync of `objects/`, one
    /// index transaction, their records appended with one fsync of the log. A receiver whose
    /// stations' batches end at once pays the disk's waits once for all of them, not once each
    /// under the writer lock. They all succeed or all throw; when one throws, none is kept,
    /// but for a crash (not an error) after the history's write: then any whole prefix of the
    /// records may be kept, each a whole batch (none was answered yet).
    /// - Returns: where each record went, in order.
    @discardableResult
    package static func commit(
        _ batches: [(batch: IntakeBatch, record: HistoryRecord)], interrupt: Interruption? = nil,
        whileLocked: ([HistoryStep]) -> Void = { _ in }
    ) throws -> [HistoryStep] {
        guard let vault = batches.first?.batch.vault else { return [] }
        var records: [HistoryRecord] = []
        for (batch, record) in batches {
            precondition(
                batch.current == nil && batch.captured == nil && !batch.done && batch.vault === vault,
                "internal error: a batch committed twice, mid-document or with another vault's")
            batch.done = true
            var record = record
            record.documents = batch.staged.map { HistoryRecord.Document($0.record) }
            records.append(record)
        }
        let staged = batches.flatMap(\.batch.staged)
        let ids = staged.map(\.record.id)
        let known = Dictionary(uniqueKeysWithValues: staged.map { ($0.record.id, $0.record) })
        // Durable before anything names them; outside the lock, so that other batches commit meanwhile.
        for (batch, _) in batches { try batch.syncStaged() }
        return try vault.store.withWriterLock { lock in
            try vault.checkKeyEpoch(lock)
            // An earlier batch a crash interrupted goes first: this commit's own intake.pending
            // would hide it, and its objects would then be adopted.
            try vault.rollBackInterruptedIntake(lock)
            vault.indexHolder.committingIntake = true
            defer { vault.indexHolder.committingIntake = false }
            let pending = vault.store.path(.pendingIntake)
            try AtomicFile.write(
                try vault.sealState(
                    Array(try JSONEncoder().encode(ids)), purpose: .pendingIntake, role: VaultFile.pendingIntake.name),
                to: pending, random: vault.random)
            let before = Platform.statTimes(vault.store.objectsPath) ?? ""
            for s in staged {
                // A captured document's metadata file first: a data file is never without it.
                try s.metadata?.commit(replace: false, sync: false)
                try s.file.commit(replace: false, sync: false)
            }
            try FileSystem.syncDirectory(vault.store.objectsPath)
            if interrupt == .afterLinking { throw Interrupted() }
            let stamps = [(before: before, after: Platform.statTimes(vault.store.objectsPath) ?? "")]
            try vault.withIndex(lock, known: known, ownChanges: stamps) { index in
                try index.write(lock) {
                    for r in staged.map(\.record).sorted(by: { $0.id < $1.id }) { try index.put(r, logged: false) }
                    try vault.commitIndexState(index, lock)
                }
            }
            let steps = try vault.appendSteps(records, lock, pending: Set(ids))
            whileLocked(steps)
            try FileSystem.remove(pending)
            try FileSystem.syncDirectory(vault.store.root)
            return steps
        }
    }

    /// Removes everything staged (nothing of the batch was committed).
    package func discard() {
        done = true
        current?.file.discard()
        current = nil
        captured?.file.discard()
        captured = nil
        for s in staged {
            s.metadata?.discard()
            s.file.discard()
        }
        staged = []
    }

    deinit { if !done { discard() } }
}

extension Vault {
    /// Takes out a batch whose commit a crash interrupted (``IntakeBatch``): the objects
    /// `intake.pending` names that no history record names are unlinked, and the file removed.
    /// One that does not open under the current key (forged, damaged or sealed under an old
    /// key) is never acted on. Called under the writer lock before the index is checked.
    func rollBackInterruptedIntake(_ lock: WriterLock) throws {
        let path = store.path(.pendingIntake)
        guard !indexHolder.committingIntake, FileSystem.kind(of: path) != .missing else { return }
        guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20),
            let plain = try? openState(
                bytes, purpose: .pendingIntake, role: VaultFile.pendingIntake.name, what: "intake.pending"),
            let ids = try? JSONDecoder().decode([DocumentID].self, from: Data(plain))
        else {
            VaultNotices.post("intake.pending does not open under this vault's key; left alone (an audit reports it)")
            return
        }
        let named = try HistoryLog(vault: self).scan(keepRecords: false).projected().present
        var unlinked = 0
        for id in ids where named[id] == nil {
            if FileSystem.kind(of: store.objectPath(id)) != .missing {
                try FileSystem.remove(store.objectPath(id))
                unlinked += 1
            }
            if FileSystem.kind(of: store.capturedMetadataPath(id), following: false) != .missing {
                try FileSystem.remove(store.capturedMetadataPath(id))
            }
        }
        if unlinked > 0 {
            try FileSystem.syncDirectory(store.objectsPath)
            VaultNotices.post("took out \(unlinked) document(s) of a received batch whose commit was interrupted")
        }
        // The envelopes its other documents left in staging/ go too.
        if FileSystem.kind(of: store.stagingPath) == .directory { AtomicFile.sweep(store.stagingPath) }
        try FileSystem.remove(path)
        try FileSystem.syncDirectory(store.root)
    }
}

extension Vault {
    /// A temporary file in `staging/` (0600, removed when dropped, swept if a crash leaves it),
    /// sealed under a key only the returned object holds: for bytes a receiver holds before it
    /// knows what they are (a tus chunk whose checksum is not checked yet). Before, such a chunk
    /// (names, types and data of a batch) lay in the clear on the office's disk, and stayed there
    /// after a kill -9.
    package func spoolFile() throws -> SealedSpool {
        let staging = try store.staging()
        return try SealedSpool(
            file: try AtomicFile(destination: staging + "/spool", staging: staging, random: random), random: random)
    }
}

extension Vault {
    /// Takes out a received batch whose commit a crash interrupted, now (a receiver does it as
    /// it starts, before it takes anything): see ``IntakeBatch``.
    package func recoverInterruptedIntake() throws {
        guard store.source == nil, FileSystem.kind(of: store.path(.pendingIntake)) != .missing else { return }
        try store.withWriterLock { lock in try rollBackInterruptedIntake(lock) }
    }
}
