/// Bytes that arrive in pieces: a file, standard input, or a decrypting reader such as
/// ``RNCryptorReader``. What ``Vault/add(from:name:contentType:tags:allowDuplicate:now:progress:)`` encrypts.
package protocol ByteSource: AnyObject {
    /// Reads at most `buffer.count` bytes; 0 at the end. An error ends the source.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension ByteSource {
    /// Reads until `buffer` is full or the source ends; returns the bytes read.
    package func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var total = 0
        while total < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if n == 0 { break }
            total += n
        }
        return total
    }
}

extension OpenFile: ByteSource {}

/// Bytes in memory as a ``ByteSource``.
package final class BytesSource: ByteSource {
    private let bytes: [UInt8]
    private var at = 0

    /// A source of `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = min(buffer.count, bytes.count - at)
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[at..<at + n])) }
        at += n
        return n
    }
}
