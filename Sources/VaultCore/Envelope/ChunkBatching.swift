/// How many chunks a reader opens, verifies and releases at a time — the one geometry that the
/// reader's buffers, the payload producer's blocks and its base64 stage must agree on, so it
/// is chosen once (by whoever reads) and passed down.
package struct ChunkBatching: Sendable, Equatable {
    /// Chunks per batch.
    package let chunks: Int

    /// A batching of `chunks` chunks (at least 1).
    package init(chunks: Int) {
        precondition(chunks >= 1, "internal error: a batch holds at least one chunk")
        self.chunks = chunks
    }

    /// The reading default: 12 chunks (768 KiB of plaintext). A multiple of 3, so every batch but
    /// the last is whole base64 groups and splits evenly between cores; small enough that a
    /// reader's memory stays a few MiB.
    package static let reading = ChunkBatching(chunks: 12)

    /// Most plaintext bytes in one batch.
    package var plaintextBytes: Int { chunks * EnvelopeFormat.chunkSize }
    /// Most sealed bytes in one batch.
    package var sealedBytes: Int { chunks * EnvelopeFormat.sealedChunkSize }
}
