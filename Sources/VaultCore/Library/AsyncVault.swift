import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

// The async entry points an app uses: each runs the synchronous pipeline the command-line tool
// uses (one code path) on a thread of its own, so Argon2id, file I/O and decryption never hold
// one of Swift concurrency's few cooperative threads, and each honours `Task` cancellation.

extension SecretBytes {
    /// A password given as a `String`: its UTF-8 bytes, exactly as typed (no Unicode
    /// normalisation, as the command-line tool reads them), copied into wiped memory at once.
    public convenience init(password: String) throws {
        var text = password  // a native string lends its UTF-8 storage: no further copy is made
        try self.init(count: text.utf8.count) { buffer in
            text.withUTF8 { buffer.copyMemory(from: UnsafeRawBufferPointer($0)) }
        }
    }

    /// A password given as `Data`, copied into wiped memory at once (wipe your own copy when done).
    public convenience init(password: Data) throws {
        try self.init(count: password.count) { buffer in _ = password.copyBytes(to: buffer) }
    }
}

extension VaultStore {
    /// The vault in the folder `url` (a file URL); nothing is read yet.
    public init(url: URL) {
        self.init(root: url.path)
    }

    /// Creates a new vault in this folder, which must be missing or empty, and returns it unlocked.
    /// Runs Argon2id once with `kdf`: ``KDFParameters/moderate`` (the default) takes 256 MiB of
    /// memory for about 0.7 s; ``KDFParameters/interactive`` takes 64 MiB, for devices with little.
    /// - Throws: ``VaultError`` with ``VaultError/Code/alreadyExists`` for a vault or a non-empty
    ///   folder, ``VaultError/Code/usage`` for an empty password.
    public func create(password: String, kdf: KDFParameters = .moderate) async throws -> Vault {
        let secret = try SecretBytes(password: password)
        return try await Offload.run { try create(password: secret, kdf: kdf) }
    }

    /// Opens the vault in this folder with `password`: one Argon2id run, then the key check, so a
    /// wrong password is reported before any document is touched.
    /// - Throws: ``VaultError`` with ``VaultError/Code/wrongPassword``, ``VaultError/Code/notFound``
    ///   when the folder holds no vault, ``VaultError/Code/vaultDamaged`` when its key file is damaged.
    public func unlock(password: String) async throws -> Vault {
        let secret = try SecretBytes(password: password)
        return try await Offload.run { try unlock(password: secret) }
    }

    /// ``unlock(password:)-(String)`` with the password as `Data` (from the Keychain, say).
    public func unlock(password: Data) async throws -> Vault {
        let secret = try SecretBytes(password: password)
        return try await Offload.run { try unlock(password: secret) }
    }
}

extension Vault {
    /// Encrypts the file at `url` into a new document, durably, and returns its record.
    /// - Parameters:
    ///   - url: the file (a file URL); it is read once, front to back.
    ///   - name: the document's name (default: the file's name).
    ///   - contentType: the MIME type, or nil to detect it from the first bytes.
    ///   - tags: labels to select documents by (``DocumentSelection``).
    ///   - allowDuplicate: add it even when a document with the same contents is in the vault;
    ///     otherwise that is ``VaultError/Code/duplicate`` and nothing is added.
    /// - Throws: `CancellationError` when the task is cancelled first (nothing is added);
    ///   ``VaultError`` otherwise.
    public func add(
        fileAt url: URL, name: String? = nil, contentType: String? = nil, tags: [String] = [],
        allowDuplicate: Bool = false
    ) async throws -> DocumentRecord {
        try Task.checkCancellation()
        return try await Offload.run { [self] in
            let file = try OpenFile.openForReading(url.path)
            let input = try ReadAheadFile(file, window: ReadAheadFile.inputWindow)
            return try add(
                from: input, name: name ?? url.lastPathComponent, contentType: contentType, tags: tags,
                allowDuplicate: allowDuplicate)
        }
    }

    /// Encrypts the files at `urls` into new documents, one each, in one session: the folder is
    /// synced and the index updated once, and one history record names every document added.
    /// `onError` decides what a file that cannot be added means (``AddErrorAction``): by default
    /// a file whose contents are already in the vault is left out, and any other error stops
    /// the add there, keeping what was added before it.
    /// - Parameters:
    ///   - urls: the files (file URLs), each read once, front to back, when its turn comes.
    ///   - tags: labels for every document added.
    ///   - allowDuplicate: add a file even when its contents are already in the vault.
    ///   - onError: called with a file's URL and why it cannot be added.
    /// - Returns: what was added, what was left out and what stopped the add.
    /// - Throws: `CancellationError` when the task is cancelled first; the stopping error when
    ///   it stopped before anything was added (nothing is added then).
    public func add(
        filesAt urls: [URL], tags: [String] = [], allowDuplicate: Bool = false,
        onError: @escaping @Sendable (URL, VaultError) -> AddErrorAction = { AddErrorAction.skippingDuplicates($1) }
    ) async throws -> AddFilesSummary {
        try Task.checkCancellation()
        return try await Offload.run { [self] in
            let inputs = urls.map { url in
                AddInput(shown: url.path, name: url.lastPathComponent, size: 0) {
                    try ReadAheadFile(try OpenFile.openForReading(url.path), window: ReadAheadFile.inputWindow)
                }
            }
            let session = try AddSession(vault: self)
            let outcome = try session.addAll(
                inputs, tags: tags, allowDuplicate: allowDuplicate,
                onError: { input, error in onError(URL(fileURLWithPath: input.shown), error) })
            if let stopped = outcome.stopped, outcome.added.isEmpty { throw stopped.error }
            return AddFilesSummary(
                added: outcome.added.map(\.record),
                leftOut: outcome.skipped.map { .init(url: urls[$0.input], error: $0.error) },
                stopped: outcome.stopped.map { .init(url: urls[$0.input], error: $0.error) },
                notTried: outcome.notTried)
        }
    }

    /// Encrypts `data` into a new document named `name`, durably, and returns its record.
    public func add(
        _ data: Data, name: String, contentType: String? = nil, tags: [String] = [],
        allowDuplicate: Bool = false
    ) async throws -> DocumentRecord {
        try Task.checkCancellation()
        return try await Offload.run { [self] in
            try add(
                from: BytesSource(Array(data)), name: name, contentType: contentType, tags: tags,
                allowDuplicate: allowDuplicate)
        }
    }

    /// Deletes documents for good (a delivered batch, say): their envelopes are unlinked, the
    /// index updated and the removal recorded in the vault's history, under the vault's writer
    /// lock; a crash midway is finished by the next writer.
    /// - Parameter ids: the documents' ids.
    /// - Throws: ``VaultError/Code/notFound`` when one of them is not in the vault (nothing is removed).
    public func remove(_ ids: [DocumentID]) async throws {
        try Task.checkCancellation()
        try await Offload.run { [self] in
            _ = try records(ids)  // every id known, or nothing is removed
            try removeDocuments(ids)
        }
    }

    /// Every document, oldest first. Objects whose envelope cannot be read are left out (an
    /// audit names them).
    public func documents() async throws -> [DocumentRecord] {
        try await Offload.run { [self] in try records().records }
    }

    /// The plaintext of document `id`, or of the bytes `range` of it (clamped to its end): only the
    /// 64 KiB chunks covering the range are decrypted, and every byte returned has authenticated.
    /// A whole document is held in memory: an export (``prepareExport(_:options:)``) streams one
    /// instead.
    public func read(_ id: DocumentID, range: Range<UInt64>? = nil) async throws -> Data {
        try Task.checkCancellation()
        return try await Offload.run { [self] in
            let reader = try randomAccess(id)
            let range = range ?? 0..<reader.size
            guard range.upperBound > range.lowerBound else { return Data() }
            let count = min(range.upperBound - range.lowerBound, UInt64(Int.max))
            return Data(try reader.read(at: range.lowerBound, count: Int(count)))
        }
    }

    /// Plans an export of the documents `selection` names (default: all), in batches of at most
    /// `options.limits`; nothing is decrypted yet. Write it with the returned operation's
    /// `write` methods, and follow its ``ExportOperation/progress``.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` for a query,
    ///   ``VaultError/Code/usage`` when a document alone exceeds the byte limit.
    public func prepareExport(
        _ selection: DocumentSelection = DocumentSelection(),
        options: ExportOptions = ExportOptions()
    ) async throws -> ExportOperation {
        try await Offload.run { [self] in try ExportOperation(vault: self, selection: selection, options: options) }
    }
}

/// What an add of several files did (``Vault/add(filesAt:tags:allowDuplicate:onError:)``).
public struct AddFilesSummary: Sendable {
    /// A file that was not added, and why.
    public struct NotAdded: Sendable {
        /// The file.
        public var url: URL
        /// Why it was not added (``VaultError/Code/duplicate`` for contents already in the vault).
        public var error: VaultError
    }
    /// The documents added, in the order of their files.
    public var added: [DocumentRecord]
    /// The files left out (``AddErrorAction/skip``), with why.
    public var leftOut: [NotAdded]
    /// The file that stopped the add (``AddErrorAction/stop``) after others were added, if any.
    public var stopped: NotAdded?
    /// Files after the one that stopped the add, never tried.
    public var notTried: Int
}

/// Where an export has got to: plaintext bytes authenticated and written, documents done.
public struct ExportProgress: Sendable, Equatable {
    /// Plaintext bytes authenticated and written so far.
    public var completedBytes: UInt64
    /// Plaintext bytes in the whole plan (less any document skipped).
    public var totalBytes: UInt64
    /// Documents whole in a payload so far.
    public var completedDocuments: Int
    /// Documents in the plan.
    public var totalDocuments: Int
    /// The batch being written (1-based), and how many the plan has.
    public var batch: Int
    /// Batches in the plan.
    public var batches: Int

    /// `completedBytes` over `totalBytes` (1 for a plan of empty documents once it is done).
    public var fractionCompleted: Double {
        totalBytes == 0 ? (completedDocuments == totalDocuments ? 1 : 0) : Double(completedBytes) / Double(totalBytes)
    }
}

/// A planned export: its size is known before any document is decrypted, its progress is an
/// `AsyncSequence`, and each `write` is `async`, runs the decrypt pipeline on a thread of its own
/// (one chunk group of each document in memory at a time), and honours `Task` cancellation.
///
/// Cancelling the writing task stops the pipeline before its next chunk group and throws
/// `CancellationError`. What was written goes away: a file handle is cut back to where the payload
/// began (a pipe cannot be); in a folder the unfinished batch's temporary file is removed, batches
/// completed before stay, and the manifest marks the rest `interrupted`. A cancelled operation
/// stays cancelled.
public final class ExportOperation: @unchecked Sendable {
    // @unchecked: `exporter` is used only inside `run`, under `lock`, by one worker thread at a
    // time; everything else is immutable or Sendable (the flag, the stream's continuation).
    private let exporter: Exporter
    private let cancellation: CancellationFlag
    private let lock = NIOLock()
    private let continuation: AsyncStream<ExportProgress>.Continuation
    private var written: Set<Int> = []  // batches written (under `lock`)

    /// The progress of the writes: a consumer slower than the pipeline sees the latest value,
    /// never a backlog. It ends when every batch has been written, or a write throws. One
    /// consumer: leaving its loop early ends the sequence.
    public let progress: AsyncStream<ExportProgress>
    /// Documents in the plan.
    public let documents: Int
    /// Batches in the plan (each one payload of at most `options.limits`).
    public let batchCount: Int
    /// Bytes of payload the plan will write, exactly.
    public let payloadBytes: UInt64

    /// - Parameter observer: also sees every pipeline event, on the pipeline's thread (tests).
    init(
        vault: Vault, selection: DocumentSelection, options: ExportOptions, observer: ((ExportEvent) -> Void)? = nil
    ) throws {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ExportProgress.self, bufferingPolicy: .bufferingNewest(1))
        let tracker = ProgressTracker(continuation)
        exporter = try Exporter(vault: vault, selection: selection, options: options) { event in
            tracker.take(event)
            observer?(event)
        }
        cancellation = exporter.cancellation
        progress = stream
        self.continuation = continuation
        documents = exporter.documents
        batchCount = exporter.batchCount
        payloadBytes = exporter.payloadBytes
    }

    deinit { continuation.finish() }

    /// Writes every batch into the folder `url` as `batch-0001.json`, … with `manifest.json`
    /// (created 0700 if missing; files 0600), each payload renamed into place when complete.
    public func write(toDirectory url: URL) async throws -> ExportSummary {
        try await run(batches: Set(1...batchCount)) { exporter in try exporter.write(toDirectory: url.path) }
    }

    /// Writes the single batch to `sink`, an app's own ``PayloadSink``.
    public func write(to sink: some PayloadSink & Sendable) async throws -> ExportSummary {
        try await run(batches: [1]) { exporter in try exporter.write(to: sink) }
    }

    /// Runs `body`, which writes `batches`, on a worker thread, one write at a time; ends
    /// ``progress`` when it throws or every batch has been written.
    package func run(
        batches: Set<Int>, _ body: @escaping @Sendable (Exporter) throws -> ExportSummary
    ) async throws -> ExportSummary {
        do {
            try Task.checkCancellation()
            return try await withTaskCancellationHandler {
                try await Offload.run { [self] in
                    lock.lock()
                    defer { lock.unlock() }
                    let summary = try body(exporter)
                    written.formUnion(batches)
                    if written.count == batchCount { continuation.finish() }
                    return summary
                }
            } onCancel: { [cancellation] in
                cancellation.set()
            }
        } catch {
            continuation.finish()
            throw error
        }
    }
}

/// Turns the pipeline's events into ``ExportProgress`` values. Called on the worker thread only.
private final class ProgressTracker {
    private let continuation: AsyncStream<ExportProgress>.Continuation
    private var current = ExportProgress(
        completedBytes: 0, totalBytes: 0, completedDocuments: 0, totalDocuments: 0, batch: 0, batches: 0)

    init(_ continuation: AsyncStream<ExportProgress>.Continuation) { self.continuation = continuation }

    func take(_ event: ExportEvent) {
        switch event {
        case .started(_, let documents, let batches, let plaintextBytes, _):
            current.totalDocuments = documents
            current.batches = batches
            current.totalBytes = plaintextBytes
        case .batchStarted(let index, let of, _, _):
            current.batch = index
            current.batches = of
        case .progress(let done, let total):
            current.completedBytes = done
            current.totalBytes = total
        case .documentFinished:
            current.completedDocuments += 1
        case .documentSkipped, .documentStarted, .batchFinished, .finished:
            return
        }
        continuation.yield(current)
    }
}

/// Runs blocking work (Argon2id, file I/O, the decrypt pipeline) on a Dispatch thread rather than
/// on Swift concurrency's cooperative pool, which it would hold for its whole duration.
package enum Offload {
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
