import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// Encrypts a byte stream into sealed 64 KiB chunks (the envelope payload).
///
/// A small state machine: `open` → `finished`, or `failed` for good (sticky: every later
/// call throws the same error). Plaintext is gathered into a batch of whole chunks; a full
/// batch is sealed on all cores only when at least one more byte arrives, so the final chunk is
/// always known when ``finish()`` is called, and it is never empty unless the stream is.
///
/// Sealed batches are handed to `sink` on a background thread while the next batch is being
/// filled, so encryption and writing overlap; there are two sealed buffers, and the writer
/// waits for a buffer's write to finish before it reuses it.
///
/// ``consume(_:progress:)`` pulls plaintext from a source instead: it reads the batch after next
/// while the current one is hashed and sealed, as one more work item beside them, so neither
/// core waits for the input. It keeps three plaintext batches for that: the one being sealed,
/// the next (read ahead, which tells whether the current one holds the final chunk) and the one
/// being read.
package final class StreamWriter {
    /// Receives sealed payload bytes, in order, on one thread at a time.
    package typealias Sink = @Sendable (UnsafeRawBufferPointer) throws -> Void

    private enum State { case open, finished, failed(VaultError) }

    private let cipher: ChunkCipher
    private let sink: Sink
    /// Three plaintext batches; `plain` is the one being filled.
    private let batches: [UnsafeMutableRawBufferPointer]
    private var current = 0
    private var plain: UnsafeMutableRawBufferPointer { batches[current] }
    /// How far into each batch plaintext was ever written: what `deinit` wipes.
    private var touched = [0, 0, 0]
    private var filled = 0
    private var nextIndex: UInt64 = 0
    private var state = State.open
    private let output: OverlappedOutput

    /// Bytes of plaintext accepted so far.
    package private(set) var plaintextCount: UInt64 = 0
    /// Bytes of sealed payload produced so far.
    package private(set) var payloadCount: UInt64 = 0

    /// Sees each batch of plaintext, in order, while that batch is being sealed on the other core.
    package typealias Observer = (UnsafeRawBufferPointer) -> Void
    private let observer: Observer?

    /// A writer sealing with `cipher`; `batchChunks` chunks are sealed at a time.
    /// - Parameter observer: run on each batch concurrently with its sealing (the envelope
    ///   writer hashes the plaintext here, so hashing costs no wall time).
    init(cipher: ChunkCipher, batchChunks: Int = 16, observer: Observer? = nil, sink: @escaping Sink) {
        precondition(batchChunks >= 1, "internal error: batch size")
        self.cipher = cipher
        self.sink = sink
        self.observer = observer
        batches = (0..<3).map { _ in .allocate(byteCount: batchChunks * EnvelopeFormat.chunkSize, alignment: 64) }
        output = OverlappedOutput(bufferSize: batchChunks * EnvelopeFormat.sealedChunkSize, sink: sink)
    }

    deinit {
        for (b, n) in zip(batches, touched) {
            Sodium.wipe(UnsafeMutableRawBufferPointer(rebasing: b[0..<n]))
            b.deallocate()
        }
    }

    /// Adds plaintext.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        try checkOpen()
        var rest = bytes
        while !rest.isEmpty {
            if filled == plain.count { try flush(final: false) }
            let n = min(rest.count, plain.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: plain[filled..<filled + n]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            filled += n
            touched[current] = max(touched[current], filled)
            plaintextCount += UInt64(n)
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
        }
    }

    /// Adds everything `source` yields (until it ends), reading ahead while sealing; calls
    /// `progress` with the plaintext count after each batch.
    package func consume(_ source: any ByteSource, progress: ((UInt64) -> Void)? = nil) throws {
        try checkOpen()
        let size = plain.count
        do {
            let n = try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: plain[filled...]))
            filled += n
            touched[current] = max(touched[current], filled)
            plaintextCount += UInt64(n)
            guard filled == size else { return }
            // The next batch, read ahead: a batch is sealed only once what follows it is known.
            var next = (current + 1) % 3
            var ahead = try source.readFully(into: batches[next])
            touched[next] = max(touched[next], ahead)
            while ahead > 0 {
                let third = (next + 1) % 3
                var thirdCount = 0
                var readError: Error?
                let readMore = ahead == size
                try flush(
                    final: false,
                    alongside: readMore
                        ? [
                            { [batches] in
                                do { thirdCount = try source.readFully(into: batches[third]) } catch {
                                    readError = error
                                }
                            }
                        ] : [])
                touched[third] = max(touched[third], readMore ? size : 0)  // a failed read may have written part of it
                if let readError { throw readError }
                plaintextCount += UInt64(ahead)
                progress?(plaintextCount)
                current = next
                filled = ahead
                next = third
                ahead = thirdCount
            }
        } catch {
            state = .failed(.from(error))
            throw error
        }
    }

    /// Seals the final chunk and waits until every byte has reached the sink.
    package func finish() throws {
        try checkOpen()
        try flush(final: true)
        do { try output.drain() } catch { state = .failed(.from(error)); throw error }
        state = .finished
    }

    private func checkOpen() throws {
        switch state {
        case .open: return
        case .finished: throw VaultError(.internal, "stream writer used after finish")
        case .failed(let e): throw e
        }
    }

    private func flush(final: Bool, alongside: [() -> Void] = []) throws {
        do {
            let buffer = try output.acquire()
            let batch = UnsafeRawBufferPointer(rebasing: plain[0..<filled])
            let observing = observer.map { observer in [{ observer(batch) }] } ?? []
            let n = cipher.sealBatch(
                batch, firstIndex: nextIndex, final: final, into: buffer, alongside: observing + alongside)
            nextIndex += UInt64(max(1, (filled + EnvelopeFormat.chunkSize - 1) / EnvelopeFormat.chunkSize))
            payloadCount += UInt64(n)
            filled = 0
            output.submit(count: n)
        } catch {
            state = .failed(.from(error))
            throw error
        }
    }
}

/// Two output buffers and a serial background queue: while one buffer is being written by
/// the sink, the other is being filled.
final class OverlappedOutput: @unchecked Sendable {
    // @unchecked: `buffers`, `current` and `error` are guarded by `lock` or by the semaphores'
    // hand-over (a buffer is touched by the producer only after its write has signalled).
    private let buffers: [UnsafeMutableRawBufferPointer]
    private let free: [DispatchSemaphore]
    private var current = 0
    private let queue = DispatchQueue(label: "vault.output")
    private let lock = NIOLock()
    private var error: VaultError?
    private let sink: StreamWriter.Sink

    init(bufferSize: Int, sink: @escaping StreamWriter.Sink) {
        buffers = (0..<2).map { _ in .allocate(byteCount: bufferSize, alignment: 64) }
        free = (0..<2).map { _ in DispatchSemaphore(value: 1) }
        self.sink = sink
    }

    deinit {
        // Wait for writes in flight; give the permit back (libdispatch traps if a semaphore is
        // freed below its initial value).
        for s in free { s.wait(); s.signal() }
        for b in buffers { b.deallocate() }
    }

    /// The next buffer to fill, once its previous write is done.
    func acquire() throws -> UnsafeMutableRawBufferPointer {
        free[current].wait()
        if let e = takeError() { free[current].signal(); throw e }
        return buffers[current]
    }

    /// Queues the first `count` bytes of the acquired buffer for writing.
    func submit(count: Int) {
        let i = current
        let bytes = UnsafeRawBufferPointer(rebasing: buffers[i][0..<count])
        current = 1 - current
        // nonisolated(unsafe): buffer `i` is not reused until `free[i]` is signalled after this write.
        nonisolated(unsafe) let b = bytes
        queue.async { [self] in
            if peekError() == nil {
                do { try sink(b) } catch { record(.from(error)) }
            }
            free[i].signal()
        }
    }

    /// Waits for every queued write; throws the first write error.
    func drain() throws {
        queue.sync {}
        if let e = takeError() { throw e }
    }

    private func record(_ e: VaultError) { lock.lock(); if error == nil { error = e }; lock.unlock() }
    private func peekError() -> VaultError? { lock.lock(); defer { lock.unlock() }; return error }
    private func takeError() -> VaultError? { peekError() }
}
