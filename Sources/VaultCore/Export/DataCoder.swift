import Crypto

/// A document's data as the payload carries it: base64 (JSON), or the plaintext itself (form);
/// when sealed, an age file of it (header and nonce first, then its STREAM chunks) in either.
struct DataCoder {
    private var base64: Base64StreamEncoder?
    private var sealer: AgeFileSealer?
    private var scratch: UnsafeMutableRawBufferPointer?
    private var prefixDone = true
    /// The sealed file's bytes so far, hashed when asked (``seal(with:scratch:hashing:)``).
    private var sealedDigest: SHA256?
    private(set) var sealedBytes: UInt64 = 0

    init(format: PayloadFormat, threads: Int) {
        base64 = format.encodesBase64 ? Base64StreamEncoder(threads: threads) : nil
    }

    /// Seals the document's plaintext with `sealer`; sealed chunks wait in `scratch` for base64.
    /// With `hashing`, the sealed file is hashed as it goes (``sealedFile``).
    mutating func seal(with sealer: AgeFileSealer, scratch: UnsafeMutableRawBufferPointer?, hashing: Bool = false) {
        self.sealer = sealer
        self.scratch = scratch
        prefixDone = false
        sealedDigest = hashing ? SHA256() : nil
    }

    /// The SHA-256 of the sealed file so far, when hashed.
    var sealedFile: SHA256? { sealedDigest }

    private mutating func hashSealed(_ bytes: UnsafeRawBufferPointer) {
        guard sealedDigest != nil else { return }
        sealedDigest!.update(bufferPointer: bytes)
        sealedBytes += UInt64(bytes.count)
    }

    /// Bytes as the payload carries them (base64, or as they are).
    private mutating func put(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        if base64 != nil { return base64!.encode(input, into: output) }
        if let from = input.baseAddress, input.count > 0 {
            output.baseAddress!.copyMemory(from: from, byteCount: input.count)
        }
        return input.count
    }

    /// The age file's header and nonce, before its first chunk.
    private mutating func prefix(into output: UnsafeMutableRawBufferPointer) -> Int {
        guard !prefixDone, let sealer else { return 0 }
        prefixDone = true
        return sealer.prefix.withUnsafeBytes {
            hashSealed($0)
            return put($0, into: output)
        }
    }

    /// When sealing: the job the reader runs on each chunk of the next batch as it verifies
    /// (``AgeFileSealer/job(into:)``), which seals it into the scratch (JSON) or into `output`
    /// after the age file's prefix (form), where ``encode(_:into:)`` then finds it.
    func sealingJob(output: UnsafeMutableRawBufferPointer) -> ((Int, UnsafeRawBufferPointer) -> Void)? {
        guard let sealer else { return nil }
        if let scratch { return sealer.job(into: scratch) }
        return sealer.job(
            into: UnsafeMutableRawBufferPointer(rebasing: output[(prefixDone ? 0 : sealer.prefix.count)...]))
    }

    /// A batch of plaintext as the payload carries it; when sealing, the batch was sealed by
    /// ``sealingJob(output:)`` as it was decrypted.
    mutating func encode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        let n = prefix(into: output)
        let rest = UnsafeMutableRawBufferPointer(rebasing: output[n...])
        guard let sealer else { return n + put(input, into: rest) }
        let sealed = sealer.sealedByJob(input.count)
        guard let scratch else {  // sealed in place
            hashSealed(UnsafeRawBufferPointer(rebasing: rest[0..<sealed]))
            return n + sealed
        }
        hashSealed(UnsafeRawBufferPointer(rebasing: scratch[0..<sealed]))
        return n + put(UnsafeRawBufferPointer(rebasing: scratch[0..<sealed]), into: rest)
    }

    mutating func finish(into output: UnsafeMutableRawBufferPointer) -> Int {
        var n = prefix(into: output)
        if let sealer {
            if let scratch {
                let sealed = sealer.finish(into: scratch)
                hashSealed(UnsafeRawBufferPointer(rebasing: scratch[0..<sealed]))
                n += put(
                    UnsafeRawBufferPointer(rebasing: scratch[0..<sealed]),
                    into: UnsafeMutableRawBufferPointer(rebasing: output[n...]))
            } else {
                let sealed = sealer.finish(into: UnsafeMutableRawBufferPointer(rebasing: output[n...]))
                hashSealed(UnsafeRawBufferPointer(rebasing: output[n..<n + sealed]))
                n += sealed
            }
        }
        if base64 != nil { n += base64!.finish(into: UnsafeMutableRawBufferPointer(rebasing: output[n...])) }
        return n
    }
}
