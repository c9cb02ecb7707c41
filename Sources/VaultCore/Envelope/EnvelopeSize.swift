/// Size arithmetic of the chunked payload (age's STREAM rules).
///
/// The plaintext is cut into 64 KiB chunks; each sealed chunk adds a 16-byte tag. The final
/// chunk may be full, and is empty only when the whole plaintext is empty (then there is one
/// empty final chunk). So every plaintext length has exactly one payload length and back.
package enum EnvelopeSize {
    /// Number of chunks for `plaintextSize` bytes (at least one).
    package static func chunkCount(plaintextSize: UInt64) -> UInt64 {
        plaintextSize == 0
            ? 1 : (plaintextSize + UInt64(EnvelopeFormat.chunkSize) - 1) / UInt64(EnvelopeFormat.chunkSize)
    }

    /// Payload bytes (all sealed chunks) for `plaintextSize` bytes of plaintext.
    package static func payloadSize(plaintextSize: UInt64) -> UInt64 {
        plaintextSize + chunkCount(plaintextSize: plaintextSize) * UInt64(EnvelopeFormat.tagSize)
    }

    /// The plaintext size that a payload of `payloadSize` bytes must hold, or nil when no valid
    /// payload has that length (cut inside a tag, or a non-final empty chunk).
    package static func plaintextSize(payloadSize: UInt64) -> UInt64? {
        let sealed = UInt64(EnvelopeFormat.sealedChunkSize), tag = UInt64(EnvelopeFormat.tagSize)
        guard payloadSize >= tag else { return nil }
        let chunks = (payloadSize + sealed - 1) / sealed
        let last = payloadSize - (chunks - 1) * sealed
        if chunks > 1 && last <= tag { return nil }
        return payloadSize - chunks * tag
    }
}
