// VaultCore's conveniences for Foundation's `FileHandle` and `InputStream`, in a module of their
// own: VaultCore uses only FoundationEssentials, so that the `vault` binary links neither ICU nor
// Foundation's classes (docs/PERFORMANCE.md, "start-up and size"); an app that holds these types
// imports this module too.
import Foundation
import VaultCore

/// A vault's documents, added from a Foundation `InputStream`.
extension Vault {
    /// Encrypts everything `stream` yields (a camera's output, a download) into a new document,
    /// reading it on the worker thread until it ends; the stream is opened if it is not yet open.
    /// Do not use the stream elsewhere until this returns.
    public func add(
        from stream: InputStream, name: String, contentType: String? = nil, tags: [String] = [],
        allowDuplicate: Bool = false
    ) async throws -> DocumentRecord {
        try Task.checkCancellation()
        let handed = Handed(stream)  // the caller leaves it alone until we return (above)
        return try await Offload.run { [self] in
            try add(
                from: InputStreamSource(handed.value), name: name, contentType: contentType, tags: tags,
                allowDuplicate: allowDuplicate)
        }
    }
}

/// An export's batches, written into a Foundation `FileHandle`.
extension ExportOperation {
    /// Writes the single batch of the plan to `handle` at its position.
    /// - Throws: `VaultError.Code.singleBatchNeeded` when the plan has several batches (write
    ///   each with ``write(batch:to:)``); `CancellationError`; `VaultError` for a damaged
    ///   document or a failed write, after cutting the file back.
    public func write(to handle: FileHandle) async throws -> ExportSummary {
        try await write(batch: 1, to: handle) { exporter, sink in try exporter.write(to: sink) }
    }

    /// Writes batch `index` (1-based, of `batchCount`) to `handle` at its position: one file per
    /// batch, for an upload task that sends a file.
    public func write(batch index: Int, to handle: FileHandle) async throws -> ExportSummary {
        try await write(batch: index, to: handle) { exporter, sink in try exporter.write(batch: index, to: sink) }
    }

    /// Runs `body` with a sink over `handle`; when it throws, cuts the file back to where it began.
    private func write(
        batch index: Int, to handle: FileHandle,
        _ body: @escaping @Sendable (Exporter, FileHandleSink) throws -> ExportSummary
    ) async throws -> ExportSummary {
        try await run(batches: [index]) { exporter in
            let start = try? handle.offset()  // nil for a pipe, which cannot be cut back
            do {
                return try body(exporter, FileHandleSink(handle))
            } catch {
                if let start { try? handle.truncate(atOffset: start) }
                throw error
            }
        }
    }
}

/// A Foundation `FileHandle` an app holds (an output file, a pipe) as a `PayloadSink`: the
/// payload is written at the handle's position.
public final class FileHandleSink: PayloadSink {
    /// The handle written to.
    public let handle: FileHandle

    /// A sink writing to `handle`.
    public init(_ handle: FileHandle) { self.handle = handle }

    /// Writes `bytes` at the handle's position, all of them, or throws a `VaultError` (io).
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            try handle.write(contentsOf: bytes)
        } catch {
            throw VaultError(.io, "cannot write the payload: \(error.localizedDescription)", cause: error)
        }
    }
}

/// A Foundation `InputStream` as a byte source.
final class InputStreamSource: ByteSource {
    private let stream: InputStream

    init(_ stream: InputStream) {
        self.stream = stream
        if stream.streamStatus == .notOpen { stream.open() }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress,
              !buffer.isEmpty else { return 0 }
        let n = stream.read(base.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
        guard n >= 0 else {
            throw VaultError(
                .io, "cannot read the stream: \(stream.streamError?.localizedDescription ?? "unknown error")",
                cause: stream.streamError)
        }
        return n
    }
}

/// The stream, handed to the worker thread while the caller waits for it.
private struct Handed<T>: @unchecked Sendable {
    // @unchecked: the caller does not use the value until the work returns.
    let value: T
    init(_ value: T) { self.value = value }
}
