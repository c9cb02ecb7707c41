import NIOCore
import VaultCore

/// The payload of one batch read in chunks of any size from any offset: a ``PayloadProducer``
/// started at the offset (it decrypts from the chunk group that covers it, never from a
/// document's start), with the part of its last block that the previous chunk did not take.
final class PayloadChunks {
    private let make: (UInt64) -> PayloadProducer
    private var producer: PayloadProducer?
    private var block: PayloadBlock?
    private var blockAt = 0
    /// The payload offset of the next byte ``read(_:)`` returns.
    private(set) var position: UInt64 = 0

    init(make: @escaping (UInt64) -> PayloadProducer) { self.make = make }

    deinit { block?.release() }

    /// Continues from `offset` (a new producer there, unless it is where reading stands).
    func seek(to offset: UInt64) {
        guard offset != position || producer == nil else { return }
        block?.release()
        block = nil
        producer = make(offset)
        position = offset
    }

    /// The next `count` bytes (fewer only at the end), in a `ByteBuffer` the HTTP client sends
    /// as it is (no second copy of a part in memory).
    func readBuffer(_ count: Int) throws -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: count)
        try out.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
            var filled = 0
            while filled < count, let piece = try next(max: count - filled) {
                UnsafeMutableRawBufferPointer(rebasing: space[filled..<filled + piece.count]).copyMemory(from: piece)
                filled += piece.count
            }
            return filled
        }
        position += UInt64(out.readableBytes)
        return out
    }

    /// The next piece of at most `max` bytes of the current block (nil at the end).
    private func next(max: Int) throws -> UnsafeRawBufferPointer? {
        if producer == nil { seek(to: position) }
        if block == nil || blockAt == block!.bytes.count {
            block?.release()
            block = nil
            guard let next = try producer!.next() else { return nil }
            block = next
            blockAt = 0
        }
        let b = block!.bytes
        let n = min(max, b.count - blockAt)
        defer { blockAt += n }
        return UnsafeRawBufferPointer(rebasing: b[blockAt..<blockAt + n])
    }

    /// The next `count` bytes (fewer only at the end).
    /// - Throws: ``DocumentFailure`` when a document fails authentication.
    func read(_ count: Int) throws -> [UInt8] {
        if producer == nil { seek(to: position) }
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            if block == nil || blockAt == block!.bytes.count {
                block?.release()
                block = nil
                guard let next = try producer!.next() else { break }
                block = next
                blockAt = 0
            }
            let b = block!.bytes
            let n = min(count - out.count, b.count - blockAt)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[blockAt..<blockAt + n]))
            blockAt += n
        }
        position += UInt64(out.count)
        return out
    }
}
