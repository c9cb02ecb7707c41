import Dispatch
import Crypto
import SystemPackage
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// What an export is asked to do.
public struct ExportOptions: Sendable {
    /// Batch limits.
    public var limits = BatchLimits()
    /// Payload shape.
    public var shape = PayloadShape.objects
    /// Cut damaged documents out and go on, instead of stopping.
    public var skipBad = false
    /// Replace existing batch files.
    public var force = false
    /// Seal every document and its metadata to these age recipients (sealed payloads,
    /// docs/EXPORT.md); none: the plain payload.
    package var recipients: [AgeRecipient] = []
    /// The office's age identities: documents that came captured (``Vault/holdsCaptured(_:)``)
    /// are opened with them and exported as their plaintext, under the names they were captured
    /// with; without them, such a document is refused before anything is written.
    package var identities: [AgeIdentity] = []

    /// The payload format these options ask for: a new sealing (new file keys) each time.
    package func payloadFormat() -> PayloadFormat {
        recipients.isEmpty ? .json(shape) : .sealed(PayloadSealing(recipients: recipients))
    }

    /// Default options: 20 documents per batch, no byte limit, objects, stop on damage.
    public init() {}
}

/// The outcome of an export.
public struct ExportSummary: Sendable {
    /// The run's id.
    public var runID: String
    /// Batches written.
    public var batches: [ManifestBatch]
    /// Documents in the payloads.
    public var documents: Int { batches.reduce(0) { $0 + $1.documents.count } }
    /// Documents cut out (damaged, with skipping asked for).
    public var skipped: [ManifestSkip] { batches.flatMap(\.skipped) }
    /// Payload bytes written.
    public var payloadBytes: UInt64 { batches.reduce(0) { $0 + $1.bytes } }
    /// Plaintext bytes of the selected documents: what the progress events count.
    public var plaintextBytes: UInt64 = 0
}

/// One batch in `manifest.json`.
public struct ManifestBatch: Codable, Sendable {
    /// File name in the export folder (nil on stdout).
    public var file: String?
    /// Ids of the documents in the payload, in order.
    public var documents: [DocumentID]
    /// Documents cut out of this batch.
    public var skipped: [ManifestSkip]
    /// Payload length.
    public var bytes: UInt64
    /// SHA-256 of the payload (hex).
    public var sha256: String?
    /// Where the batch stands.
    public var status: BatchStatus
}

extension ManifestBatch: BatchBookkeeping {}

/// A document left out of a batch, and why.
public struct ManifestSkip: Codable, Sendable {
    /// Its id.
    public var id: DocumentID
    /// Its name.
    public var name: String
    /// The error code.
    public var code: String
    /// The error message.
    public var error: String
}

/// `manifest.json` on disk, rewritten (atomically) under a lock that an interrupt also takes,
/// so a batch file and its `complete` entry appear together and nothing changes after an
/// interrupt has marked the run.
///
/// The manifest lists every batch, so writing it costs what the whole run holds: written after
/// every batch, a run of n documents cost O(n²) (33 s for 20,000 documents). A completed batch
/// therefore waits as a finished temporary file until the next write, which comes when the
/// payloads waiting are at least as large as the manifest, or a second has passed since the
/// last — so the manifest costs at most as much as the payloads, and a batch appears within
/// about a second. The end of the run, an error or an interrupt writes the waiting batches too.
///
/// What it holds is the plan (16 bytes per document) and a few bytes per batch; the JSON is
/// written by hand from those, in the layout `JSONEncoder` gives with `.prettyPrinted`,
/// `.sortedKeys` and `.withoutEscapingSlashes` (a test holds the two byte-identical). Encoding a
/// value of 100,000 id strings with `JSONEncoder` once a second left the heap fragmented: peak
/// memory of an export of 100,000 documents was 80 MiB above one of 10,000.
final class ManifestFile: @unchecked Sendable {
    // @unchecked: `entries` and `waiting` are touched only with `lock` held.
    static let name = "manifest.json"

    /// What the manifest says of a batch beyond the plan.
    struct Entry {
        var status = BatchStatus.pending
        /// The documents in the payload when some were cut out (nil: those planned).
        var kept: [DocumentID]?
        var skipped: [ManifestSkip] = []
        var bytes: UInt64
        var sha256: String?
    }

    private let lock = NIOLock()
    private let path: String
    private let plan: CompactPlan
    private let header: (runId: String, created: String, shape: String, batchSize: Int, maxBytes: UInt64?)
    private var entries: [Entry]
    /// Completed payloads not yet renamed into place, with their entries.
    private var waiting: [(payload: AtomicFile, entry: Entry, index: Int)] = []
    private var waitingBytes: UInt64 = 0
    private var lastWrite = ContinuousClock.now
    private var manifestBytes = 0

    init(
        path: String, plan: CompactPlan, runId: String, created: String, shape: String, batchSize: Int,
        maxBytes: UInt64?
    ) {
        self.path = path
        self.plan = plan
        header = (runId, created, shape, batchSize, maxBytes)
        entries = plan.lengths.map { Entry(bytes: $0) }
    }

    /// The batches as they stand.
    var batches: [ManifestBatch] {
        lock.lock(); defer { lock.unlock() }
        return entries.indices.map { i in
            let e = entries[i]
            return ManifestBatch(
                file: Self.fileName(i), documents: e.kept ?? plan.ids(ofBatch: i), skipped: e.skipped,
                bytes: e.bytes, sha256: e.sha256, status: e.status)
        }
    }

    /// Writes the manifest as it stands.
    func write() throws {
        lock.lock(); defer { lock.unlock() }
        try writeLocked()
    }

    /// A batch is complete: its payload (a finished temporary file) is renamed into place and its
    /// entry turns `complete` at the next manifest write (see the type's description).
    /// - Parameter kept: the documents in the payload, when some were cut out.
    func complete(
        _ payload: AtomicFile, index: Int, kept: [DocumentID]?, skipped: [ManifestSkip], bytes: UInt64, sha256: String
    ) throws {
        lock.lock(); defer { lock.unlock() }
        waiting.append(
            (payload, Entry(status: .complete, kept: kept, skipped: skipped, bytes: bytes, sha256: sha256), index))
        waitingBytes += bytes
        // Each waiting payload holds a descriptor: at most 64 wait.
        if waitingBytes >= UInt64(manifestBytes) || waiting.count >= 64
            || ContinuousClock.now - lastWrite >= .seconds(1)
        {
            try writeLocked()
        }
    }

    /// Writes the waiting batches and the manifest now.
    func flush() throws {
        lock.lock(); defer { lock.unlock() }
        if !waiting.isEmpty { try writeLocked() }
    }

    private func writeLocked() throws {
        for w in waiting {
            try w.payload.commit(replace: false, sync: false)
            entries[w.index] = w.entry
        }
        waiting = []
        waitingBytes = 0
        let bytes = json()
        try AtomicFile.write(bytes, to: path)
        manifestBytes = bytes.count
        lastWrite = ContinuousClock.now
    }

    /// Marks every unfinished batch `status`, or removes the manifest if no batch is complete.
    /// - Parameter holdingLock: keep the lock (on an interrupt, the process is about to exit and
    ///   nothing may change the folder after this).
    func finish(as status: BatchStatus, holdingLock: Bool) {
        lock.lock()
        defer { if !holdingLock { lock.unlock() } }
        for w in waiting {  // complete files: kept
            if (try? w.payload.commit(replace: false, sync: false)) != nil { entries[w.index] = w.entry }
        }
        waiting = []
        guard entries.contains(where: { $0.status == .complete }) else {
            try? FileSystem.remove(path)
            return
        }
        for i in entries.indices where entries[i].status == .pending { entries[i].status = status }
        try? AtomicFile.write(json(), to: path)
    }

    static func fileName(_ i: Int) -> String { ExportBatch.fileName(index: i + 1) }

    /// The manifest's JSON (see the type's description for its layout).
    func json() -> [UInt8] {
        var o = [UInt8]()
        o.reserveCapacity(512 + plan.documents * 44 + entries.count * 200)
        func text(_ s: String) { o.append(contentsOf: s.utf8) }
        func string(_ s: String) { o.append(contentsOf: JSONString.quoted(s)) }
        func key(_ indent: Int, _ k: String) { text(String(repeating: " ", count: indent) + "\"" + k + "\" : ") }
        /// `items` as a pretty array whose elements sit at `indent` + 2.
        func array(_ count: Int, _ indent: Int, _ element: (Int) -> Void) {
            text("[\n")
            if count == 0 { text("\n") }
            for i in 0..<count {
                element(i)
                text(i + 1 < count ? ",\n" : "\n")
            }
            text(String(repeating: " ", count: indent) + "]")
        }
        text("{\n")
        key(2, "batchSize"); text(String(header.batchSize)); text(",\n")
        key(2, "batches")
        array(entries.count, 2) { i in
            let e = entries[i]
            text("    {\n")
            key(6, "bytes"); text(String(e.bytes)); text(",\n")
            key(6, "documents")
            if let kept = e.kept {
                array(kept.count, 6) { j in
                    text("        "); string(kept[j].hex)
                }
            } else {
                let base = plan.bounds[i]
                array(plan.bounds[i + 1] - base, 6) { j in
                    text("        "); string(plan.id(at: base + j).hex)
                }
            }
            text(",\n")
            key(6, "file"); string(Self.fileName(i)); text(",\n")
            if let sha = e.sha256 { key(6, "sha256"); string(sha); text(",\n") }
            key(6, "skipped")
            array(e.skipped.count, 6) { j in
                let s = e.skipped[j]
                text("        {\n")
                key(10, "code"); string(s.code); text(",\n")
                key(10, "error"); string(s.error); text(",\n")
                key(10, "id"); string(s.id.hex); text(",\n")
                key(10, "name"); string(s.name); text("\n")
                text("        }")
            }
            text(",\n")
            key(6, "status"); string(e.status.rawValue); text("\n")
            text("    }")
        }
        text(",\n")
        key(2, "created"); string(header.created); text(",\n")
        if let max = header.maxBytes { key(2, "maxBytes"); text(String(max)); text(",\n") }
        key(2, "runId"); string(header.runId); text(",\n")
        key(2, "shape"); string(header.shape); text("\n")
        text("}\n")
        return o
    }
}

/// An export folder taken by one run: an exclusive advisory lock on the folder itself (a
/// manifest is replaced by renames, so it cannot carry the lock). A second export into the
/// folder is refused while it is held; a killed run's lock goes with its process.
final class OutputFolder {
    private let fd: SystemPackage.FileDescriptor

    private init(_ fd: SystemPackage.FileDescriptor) { self.fd = fd }

    /// Takes `directory`'s lock without waiting.
    /// - Throws: ``VaultError/Code/busy`` when another export holds it.
    static func lock(_ directory: String) throws -> OutputFolder {
        let fd: SystemPackage.FileDescriptor
        do {
            fd = try SystemPackage.FileDescriptor.open(
                FilePath(directory), .readOnly, options: [.directory, .closeOnExec])
        } catch {
            throw VaultError.posix("cannot open", directory, error)
        }
        guard (try? Platform.lock(fd, wait: false)) == true else {
            try? fd.close()
            throw VaultError(
                .busy, "another export is writing to \(directory)",
                hint: "wait for it to finish, or export into another folder")
        }
        return OutputFolder(fd)
    }

    /// Lets the folder go (closing the descriptor drops the lock).
    func release() { try? fd.close() }
}

/// Runs an export: plans every batch (exact lengths, limits checked) before any work, then
/// produces each payload through a ``PayloadProducer``.
package final class Exporter {
    /// The run id (random).
    package let runID: String
    /// The plan: ids and batch bounds; each batch's records are read when it is produced.
    private let plan: CompactPlan
    private let vault: Vault
    private let options: ExportOptions
    /// The payload format of the run (one sealing for the whole run when sealed).
    private let format: PayloadFormat
    private let onEvent: (ExportEvent) -> Void
    private let progress: ProgressCounter
    private var lastTrim = ContinuousClock.now
    private var hasStarted = false
    /// The output folder's lock while a run writes into it.
    private var folder: OutputFolder?
    /// Set from another thread to stop the run between chunk groups with `CancellationError`
    /// (what the async API does when its task is cancelled).
    let cancellation = CancellationFlag()

    /// Plans the export of `records` (in this order).
    /// - Throws: ``VaultError/Code/usage`` if a document alone exceeds the byte limit.
    package convenience init(
        vault: Vault, records: [DocumentRecord], options: ExportOptions,
        onEvent: @escaping (ExportEvent) -> Void = { _ in }
    ) throws {
        try self.init(
            vault: vault, plan: CompactPlan(records, limits: options.limits, format: options.payloadFormat()),
            options: options, onEvent: onEvent)
    }

    /// Plans the export of the documents `selection` names (in stable order), reading the index
    /// one row at a time: the plan keeps 16 bytes per document, not its record, so memory does
    /// not grow with the vault's metadata. A document the history removed whose object is back
    /// is refused (``Vault/forEachSelected(_:sending:_:)``).
    /// - Throws: ``VaultError/Code/usage`` if a document alone exceeds the byte limit;
    ///   ``VaultError/Code/notFound`` as ``Vault/select(_:)`` does.
    package convenience init(
        vault: Vault, selection: DocumentSelection, options: ExportOptions,
        onEvent: @escaping (ExportEvent) -> Void = { _ in }
    ) throws {
        var plan = CompactPlan(limits: options.limits, format: options.payloadFormat())
        try vault.forEachSelected(selection, sending: true) {
            try plan.add(try vault.exported($0, identities: options.identities))
        }
        plan.finish()
        try self.init(vault: vault, plan: plan, options: options, onEvent: onEvent)
    }

    private init(
        vault: Vault, plan: CompactPlan, options: ExportOptions, onEvent: @escaping (ExportEvent) -> Void
    ) throws {
        self.vault = vault
        self.options = options
        format = options.payloadFormat()
        self.onEvent = onEvent
        self.plan = plan
        runID = UUID().uuidString.lowercased()
        progress = ProgressCounter(total: plan.plaintextBytes, documents: plan.documents)
    }

    /// The number of documents planned.
    package var documents: Int { plan.documents }
    /// The number of batches planned.
    package var batchCount: Int { plan.batchCount }
    /// Total payload bytes of the plan.
    package var payloadBytes: UInt64 { plan.payloadBytes }

    /// Batch `index` (1-based), with its records read from the index.
    private func batch(_ index: Int) throws -> ExportBatch {
        ExportBatch(
            index: index,
            records: try vault.records(plan.ids(ofBatch: index - 1)).map {
                try vault.exported($0, identities: options.identities)
            }, length: plan.lengths[index - 1])
    }

    // MARK: To a folder

    /// Writes `batch-0001.json`, … and `manifest.json` into `directory` (created 0700 if
    /// missing). The manifest lists every planned batch from the start; each payload goes to a
    /// temporary file renamed into place when complete, and its entry turns `complete` in the same
    /// step. An error stops the run with the unfinished batches `failed`; an interrupt (see
    /// ``Interrupts``) with them `interrupted`. A run that completed no batch leaves no manifest.
    package func write(toDirectory directory: String) throws -> ExportSummary {
        let created = try prepare(directory)
        let manifest = ManifestFile(
            path: directory + "/" + ManifestFile.name, plan: plan, runId: runID,
            created: UTCTime(Date()).iso8601,
            shape: options.recipients.isEmpty ? options.shape.rawValue : "sealed",
            batchSize: options.limits.documents, maxBytes: options.limits.bytes)
        // Folders this run made, innermost first: a run that leaves nothing in them leaves no folder.
        let made = created.reversed().map { $0 }
        // Registered before the manifest exists, so no interrupt can leave it unmarked.
        let interrupt = Interrupts.register {
            manifest.finish(as: .interrupted, holdingLock: true)
        }
        // After the temporary payload is removed: only then can the folder be empty.
        let folders = Interrupts.register(emptyFolders: made)
        defer { Interrupts.unregister(interrupt); Interrupts.unregister(folders) }
        do {
            try manifest.write()
            started()
            for index in 1...plan.batchCount { try writeBatch(try batch(index), in: directory, manifest: manifest) }
            try manifest.flush()
            // before the summary and the history record, which name every document
            ProcessMemory.releaseFreeMemoryIfAsked()
        } catch {
            manifest.finish(as: error is CancellationError ? .interrupted : .failed, holdingLock: false)
            for dir in made { FileSystem.removeIfEmpty(dir) }
            folder?.release()
            folder = nil
            throw error
        }
        folder?.release()
        folder = nil
        var summary = ExportSummary(runID: runID, batches: manifest.batches)
        summary.plaintextBytes = progress.total
        onEvent(
            .finished(
                batches: plan.batchCount, documents: summary.documents, skipped: summary.skipped.count,
                payloadBytes: summary.payloadBytes))
        return summary
    }

    /// Checks an output folder without changing anything (what a command does before it asks
    /// for the password): a missing folder (and missing parents) can be made; an existing one
    /// must be a writable folder holding no batch files or manifest of an earlier run, unless
    /// `force` — or unless that run did not finish (interrupted, failed or killed: its manifest
    /// has a batch that is not `complete`, and no export holds the folder): a rerun replaces what
    /// it left. Returns the earlier run's files.
    @discardableResult
    package static func checkOutput(_ directory: String, force: Bool) throws -> [String] {
        switch FileSystem.kind(of: directory) {
        case .missing:
            var ancestor = FileSystem.directory(of: directory)
            while FileSystem.kind(of: ancestor) == .missing && ancestor != "/" && ancestor != "." {
                ancestor = FileSystem.directory(of: ancestor)
            }
            guard FileSystem.kind(of: ancestor) == .directory else {
                throw VaultError(.usage, "\(ancestor) is not a directory")
            }
            guard Platform.isWritable(ancestor) else {
                throw VaultError(
                    .io, "cannot create \(directory): \(ancestor) is not writable", hint: "nothing was exported")
            }
            return []
        case .directory:
            guard Platform.isWritable(directory) else {
                throw VaultError(.io, "cannot write to \(directory): permission denied", hint: "nothing was exported")
            }
        default:
            throw VaultError(.usage, "\(directory) is not a directory")
        }
        let earlier = try FileSystem.list(directory).filter { $0 == ManifestFile.name || ExportBatch.isFileName($0) }
            .sorted()
        if !earlier.isEmpty && !force {
            if let folder = try? OutputFolder.lock(directory) {
                defer { folder.release() }
                if Self.unfinishedRun(in: directory) != nil { return earlier }
            } else {
                throw VaultError(
                    .busy, "another export is writing to \(directory)",
                    hint: "wait for it to finish, or export into another folder")
            }
            throw VaultError(
                .alreadyExists,
                """
                    \(directory) already holds \
                    \(earlier.prefix(3).joined(separator: ", "))\(earlier.count > 3 ? ", …" : "")
                    """
            )
        }
        return earlier
    }

    /// The run id of an unfinished export's manifest in `directory`: one with a batch that is
    /// not `complete` (`pending` after a kill, `interrupted` after a signal, `failed` after an
    /// error).
    static func unfinishedRun(in directory: String) -> String? {
        struct Left: Decodable {
            struct Batch: Decodable { var status: String }
            var runId: String
            var batches: [Batch]
        }
        guard let bytes = try? FileSystem.readFile(directory + "/" + ManifestFile.name, limit: 256 << 20),
              let left = try? JSONDecoder().decode(Left.self, from: Data(bytes)),
              left.batches.contains(where: { $0.status != BatchStatus.complete.rawValue }) else { return nil }
        return left.runId
    }

    /// Checks the folder (creating it and missing parents, 0700) and takes it for this run (an
    /// advisory lock on the folder, held until the run ends), sweeps temporary files killed
    /// exports left, and removes the batch files and manifest of earlier runs (with `force`, or
    /// a killed run's), so the folder never holds a batch file its manifest does not list.
    /// Returns the folders made.
    private func prepare(_ directory: String) throws -> [String] {
        try Self.checkOutput(directory, force: options.force)
        let made = FileSystem.kind(of: directory) == .missing ? try FileSystem.makeDirectories(directory) : []
        do {
            folder = try OutputFolder.lock(directory)
        } catch {
            for dir in made.reversed() { FileSystem.removeIfEmpty(dir) }
            throw error
        }
        guard made.isEmpty else { return made }
        AtomicFile.sweep(directory)
        let unfinished = Self.unfinishedRun(in: directory)
        let earlier = try Self.checkOutput(directory, force: options.force || unfinished != nil)
        for name in earlier { try FileSystem.remove(directory + "/" + name) }
        if !earlier.isEmpty { try FileSystem.syncDirectory(directory) }
        // Said once it is done (a file that could not be removed stops the run first).
        if let unfinished, !earlier.isEmpty, !options.force {
            VaultNotices.post(
                """
                    replaced what the unfinished export \(unfinished.prefix(8)) left in \(directory) \
                    (\(earlier.count == 1 ? "1 file" : "\(earlier.count) files"))
                    """
            )
        }
        return []
    }

    private func started() {
        guard !hasStarted else { return }  // once per run, however many batches are streamed
        hasStarted = true
        onEvent(
            .started(
                runID: runID, documents: progress.documents, batches: plan.batchCount,
                plaintextBytes: progress.total, payloadBytes: payloadBytes))
    }

    private func writeBatch(_ batch: ExportBatch, in directory: String, manifest: ManifestFile) throws {
        onEvent(
            .batchStarted(
                index: batch.index, of: plan.batchCount, documents: batch.records.count, payloadBytes: batch.length))
        let payload = try AtomicFile(destination: directory + "/" + batch.fileName)
        let file = payload.file
        do {
            try file.reserve(batch.length)
        } catch let e as VaultError where e.isNoSpace {
            // A full disk is found before any decryption, with what the batch needs.
            let mib = (Double(batch.length) / 1_048_576 * 10).rounded(.up) / 10
            throw VaultError(
                .io, "no room for \(batch.fileName) in \(directory): it needs \(mib) MiB (no space left on device)",
                hint: "free some space and run the command again; completed batches and the manifest stay",
                cause: e.cause)
        }
        let sink = HashingFileSink(file: file)
        let producer = PayloadProducer(
            vault: vault, records: batch.records, format: format, progress: progress,
            positionBase: plan.bounds[batch.index - 1],
            threads: Parallelism.allCores, identities: options.identities, onEvent: onEvent)
        var skipped: [ManifestSkip] = []
        while true {
            do {
                try checkCancelled()
                guard let block = try producer.next() else { break }
                sink.submit(block)
            } catch let f as DocumentFailure {
                try sink.drain()
                guard options.skipBad else { throw f.error }
                try sink.rewind(to: f.startOffset)
                producer.skipFailedDocument(at: f.startOffset)
                skipped.append(
                    ManifestSkip(
                        id: f.record.id, name: f.record.metadata.name, code: f.error.code.rawValue,
                        error: f.error.message))
            } catch {
                // Cancelled, or a read failed: no queued write may outlive the file it writes to
                // (the temporary file is closed and removed as this returns).
                try? sink.drain()
                throw error
            }
        }
        let digest = try sink.finish()
        let kept = batch.records.filter { producer.written.contains($0.id) }
        let expected = format.length(of: kept)
        guard sink.count == expected else {
            throw VaultError(.internal, "\(batch.fileName): wrote \(sink.count) bytes, expected \(expected)")
        }
        // Payloads are not fsynced: they can be made again from the vault, and the manifest's
        // length and SHA-256 tell a complete file from a torn one.
        try manifest.complete(
            payload, index: batch.index - 1, kept: skipped.isEmpty ? nil : kept.map(\.id), skipped: skipped,
            bytes: expected, sha256: digest)
        onEvent(
            .batchFinished(
                index: batch.index, of: plan.batchCount, file: batch.fileName, payloadBytes: expected, sha256: digest,
                documents: kept.count, skipped: skipped.count))
        releaseFreeMemory()
    }

    /// At most once a second, gives freed heap pages back when the host asked for it (see
    /// ``ProcessMemory/trimHeapBetweenDocuments()``):
    /// the per-document buffers left an export's resident memory swinging by 45 MiB within a
    /// second over documents of 4 KiB (the live heap stays near 20 MiB). A trim walks the heap,
    /// so not after each batch.
    private func releaseFreeMemory() {
        guard ContinuousClock.now - lastTrim >= .seconds(1) else { return }
        ProcessMemory.releaseFreeMemoryIfAsked()
        lastTrim = ContinuousClock.now
    }

    /// Throws `CancellationError` once ``cancellation`` is set: checked before each chunk group.
    private func checkCancelled() throws {
        if cancellation.isSet { throw CancellationError() }
    }

    // MARK: To a stream

    /// Streams the single batch to `output`: standard output, VaultFoundation's `FileHandleSink`
    /// over a file an app holds, or any other ``PayloadSink``. With `skipBad`, each document is verified in full
    /// before its entry starts — a stream cannot be cut back — and damaged ones are left out.
    /// - Throws: ``VaultError/Code/singleBatchNeeded`` when the plan has several batches (write
    ///   each with ``write(batch:to:)``).
    package func write(to output: some PayloadSink) throws -> ExportSummary {
        guard plan.batchCount == 1 else {
            throw VaultError(
                .singleBatchNeeded, "a stream holds a single batch, but the selection needs \(plan.batchCount)")
        }
        return try write(batch: 1, to: output)
    }

    /// Streams batch `index` (1-based, of ``batchCount``) of the plan to `output`, as
    /// ``write(to:)`` streams a single one: an app writes each batch of a larger selection to a
    /// file of its own.
    package func write(batch index: Int, to output: some PayloadSink) throws -> ExportSummary {
        guard (1...plan.batchCount).contains(index) else {
            throw VaultError(.usage, "there is no batch \(index): the plan has \(plan.batchCount)")
        }
        started()
        var batch = try self.batch(index)
        var skipped: [ManifestSkip] = []
        if options.skipBad {
            var good: [DocumentRecord] = []
            for r in batch.records {
                do {
                    let reader = try vault.open(r.id)
                    while try reader.next() != nil { try checkCancelled() }
                    good.append(r)
                } catch {
                    let e = VaultError.from(error)
                    onEvent(.documentSkipped(id: r.id, name: r.metadata.name, error: e))
                    progress.skip(remaining: r.metadata.size)
                    skipped.append(
                        ManifestSkip(id: r.id, name: r.metadata.name, code: e.code.rawValue, error: e.message))
                }
            }
            batch.records = good
            batch.length = format.length(of: good)
        }
        onEvent(
            .batchStarted(index: index, of: plan.batchCount, documents: batch.records.count, payloadBytes: batch.length)
        )
        // Writing runs on its own queue, beside decryption and encoding; blocks go back to the
        // producer's ring once written. Unlike the folder export there is no payload hash, so the
        // writer is light and decryption takes every core (20 x 50 MiB to a pipe, 5 warm runs:
        // median 1.26 s with one decrypting thread, 0.94 s with two).
        let producer = PayloadProducer(
            vault: vault, records: batch.records, format: format, progress: progress,
            threads: Parallelism.allCores, identities: options.identities, onEvent: onEvent)
        let writer = StreamWriteQueue(output)
        do {
            while true {
                try checkCancelled()
                guard let block = try producer.next() else { break }
                writer.submit(block)
                if writer.failed { break }
            }
        } catch let f as DocumentFailure {
            try writer.drain()
            throw f.error
        } catch {
            try? writer.drain()
            throw error
        }
        try writer.drain()
        let count = writer.count
        precondition(count == batch.length, "internal error: streamed \(count) bytes, planned \(batch.length)")
        onEvent(
            .batchFinished(
                index: index, of: plan.batchCount, file: nil, payloadBytes: count, sha256: nil,
                documents: batch.records.count, skipped: skipped.count))
        onEvent(.finished(batches: 1, documents: batch.records.count, skipped: skipped.count, payloadBytes: count))
        var summary = ExportSummary(
            runID: runID,
            batches: [
                ManifestBatch(
                    file: nil, documents: batch.records.map(\.id), skipped: skipped,
                    bytes: count, sha256: nil, status: .complete)
            ])
        summary.plaintextBytes = batch.records.reduce(0) { $0 + $1.metadata.size }
        return summary
    }

}

/// Writes payload blocks to a ``PayloadSink`` on a serial background queue, in order, releasing
/// each block once written; the first write error stops further writes and is thrown by
/// ``drain()``.
final class StreamWriteQueue: @unchecked Sendable {
    // @unchecked: `sink`, `count` and `error` are touched only on `queue` (`failed` reads
    // `error` under `lock`), and by the caller only after `drain()` has waited for the queue.
    private let sink: any PayloadSink
    private let queue = DispatchQueue(label: "vault.export.stream")
    private let lock = NIOLock()
    private var error: Error?
    private(set) var count: UInt64 = 0

    init(_ sink: any PayloadSink) { self.sink = sink }

    func submit(_ block: PayloadBlock) {
        queue.async { [self] in
            defer { block.release() }
            guard !failed else { return }
            do {
                try sink.write(block.bytes)
                count += UInt64(block.bytes.count)
            } catch {
                lock.lock()
                self.error = error
                lock.unlock()
            }
        }
    }

    var failed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return error != nil
    }

    func drain() throws {
        queue.sync {}
        if let error { throw error }
    }
}
