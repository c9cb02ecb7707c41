import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The documents one command adds (`add` of many files, `import` of a folder), sharing the
/// work that does not belong to any one of them.
///
/// Each document is written to a temporary file in `objects/` (an ``AtomicFile``), fsynced,
/// checked for a duplicate and renamed to `<id>.vlt` under the writer lock — that rename is its
/// commit, and a crash after it keeps it. What a document does not need on its own is done once,
/// in ``finish()``: the fsync of `objects/` (which makes the renames durable), the index update
/// (one rewrite instead of one per document, which made adding n files O(n²)), and the sweep of
/// temporary files killed writers left. Until `finish()` returns, a power cut may lose names
/// renamed since the last sync; a crash never damages the vault (the index is rebuilt from the
/// objects when it is stale).
package final class AddSession {
    private let pending: PendingVault
    private var vault: Vault { get throws { try pending.get() } }
    /// This session's documents by SHA-256, for duplicates (the vault's are looked up in the index).
    private var addedDigests: [[UInt8]: DocumentRecord] = [:]
    private var added: [DocumentID: DocumentRecord] = [:]
    /// `objects/`'s stamp before and after each commit: when they chain from the index's stamp
    /// to the folder's stamp at the end, this session's commits are all that changed it.
    private var stamps: [(before: String, after: String)] = []
    private var finished = false
    private var sinceTrim = 0
    private let operation: HistoryRecord.Operation
    /// Whether the vault is a capture-only station (read from `vault.json` at the first add;
    /// trusted once the unlock has checked it).
    private var captures: Bool?
    /// What a capture-only station's documents are sealed with (made at its first document).
    private var workspace: CapturedDocument.Workspace?

    /// Starts a session.
    /// - Parameter operation: how the history records it: `.add` or `.import`.
    package convenience init(vault: Vault, operation: HistoryRecord.Operation = .add) throws {
        try self.init(pending: PendingVault(vault), operation: operation)
    }

    /// A session on a vault that may still be unlocking: the first document is encrypted
    /// meanwhile, and only its commit waits for the unlock.
    package init(pending: PendingVault, operation: HistoryRecord.Operation = .add) throws {
        self.pending = pending
        self.operation = operation
    }

    /// The oldest document with these contents: in the vault (one index lookup), or added
    /// earlier in this session.
    /// An empty document's only twin is an empty one of the same name (see
    /// ``add(from:name:contentType:tags:allowDuplicate:now:progress:)``).
    private func twin(of metadata: DocumentMetadata) throws -> DocumentRecord? {
        guard metadata.size == 0 else {
            if let r = try vault.withIndex(ownChanges: stamps, { try $0.records(withDigest: metadata.sha256).first }) {
                return r
            }
            return addedDigests[metadata.sha256]
        }
        if let r = try vault.withIndex(
            ownChanges: stamps,
            { try $0.records(withDigest: metadata.sha256).first { $0.metadata.name == metadata.name } })
        {
            return r
        }
        return Array(added.values).stableOrder().first { $0.metadata.size == 0 && $0.metadata.name == metadata.name }
    }

    /// Why the vault did not unlock (a wrong password), once its unlock has failed.
    var pendingFailure: VaultError? { pending.failure }

    /// The documents committed so far.
    package var records: [DocumentRecord] { Array(added.values).stableOrder() }

    /// Encrypts everything `input` yields into a new document and commits it.
    /// - Throws: ``VaultError/Code/duplicate`` (nothing added) when the contents are already in
    ///   the vault (or were added earlier in this session) and `allowDuplicate` is false. An
    ///   empty input is a duplicate only of an empty document with the same name.
    package func add(
        from input: any ByteSource, name: String, contentType: String? = nil, tags: [String] = [],
        allowDuplicate: Bool = false, now: Date = Date(), progress: ((UInt64) -> Void)? = nil
    ) throws -> DocumentRecord {
        precondition(!finished, "internal error: add after finish")
        // A first guess from vault.json as it is now (an ordinary add encrypts while the password
        // is checked); only the unlocked vault's own copy, which its key's wrap vouches for, decides.
        if captures == nil { captures = try pending.store.readConfig().capture != nil }
        if captures == true {
            return try capture(
                from: input, name: name, contentType: contentType, tags: tags, now: now, progress: progress)
        }
        let id = DocumentID.random(using: pending.random)
        let object = try AtomicFile(
            destination: pending.store.objectPath(id), staging: try pending.store.staging(), random: pending.random)
        let input = UnlockGatedSource(input, until: pending)

        let bufferSize = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 64)
        var used = 0
        // only what was written: a small document touches few pages
        defer { Sodium.wipe(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<used])); buffer.deallocate() }
        let n = try input.readFully(into: buffer)
        used = n
        // Names are kept in NFC (DocumentName): what crosses to a back office is what was added.
        let name = DocumentName.normalized(name)
        let type = contentType ?? ContentType.detect(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), name: name)
        let template = DocumentMetadata(
            name: name, contentType: type, size: 0, sha256: [UInt8](repeating: 0, count: 32),
            addedAtMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), tags: tags)
        let writer = try EnvelopeWriter(
            output: SequentialFileOutput(file: object.file),
            keyringWhenDone: { [pending] in try Self.ordinary(try pending.get()).keyring },
            documentID: id, metadata: template, random: pending.random)
        try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        progress?(writer.plaintextCount)
        try writer.consume(input, progress: progress)
        let metadata = try writer.finish()
        try object.file.sync()  // outside the lock, so concurrent adds do not wait on each other's disk
        // An empty file has no contents to compare: only its name says what it is (a marker, a
        // placeholder), so two empty files are duplicates only when their names are the same too.
        if !allowDuplicate, let twin = try twin(of: metadata) {
            throw VaultError(.duplicate, "its contents are already in the vault as \(twin.id) (\(twin.metadata.name))")
        }
        // The commit: under the writer lock, so a remove or an index rebuild never sees half of it.
        let vault = try Self.ordinary(try self.vault)
        try pending.store.withWriterLock { lock in
            try vault.checkKeyEpoch(lock)
            let before = Platform.statTimes(pending.store.objectsPath) ?? ""
            try object.commit(replace: false, sync: false)
            stamps.append((before, Platform.statTimes(pending.store.objectsPath) ?? ""))
        }
        let record = DocumentRecord(id: id, metadata: metadata)
        // See there: memory must not grow with the number of documents. Trimming walks the whole
        // heap (hundreds of madvise calls), so it is done after large documents and every 64
        // small ones: 2,000 documents of 4 KiB took 8.4 s with a trim after each, mostly in the kernel.
        sinceTrim += 1
        if metadata.size >= 1 << 20 || sinceTrim >= 64 {
            ProcessMemory.releaseFreeMemoryIfAsked()
            sinceTrim = 0
        }
        added[id] = record
        if addedDigests[metadata.sha256] == nil { addedDigests[metadata.sha256] = record }
        return record
    }

    /// Adds a document to a capture-only station (``CapturedDocument``): sealed to the vault's
    /// recipients, its metadata file and then its data renamed into `objects/` (the data's
    /// rename is the commit, as an envelope's is). Nothing is sealed before the unlock has
    /// checked `vault.json`: recipients put there by someone without the password must not get
    /// even a staged file. Capture-only stations keep no digest of the contents, so nothing is
    /// refused as a duplicate.
    private func capture(
        from input: any ByteSource, name: String, contentType: String?, tags: [String], now: Date,
        progress: ((UInt64) -> Void)?
    ) throws -> DocumentRecord {
        let vault = try self.vault
        guard vault.capturesOnly, let recipients = vault.captureRecipients else { throw Self.changedUnderfoot }
        let workspace =
            self.workspace
            ?? CapturedDocument.Workspace(recipients: recipients, store: pending.store, random: pending.random)
        self.workspace = workspace
        let sealed = try CapturedDocument.seal(
            input, name: name, contentType: contentType, tags: tags, keepName: !vault.captureSealsNames, now: now,
            workspace: workspace, sealRecord: vault.sealCapturedRecord, progress: progress)
        // Both at once, so the file system can commit them together: one after the other, 2,000
        // small documents took 1.38-1.48x an ordinary add on disk, together 1.17-1.25x
        // (docs/PERFORMANCE.md).
        var failures: [(any Error)?] = [nil, nil]
        failures.withUnsafeMutableBufferPointer { f in
            let work = UncheckedSendable((files: [sealed.metadata.file, sealed.data.file], failures: f))
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                do { try work.value.files[i].sync() } catch { work.value.failures[i] = error }
            }
        }
        if let failure = failures.compactMap({ $0 }).first { throw failure }
        try pending.store.withWriterLock { lock in
            try vault.checkKeyEpoch(lock)
            let before = Platform.statTimes(pending.store.objectsPath) ?? ""
            try sealed.metadata.commit(replace: false, sync: false)
            try sealed.data.commit(replace: false, sync: false)
            stamps.append((before, Platform.statTimes(pending.store.objectsPath) ?? ""))
        }
        // As for an envelope (below): memory must not grow with the number of documents.
        sinceTrim += 1
        if sealed.record.metadata.size >= 1 << 20 || sinceTrim >= 64 {
            ProcessMemory.releaseFreeMemoryIfAsked()
            sinceTrim = 0
        }
        added[sealed.record.id] = sealed.record
        return sealed.record
    }

    /// `vault`, unless it is a capture-only station: an envelope (openable with the password)
    /// is never sealed for one, whatever `vault.json` said when the add began. Someone who can
    /// write to the folder swapped a `vault.json` without its recipients in for that first read
    /// and back for the unlock, and a captured document was kept as an envelope (found in
    /// review): the envelope's header is now refused before it is sealed.
    private static func ordinary(_ vault: Vault) throws -> Vault {
        guard !vault.capturesOnly else { throw changedUnderfoot }
        return vault
    }

    /// `vault.json` read before the unlock differs from the one the unlock verified.
    private static var changedUnderfoot: VaultError {
        VaultError(
            .vaultDamaged,
            "vault.json changed while the add ran (it is not the one the password opened); nothing was added",
            hint: "someone who can write to the vault folder may be at work: check it, then add again")
    }

    /// Makes the commits so far durable now (fsync of `objects/`), before ``finish()``: for a
    /// caller that must not act on a document (delete its source) until it survives a power cut.
    package func syncCommits() throws {
        try FileSystem.syncDirectory(pending.store.objectsPath)
    }

    /// Makes every commit durable (fsync of `objects/`), adds the records to the index in one
    /// rewrite, appends one history record naming every document added, and sweeps leftover
    /// temporary files.
    /// - Parameters:
    ///   - outcome: how the command ended (`.partial` when some inputs were not added,
    ///     `.failed` when it stopped on an error).
    ///   - detail: a note for the history record (the error of a failed command).
    package func finish(outcome: HistoryRecord.Outcome = .ok, detail: String? = nil) throws {
        guard !finished else { return }
        finished = true
        workspace?.close()  // its staged files not used are gone before the sweep
        workspace = nil
        try syncCommits()
        let vault = try self.vault
        try vault.store.withWriterLock { lock in
            vault.sweepTemporaries()
            try vault.withIndex(lock, known: added, ownChanges: stamps) { index in
                try index.write(lock) {
                    for record in added.values.sorted(by: { $0.id < $1.id }) { try index.put(record, logged: false) }
                    try vault.commitIndexState(index, lock)
                }
            }
            if !added.isEmpty {
                try vault.appendToHistory(
                    HistoryRecord(
                        operation, outcome: outcome, documents: records.map(HistoryRecord.Document.init),
                        detail: detail), lock, pending: Set(added.keys))
            }
        }
    }
}
