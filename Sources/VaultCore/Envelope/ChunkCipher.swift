import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// Seals and opens payload chunks: XChaCha20-Poly1305 under the payload key, with the nonce
/// `15 zero bytes ‖ chunk counter (8, big-endian) ‖ flag (1)`, flag 1 on the final chunk only
/// (age's STREAM construction). Each chunk is independent, so a batch of chunks is processed
/// on every core at once.
final class ChunkCipher: Sendable {
    private let key: SecretBytes
    /// How many threads a batch uses.
    let threads: Int

    init(payloadKey: SecretBytes, threads: Int = Parallelism.allCores) {
        precondition(payloadKey.count == EnvelopeFormat.keySize, "internal error: payload key size")
        key = payloadKey
        self.threads = max(1, threads)
    }

    /// The 24-byte nonce of chunk `index`.
    static func withNonce<R>(index: UInt64, last: Bool, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: EnvelopeFormat.nonceSize, alignment: 8) { n in
            n.initializeMemory(as: UInt8.self, repeating: 0)
            n.storeBytes(of: index.bigEndian, toByteOffset: 15, as: UInt64.self)
            n[23] = last ? 1 : 0
            return body(UnsafeRawBufferPointer(n))
        }
    }

    func seal(_ plain: UnsafeRawBufferPointer, index: UInt64, last: Bool, into out: UnsafeMutableRawBufferPointer) {
        Self.withNonce(index: index, last: last) { nonce in
            key.withUnsafeBytes { k in
                XChaCha20Poly1305.seal(
                    plain, into: out, ad: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce, key: k)
            }
        }
    }

    func open(
        _ sealed: UnsafeRawBufferPointer, index: UInt64, last: Bool, into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        Self.withNonce(index: index, last: last) { nonce in
            key.withUnsafeBytes { k in
                XChaCha20Poly1305.open(
                    sealed, into: out, ad: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce, key: k)
            }
        }
    }

    /// Seals `count` consecutive chunks of `plain` (all full except perhaps the last) into
    /// `sealed`, in parallel. Chunk `i` gets counter `firstIndex + i`; the last one is flagged
    /// final when `final` is true. Returns the number of sealed bytes.
    ///
    /// `alongside` are other jobs of the same step (hashing the batch, reading the next one):
    /// they and the chunks are one list of work items that the threads take one at a time, so
    /// a thread that finishes the hash goes on sealing and no core waits for the other. (With
    /// the hash on one thread and all the sealing on the other, a 1 MiB batch took as long as
    /// its sealing alone: about 0.9 ms here, against 0.6 ms for the hash.)
    func sealBatch(
        _ plain: UnsafeRawBufferPointer, firstIndex: UInt64, final: Bool,
        into sealed: UnsafeMutableRawBufferPointer, alongside: [() -> Void] = []
    ) -> Int {
        let cs = EnvelopeFormat.chunkSize, ss = EnvelopeFormat.sealedChunkSize
        let count = max(1, (plain.count + cs - 1) / cs)
        let sealChunk = { (i: Int) in
            let start = i * cs, end = min(start + cs, plain.count)
            let p = UnsafeRawBufferPointer(rebasing: plain[start..<end])
            let o = UnsafeMutableRawBufferPointer(
                rebasing: sealed[i * ss..<(i * ss + p.count + EnvelopeFormat.tagSize)])
            self.seal(p, index: firstIndex + UInt64(i), last: final && i == count - 1, into: o)
        }
        run(count, alongside: alongside, sealChunk)
        return plain.count + count * EnvelopeFormat.tagSize
    }

    /// Opens the chunks in `sealed` (all full except perhaps the last) into `plain`, in
    /// parallel. Returns nil when all verify, else the smallest failing chunk offset in the batch.
    /// `alongside` as in ``sealBatch(_:firstIndex:final:into:alongside:)`` (the reader reads
    /// the next batch there). `opened(i, plaintext)` runs on the same thread right after chunk
    /// `i` verifies, while its plaintext is still in that core's cache (a sealed export seals
    /// it again there); its output counts only if the whole batch verifies.
    func openBatch(
        _ sealed: UnsafeRawBufferPointer, firstIndex: UInt64, final: Bool,
        into plain: UnsafeMutableRawBufferPointer, alongside: [() -> Void] = [],
        opened: ((Int, UnsafeRawBufferPointer) -> Void)? = nil
    ) -> Int? {
        let cs = EnvelopeFormat.chunkSize, ss = EnvelopeFormat.sealedChunkSize
        let count = (sealed.count + ss - 1) / ss
        let failures = FailureSet()
        run(count, alongside: alongside) { i in
            let start = i * ss, end = min(start + ss, sealed.count)
            let s = UnsafeRawBufferPointer(rebasing: sealed[start..<end])
            let o = UnsafeMutableRawBufferPointer(rebasing: plain[i * cs..<(i * cs + s.count - EnvelopeFormat.tagSize)])
            if !open(s, index: firstIndex + UInt64(i), last: final && i == count - 1, into: o) {
                failures.add(i)
            } else if let opened {
                opened(i, UnsafeRawBufferPointer(o))
            }
        }
        return failures.first
    }

    /// Runs `body(i)` for `0..<count` and the `alongside` jobs, returning when all are done.
    /// With several threads, jobs and chunks are one list the threads take items from; with
    /// one, the jobs still run beside the chunks (a read that waits on the disk costs no CPU).
    private func run(_ count: Int, alongside: [() -> Void], _ body: (Int) -> Void) {
        if alongside.isEmpty { return forEachShare(count, body) }
        withoutActuallyEscaping(body) { body in
            let work = UncheckedSendable((alongside, body))
            if threads <= 1 {
                DispatchQueue.concurrentPerform(iterations: 2) { i in
                    if i == 0 { work.value.0.forEach { $0() } } else { (0..<count).forEach(work.value.1) }
                }
            } else {
                // Jobs first: they are the longest items, so they start at once.
                DispatchQueue.concurrentPerform(iterations: work.value.0.count + count) { i in
                    if i < work.value.0.count { work.value.0[i]() } else { work.value.1(i - work.value.0.count) }
                }
            }
        }
    }

    /// Runs `body(i)` for `0..<count`, split into one contiguous share per thread.
    private func forEachShare(_ count: Int, _ body: (Int) -> Void) {
        let shares = min(threads, count)
        if shares <= 1 {
            for i in 0..<count { body(i) }
            return
        }
        withoutActuallyEscaping(body) { body in
            let work = UncheckedSendable(body)
            DispatchQueue.concurrentPerform(iterations: shares) { s in
                for i in (s * count / shares)..<((s + 1) * count / shares) { work.value(i) }
            }
        }
    }
}

/// The smallest index that failed, collected from several threads.
private final class FailureSet: @unchecked Sendable {
    // @unchecked: `value` is read and written only under `lock`.
    private let lock = NIOLock()
    private var value: Int?
    func add(_ i: Int) { lock.lock(); value = min(value ?? i, i); lock.unlock() }
    var first: Int? { lock.lock(); defer { lock.unlock() }; return value }
}

/// Hands a value to `concurrentPerform`, whose closure must be `@Sendable`. Used only where
/// the threads touch disjoint parts of a buffer and the call returns after all of them finish.
struct UncheckedSendable<T>: @unchecked Sendable {
    // @unchecked: the threads touch disjoint parts of the value, and the caller waits for all of them.
    let value: T
    init(_ value: T) { self.value = value }
}
