import Foundation

/// Where a streamed payload goes: anything that takes bytes in order — standard output, a
/// file an app already holds open (``FileHandleSink``), an app's own upload stream. Used by
/// ``ExportOperation``'s writes; each call's bytes are valid only during the call.
public protocol PayloadSink: AnyObject {
    /// Takes the next bytes of the payload, all of them, or throws.
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension OpenFile: PayloadSink {}

/// A Foundation `FileHandle` an app holds (an output file, a pipe) as a ``PayloadSink``: the
/// payload is written at the handle's position.
public final class FileHandleSink: PayloadSink {
    /// The handle written to.
    public let handle: FileHandle

    /// A sink writing to `handle`.
    public init(_ handle: FileHandle) { self.handle = handle }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            try handle.write(contentsOf: bytes)
        } catch {
            throw VaultError(.io, "cannot write the payload: \(error.localizedDescription)", cause: error)
        }
    }
}
