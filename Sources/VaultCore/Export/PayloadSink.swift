import Foundation

/// Where a streamed payload goes: anything that takes bytes in order — standard output, a
/// file an app already holds open (`FileHandle`), an app's own upload stream. Used by
/// ``Exporter/write(to:)``; each call's bytes are valid only during the call.
public protocol PayloadSink: AnyObject {
    /// Takes the next bytes of the payload, all of them, or throws.
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension FileDescriptor: PayloadSink {}

/// A Foundation `FileHandle` (what an app holds for an output file) takes a payload as it is.
extension FileHandle: PayloadSink {
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            try write(contentsOf: bytes)
        } catch {
            throw VaultError(.io, "cannot write the payload: \(error.localizedDescription)", cause: error)
        }
    }
}
