/// Decrypts an envelope payload, releasing plaintext only after it has authenticated.
///
/// Reads a batch of sealed chunks plus one byte of look-ahead, so it knows whether the last
/// chunk in hand is the final one without trusting any length field. The batch is opened on
/// all cores; ``next()`` returns its plaintext only if every chunk in it verified. While a
/// batch is being opened, the next one is read into a second buffer (one more work item beside
/// the chunks), so reading, from the disk or the page cache, overlaps decryption.
///
/// Errors: a chunk that fails is ``VaultError/Code/chunkAuthenticationFailed``; input that
/// ends without a final chunk (or inside a tag) is ``VaultError/Code/truncated``; bytes after a
/// chunk that opens as final are ``VaultError/Code/trailingData``. Errors are sticky.
package final class StreamReader {
    /// Fills the buffer from the start as far as it can; returns the bytes read, 0 at the end.
    package typealias Source = (UnsafeMutableRawBufferPointer) throws -> Int

    private enum State { case reading, done, failed(VaultError) }

    private let cipher: ChunkCipher
    private let source: Source
    private let readAhead: Bool
    /// Two buffers of a batch of sealed chunks + 1 look-ahead byte; `sealed` is the one in hand.
    private let buffers: [UnsafeMutableRawBufferPointer]
    private var inHand = 0
    private var sealed: UnsafeMutableRawBufferPointer { buffers[inHand] }
    private let plain: UnsafeMutableRawBufferPointer
    private var have = 0  // bytes in `sealed`
    private var nextIndex: UInt64 = 0
    private var state = State.reading
    /// Plaintext bytes released so far (all authenticated).
    package private(set) var releasedCount: UInt64 = 0
    /// Chunks opened so far, and the index of the first one.
    package private(set) var openedChunks: UInt64 = 0
    /// The index of the first chunk this reader opens.
    package var firstIndex: UInt64 { nextIndex - openedChunks }
    /// Runs on the decrypting threads for each chunk of the next batch as it verifies: its
    /// index in the batch and its plaintext (see ``ChunkCipher/openBatch``). Set per batch by a
    /// consumer that transforms chunks where they are decrypted; what it makes counts only when
    /// ``next()`` returns the batch.
    package var onChunk: ((Int, UnsafeRawBufferPointer) -> Void)?

    /// A reader of `batching.chunks` chunks at a time (one byte more is read, to see whether
    /// the input ends after them), whose source starts at chunk `firstIndex` (0: the start).
    /// - Parameter readAhead: read the next batch while this one is opened (for reads that go
    ///   on; off for a random-access read of a few chunks, which would read a batch for nothing).
    init(
        cipher: ChunkCipher, batching: ChunkBatching, firstIndex: UInt64 = 0, readAhead: Bool = true,
        source: @escaping Source
    ) {
        self.cipher = cipher
        self.source = source
        self.readAhead = readAhead
        nextIndex = firstIndex
        buffers = (0..<2).map { _ in .allocate(byteCount: batching.sealedBytes + 1, alignment: 64) }
        plain = .allocate(byteCount: batching.plaintextBytes, alignment: 64)
    }

    deinit {
        Sodium.wipe(plain)
        plain.deallocate()
        buffers.forEach { $0.deallocate() }
    }

    /// The next batch of authenticated plaintext (valid until the next call), or nil after
    /// the final chunk has been verified and the input has ended.
    package func next() throws -> UnsafeRawBufferPointer? {
        switch state {
        case .done: return nil
        case .failed(let e): throw e
        case .reading: break
        }
        do {
            return try step()
        } catch {
            state = .failed(.from(error))
            throw error
        }
    }

    private func step() throws -> UnsafeRawBufferPointer? {
        let ss = EnvelopeFormat.sealedChunkSize, tag = EnvelopeFormat.tagSize
        while have < sealed.count {
            let n = try source(UnsafeMutableRawBufferPointer(rebasing: sealed[have...]))
            if n == 0 { break }
            have += n
        }
        let atEnd = have < sealed.count
        if !atEnd {
            // A whole batch and more data after it: every chunk in the batch is non-final. The
            // look-ahead byte moves to the other buffer, and (with read-ahead) the next batch is
            // read after it meanwhile.
            let batch = sealed.count - 1
            let other = buffers[1 - inHand]
            other[0] = sealed[batch]
            var read = 0
            var readError: Error?
            let source = self.source
            let readNext = {
                do {
                    while 1 + read < other.count {
                        let n = try source(UnsafeMutableRawBufferPointer(rebasing: other[(1 + read)...]))
                        if n == 0 { break }
                        read += n
                    }
                } catch { readError = error }
            }
            try open(
                UnsafeRawBufferPointer(rebasing: sealed[0..<batch]), final: false,
                alongside: readAhead ? [readNext] : [])
            if let readError { throw readError }
            inHand = 1 - inHand
            have = 1 + read
            return UnsafeRawBufferPointer(rebasing: plain[0..<(batch / ss * EnvelopeFormat.chunkSize)])
        }
        // The input has ended: the last chunk in hand must be the final one.
        if have == 0 {
            throw VaultError(
                .truncated, nextIndex == 0 ? "payload is empty (no chunks)" : "payload ends without a final chunk")
        }
        let last = have - (have - 1) / ss * ss
        if last < tag || (last == tag && (nextIndex > 0 || have > ss)) {
            // Too short to be a chunk. If the chunk before it opens as final, it is trailing
            // data after a full final chunk; otherwise the payload was cut.
            if have > ss {
                let prev = (have - 1) / ss - 1
                let s = UnsafeRawBufferPointer(rebasing: sealed[prev * ss..<(prev + 1) * ss])
                let scratch = UnsafeMutableRawBufferPointer(rebasing: plain[0..<EnvelopeFormat.chunkSize])
                let isFinal = cipher.open(s, index: nextIndex + UInt64(prev), last: true, into: scratch)
                Sodium.wipe(scratch)
                if isFinal {
                    throw VaultError(.trailingData, "data follows the final chunk (chunk \(nextIndex + UInt64(prev)))")
                }
            }
            throw VaultError(.truncated, "payload ends inside chunk \(nextIndex + UInt64((have - 1) / ss))")
        }
        try open(UnsafeRawBufferPointer(rebasing: sealed[0..<have]), final: true)
        state = .done
        return UnsafeRawBufferPointer(rebasing: plain[0..<(have - ((have + ss - 1) / ss) * tag)])
    }

    private func open(_ batch: UnsafeRawBufferPointer, final: Bool, alongside: [() -> Void] = []) throws {
        let ss = EnvelopeFormat.sealedChunkSize
        let count = (batch.count + ss - 1) / ss
        if let bad = cipher.openBatch(
            batch, firstIndex: nextIndex, final: final, into: plain, alongside: alongside, opened: onChunk)
        {
            let index = nextIndex + UInt64(bad)
            // A chunk that fails as non-final but opens as final has data after it: that data
            // is trailing (age's rule for a full-length final chunk).
            if !(final && bad == count - 1) {
                let s = UnsafeRawBufferPointer(rebasing: batch[bad * ss..<min(batch.count, (bad + 1) * ss)])
                let cs = EnvelopeFormat.chunkSize
                let scratch = UnsafeMutableRawBufferPointer(
                    rebasing: plain[bad * cs..<(bad * cs + s.count - EnvelopeFormat.tagSize)])
                let isFinal = cipher.open(s, index: index, last: true, into: scratch)
                Sodium.wipe(plain)
                if isFinal { throw VaultError(.trailingData, "data follows the final chunk (chunk \(index))") }
            }
            Sodium.wipe(plain)
            throw VaultError(
                .chunkAuthenticationFailed, "chunk \(index) failed authentication",
                hint: "the document is damaged or was tampered with")
        }
        nextIndex += UInt64((batch.count + ss - 1) / ss)
        openedChunks += UInt64((batch.count + ss - 1) / ss)
        releasedCount += UInt64(batch.count - ((batch.count + ss - 1) / ss) * EnvelopeFormat.tagSize)
    }
}
