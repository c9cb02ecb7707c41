import Crypto
import Foundation

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
    /// Documents cut out (`--skip-bad`).
    public var skipped: [ManifestSkip] { batches.flatMap(\.skipped) }
    /// Payload bytes written.
    public var payloadBytes: UInt64 { batches.reduce(0) { $0 + $1.bytes } }
}

/// One batch in `manifest.json`.
public struct ManifestBatch: Codable, Sendable {
    /// File name in the export folder (nil on stdout).
    public var file: String?
    /// Ids of the documents in the payload, in order.
    public var documents: [String]
    /// Documents cut out of this batch.
    public var skipped: [ManifestSkip]
    /// Payload length.
    public var bytes: UInt64
    /// SHA-256 of the payload (hex).
    public var sha256: String?
    /// Where the batch stands.
    public var status: BatchStatus
}

/// Where a batch stands: the one status of the export manifest's batches and the upload
/// journal's.
public enum BatchStatus: String, Codable, Sendable {
    /// Not written (or sent) yet.
    case pending
    /// The payload file is in place (or the server confirmed it).
    case complete
    /// The run stopped with an error before this batch was done.
    case failed
    /// The run was interrupted (SIGINT, SIGTERM, SIGHUP) before this batch was done.
    case interrupted

    /// Reads a status; `confirmed` (what upload journals of version 1 wrote) is `complete`.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let status = text == "confirmed" ? .complete : BatchStatus(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown batch status '\(text)'"))
        }
        self = status
    }
}

/// What the export manifest and the upload journal both keep about a batch.
public protocol BatchBookkeeping {
    /// Ids of the documents in the payload, in order.
    var documents: [String] { get }
    /// The payload's exact length.
    var bytes: UInt64 { get }
    /// Where it stands.
    var status: BatchStatus { get }
}

extension ManifestBatch: BatchBookkeeping {}

/// A document left out of a batch, and why.
public struct ManifestSkip: Codable, Sendable {
    /// Its id.
    public var id: String
    /// Its name.
    public var name: String
    /// The error code.
    public var code: String
    /// The error message.
    public var error: String
}

/// `manifest.json` of an export folder.
struct Manifest: Codable {
    var runId: String
    var created: String
    var shape: String
    var batchSize: Int
    var maxBytes: UInt64?
    var batches: [ManifestBatch]
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
final class ManifestFile: @unchecked Sendable {
    // @unchecked: `manifest` and `waiting` are touched only with `lock` held.
    static let name = "manifest.json"
    private let lock = NSLock()
    private var manifest: Manifest
    private let path: String
    /// Completed payloads not yet renamed into place, with their entries.
    private var waiting: [(payload: AtomicFile, entry: ManifestBatch, index: Int)] = []
    private var waitingBytes: UInt64 = 0
    private var lastWrite = ContinuousClock.now
    private var manifestBytes = 0

    init(path: String, manifest: Manifest) {
        self.path = path
        self.manifest = manifest
    }

    /// The batches as they stand.
    var batches: [ManifestBatch] {
        lock.lock(); defer { lock.unlock() }
        return manifest.batches
    }

    /// Changes the manifest and writes it (with the batches waiting).
    func update(_ body: (inout Manifest) throws -> Void) throws {
        lock.lock(); defer { lock.unlock() }
        try body(&manifest)
        try writeLocked()
    }

    /// A batch is complete: its payload (a finished temporary file) is renamed into place and its
    /// entry turns `complete` at the next manifest write (see the type's description).
    func complete(_ payload: AtomicFile, entry: ManifestBatch, index: Int) throws {
        lock.lock(); defer { lock.unlock() }
        waiting.append((payload, entry, index))
        waitingBytes += entry.bytes
        // Each waiting payload holds a descriptor: at most 64 wait.
        if waitingBytes >= UInt64(manifestBytes) || waiting.count >= 64 || ContinuousClock.now - lastWrite >= .seconds(1) { try writeLocked() }
    }

    /// Writes the waiting batches and the manifest now.
    func flush() throws {
        lock.lock(); defer { lock.unlock() }
        if !waiting.isEmpty { try writeLocked() }
    }

    private func writeLocked() throws {
        for w in waiting {
            try w.payload.commit(replace: false, sync: false)
            manifest.batches[w.index] = w.entry
        }
        waiting = []
        waitingBytes = 0
        let bytes = Exporter.encode(manifest)
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
        for w in waiting {   // complete files: kept
            if (try? w.payload.commit(replace: false, sync: false)) != nil { manifest.batches[w.index] = w.entry }
        }
        waiting = []
        guard manifest.batches.contains(where: { $0.status == .complete }) else {
            try? FileSystem.remove(path)
            return
        }
        for i in manifest.batches.indices where manifest.batches[i].status == .pending { manifest.batches[i].status = status }
        try? AtomicFile.write(Exporter.encode(manifest), to: path)
    }
}

/// Runs an export: plans every batch (exact lengths, limits checked) before any work, then
/// produces each payload through a ``PayloadProducer``.
public final class Exporter {
    /// The run id (random).
    public let runID: String
    /// The planned batches.
    public let batches: [ExportBatch]
    private let vault: Vault
    private let options: ExportOptions
    private let onEvent: (ExportEvent) -> Void
    private let progress: ProgressCounter
    /// How many documents come before each batch.
    private let positionBases: [Int]

    /// Plans the export of `records` (in this order).
    /// - Throws: ``VaultError/Code/usage`` if a document alone exceeds the byte limit.
    public init(vault: Vault, records: [DocumentRecord], options: ExportOptions,
                onEvent: @escaping (ExportEvent) -> Void = { _ in }) throws {
        self.vault = vault
        self.options = options
        self.onEvent = onEvent
        runID = UUID().uuidString.lowercased()
        batches = try BatchPlanner.plan(records, limits: options.limits, shape: options.shape)
        var base = 0
        positionBases = batches.map { b in defer { base += b.records.count }; return base }
        progress = ProgressCounter(total: records.reduce(0) { $0 + $1.metadata.size }, documents: records.count)
    }

    /// Total payload bytes of the plan.
    public var payloadBytes: UInt64 { batches.reduce(0) { $0 + $1.length } }

    // MARK: To a folder

    /// Writes `batch-0001.json`, … and `manifest.json` into `directory` (created 0700 if
    /// missing). The manifest lists every planned batch from the start; each payload goes to a
    /// temporary file renamed into place when complete, and its entry turns `complete` in the same
    /// step. An error stops the run with the unfinished batches `failed`; an interrupt (see
    /// ``Interrupts``) with them `interrupted`. A run that completed no batch leaves no manifest.
    public func write(toDirectory directory: String) throws -> ExportSummary {
        try prepare(directory)
        let manifest = ManifestFile(path: directory + "/" + ManifestFile.name, manifest: Manifest(
            runId: runID, created: ISO8601DateFormatter().string(from: Date()), shape: options.shape.rawValue,
            batchSize: options.limits.documents, maxBytes: options.limits.bytes,
            batches: batches.map { ManifestBatch(file: $0.fileName, documents: $0.records.map(\.id.hex), skipped: [],
                                                 bytes: $0.length, sha256: nil, status: .pending) }))
        // Registered before the manifest exists, so no interrupt can leave it unmarked.
        let interrupt = Interrupts.register { manifest.finish(as: .interrupted, holdingLock: true) }
        defer { Interrupts.unregister(interrupt) }
        try manifest.update { _ in }
        started()
        do {
            for batch in batches { try writeBatch(batch, in: directory, manifest: manifest) }
            try manifest.flush()
        } catch {
            manifest.finish(as: .failed, holdingLock: false)
            throw error
        }
        let summary = ExportSummary(runID: runID, batches: manifest.batches)
        onEvent(.finished(batches: batches.count, documents: summary.documents, skipped: summary.skipped.count, payloadBytes: summary.payloadBytes))
        return summary
    }

    /// Checks the folder (creating it if missing), sweeps temporary files killed exports left,
    /// and with `force` removes the batch files and manifest of earlier runs, so the folder never
    /// holds a batch file its manifest does not list.
    private func prepare(_ directory: String) throws {
        switch FileSystem.kind(of: directory) {
        case .missing:
            try FileSystem.makeDirectory(directory)
            return
        case .directory:
            guard Platform.isWritable(directory) else {
                throw VaultError(.io, "cannot write to \(directory): permission denied", hint: "nothing was exported")
            }
        default:
            throw VaultError(.usage, "\(directory) is not a directory")
        }
        AtomicFile.sweep(directory)
        let earlier = try FileSystem.list(directory).filter { $0 == ManifestFile.name || ExportBatch.isFileName($0) }.sorted()
        guard !earlier.isEmpty else { return }
        guard options.force else {
            throw VaultError(.alreadyExists, "\(directory) already holds \(earlier.prefix(3).joined(separator: ", "))\(earlier.count > 3 ? ", …" : "")")
        }
        for name in earlier { try FileSystem.remove(directory + "/" + name) }
        try FileSystem.syncDirectory(directory)
    }

    private func started() {
        onEvent(.started(runID: runID, documents: progress.documents, batches: batches.count,
                         plaintextBytes: progress.total, payloadBytes: payloadBytes))
    }

    private func writeBatch(_ batch: ExportBatch, in directory: String, manifest: ManifestFile) throws {
        onEvent(.batchStarted(index: batch.index, of: batches.count, documents: batch.records.count, payloadBytes: batch.length))
        let payload = try AtomicFile(destination: directory + "/" + batch.fileName)
        let file = payload.file
        do {
            try file.reserve(batch.length)
        } catch let e as VaultError where e.isNoSpace {
            // A full disk is found before any decryption, with what the batch needs.
            let mib = (Double(batch.length) / 1_048_576 * 10).rounded(.up) / 10
            throw VaultError(.io, "no room for \(batch.fileName) in \(directory): it needs \(mib) MiB (no space left on device)",
                             hint: "free some space and run the command again; completed batches and the manifest stay", cause: e.cause)
        }
        let sink = HashingFileSink(file: file)
        let producer = PayloadProducer(vault: vault, records: batch.records, shape: options.shape, progress: progress,
                                       positionBase: positionBases[batch.index - 1],
                                       threads: Parallelism.allCores, onEvent: onEvent)
        var skipped: [ManifestSkip] = []
        while true {
            do {
                guard let block = try producer.next() else { break }
                sink.submit(block)
            } catch let f as DocumentFailure {
                try sink.drain()
                guard options.skipBad else { throw f.error }
                try sink.rewind(to: f.startOffset)
                producer.skipFailedDocument(at: f.startOffset)
                skipped.append(ManifestSkip(id: f.record.id.hex, name: f.record.metadata.name, code: f.error.code.rawValue, error: f.error.message))
            }
        }
        let digest = try sink.finish()
        let kept = batch.records.filter { producer.written.contains($0.id) }
        let expected = PayloadFraming.length(of: kept, shape: options.shape)
        guard sink.count == expected else {
            throw VaultError(.internal, "\(batch.fileName): wrote \(sink.count) bytes, expected \(expected)")
        }
        // Payloads are not fsynced: they can be made again from the vault, and the manifest's
        // length and SHA-256 tell a complete file from a torn one.
        try manifest.complete(payload, entry: ManifestBatch(file: batch.fileName, documents: kept.map(\.id.hex), skipped: skipped,
                                                            bytes: expected, sha256: digest, status: .complete), index: batch.index - 1)
        onEvent(.batchFinished(index: batch.index, of: batches.count, file: batch.fileName, payloadBytes: expected, sha256: digest,
                               documents: kept.count, skipped: skipped.count))
    }

    // MARK: To a stream

    /// Streams the single batch to `output`: standard output, a `FileHandle` an app holds, or
    /// any other ``PayloadSink``. With `skipBad`, each document is verified in full before its
    /// entry starts — a stream cannot be cut back — and damaged ones are left out.
    public func write(to output: some PayloadSink) throws -> ExportSummary {
        guard batches.count == 1 else {
            throw VaultError(.singleBatchNeeded, "a stream holds a single batch, but the selection needs \(batches.count)")
        }
        started()
        var batch = batches[0]
        var skipped: [ManifestSkip] = []
        if options.skipBad {
            var good: [DocumentRecord] = []
            for r in batch.records {
                do {
                    let reader = try vault.open(r.id)
                    while try reader.next() != nil {}
                    good.append(r)
                } catch {
                    let e = VaultError.from(error)
                    onEvent(.documentSkipped(id: r.id, name: r.metadata.name, error: e))
                    progress.skip(remaining: r.metadata.size)
                    skipped.append(ManifestSkip(id: r.id.hex, name: r.metadata.name, code: e.code.rawValue, error: e.message))
                }
            }
            batch.records = good
            batch.length = PayloadFraming.length(of: good, shape: options.shape)
        }
        onEvent(.batchStarted(index: 1, of: 1, documents: batch.records.count, payloadBytes: batch.length))
        // Writing runs on its own queue, beside decryption and encoding; blocks go back to the
        // producer's ring once written. Unlike the folder export there is no payload hash, so the
        // writer is light and decryption takes every core (20 x 50 MiB to a pipe, 5 warm runs:
        // median 1.26 s with one decrypting thread, 0.94 s with two).
        let producer = PayloadProducer(vault: vault, records: batch.records, shape: options.shape, progress: progress,
                                       threads: Parallelism.allCores, onEvent: onEvent)
        let writer = StreamWriteQueue(output)
        do {
            while let block = try producer.next() {
                writer.submit(block)
                if writer.failed { break }
            }
        } catch let f as DocumentFailure {
            try writer.drain()
            throw f.error
        }
        try writer.drain()
        let count = writer.count
        precondition(count == batch.length, "internal error: streamed \(count) bytes, planned \(batch.length)")
        onEvent(.batchFinished(index: 1, of: 1, file: nil, payloadBytes: count, sha256: nil, documents: batch.records.count, skipped: skipped.count))
        onEvent(.finished(batches: 1, documents: batch.records.count, skipped: skipped.count, payloadBytes: count))
        return ExportSummary(runID: runID, batches: [ManifestBatch(file: nil, documents: batch.records.map(\.id.hex), skipped: skipped,
                                                                   bytes: count, sha256: nil, status: .complete)])
    }

    static func encode(_ manifest: Manifest) -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try! e.encode(manifest)) + [0x0a]
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
    private let lock = NSLock()
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
