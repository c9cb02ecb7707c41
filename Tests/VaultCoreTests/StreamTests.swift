import Testing
@testable import VaultCore

/// The chunk writer and reader over the boundary matrix: lengths around the 64 KiB chunk ×
/// write sizes; plus truncation, trailing data, reordering and bit flips on the raw payload.
@Suite struct StreamTests {
    static let chunk = EnvelopeFormat.chunkSize
    static let lengths = [0, 1, chunk - 1, chunk, chunk + 1, 2 * chunk + 7, 16 * chunk, 16 * chunk + 1, 31 * chunk + 5]
    static let writeSizes = [1, 4096, chunk - 1, chunk, chunk + 1]

    static func cipher() -> ChunkCipher {
        ChunkCipher(payloadKey: try! SecretBytes.random(count: 32, using: DeterministicRandom(seed: "payload")))
    }

    /// Writes `plain` through a StreamWriter in pieces of `step` bytes.
    static func seal(_ plain: [UInt8], step: Int, cipher: ChunkCipher = cipher()) throws -> [UInt8] {
        let out = MemoryEnvelope()
        let w = StreamWriter(cipher: cipher) { try out.append($0) }
        var i = 0
        while i < plain.count {
            let n = min(step, plain.count - i)
            try plain.withUnsafeBytes { try w.write(UnsafeRawBufferPointer(rebasing: $0[i..<i + n])) }
            i += n
        }
        try w.finish()
        return out.bytes
    }

    /// Reads everything back, in reads of at most `step` bytes from the source.
    /// With `readAhead`, batches are read on the reader's thread (``BatchesReadAhead``); without,
    /// on demand (``BatchesOnDemand``).
    static func open(
        _ payload: [UInt8], step: Int = .max, cipher: ChunkCipher = cipher(), readAhead: Bool = true
    ) -> ([UInt8], VaultError?) {
        let input = MemoryEnvelope(payload)
        let r = StreamReader(cipher: cipher, batching: .reading, readAhead: readAhead) { buf in
            try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buf[0..<min(buf.count, step)]))
        }
        var out: [UInt8] = []
        do {
            while let b = try r.next() { out += b }
            return (out, nil)
        } catch {
            return (out, VaultError.from(error))
        }
    }

    @Test(arguments: lengths, writeSizes)
    func roundTrip(length: Int, step: Int) throws {
        let plain = testBytes(length, seed: UInt64(length))
        let payload = try Self.seal(plain, step: step)
        #expect(UInt64(payload.count) == EnvelopeSize.payloadSize(plaintextSize: UInt64(length)))
        #expect(EnvelopeSize.plaintextSize(payloadSize: UInt64(payload.count)) == UInt64(length))
        for readAhead in [true, false] {
            let (back, error) = Self.open(payload, step: step, readAhead: readAhead)
            #expect(error == nil)
            #expect(back == plain)
        }
    }

    /// A source that fails after `failAt` bytes fails the reader with its own error, after
    /// handing on the batches it read whole before the failure: with read-ahead, those whose
    /// next batch was read too (it is read while they are opened, and its error stops them).
    @Test(arguments: [0, 1, 12 * 65552, 12 * 65552 + 1, 24 * 65552 + 1, 40 * 65552 + 5])
    func aFailingSourceFailsTheReaderAfterTheBatchesBeforeIt(failAt: Int) throws {
        let plain = testBytes(64 * Self.chunk, seed: 9)
        let payload = try Self.seal(plain, step: Self.chunk)
        let batch = ChunkBatching.reading.sealedBytes
        for readAhead in [true, false] {
            let input = MemoryEnvelope(payload)
            var at = 0
            let r = StreamReader(cipher: Self.cipher(), batching: .reading, readAhead: readAhead) { buffer in
                if at >= failAt { throw VaultError(.io, "disk gone at \(at)") }
                let n = try input.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, failAt - at)]))
                at += n
                return n
            }
            var out: [UInt8] = []
            let error = #expect(throws: VaultError.self) { while let b = try r.next() { out += b } }
            #expect(error?.code == .io && error?.message == "disk gone at \(failAt)")
            let whole = failAt > 0 ? (failAt - 1) / batch : 0
            let released = readAhead ? max(0, whole - 1) : whole
            #expect(out == Array(plain[0..<(released * ChunkBatching.reading.plaintextBytes)]))
        }
    }

    /// A reader reads one batch ahead of the one it returns, and no more; without read-ahead,
    /// only the batch and its look-ahead byte.
    @Test func readingAheadIsOneBatch() throws {
        let payload = try Self.seal(testBytes(120 * Self.chunk, seed: 3), step: Self.chunk)
        let batch = ChunkBatching.reading.sealedBytes
        for readAhead in [true, false] {
            let input = MemoryEnvelope(payload)
            var read = 0
            let r = StreamReader(cipher: Self.cipher(), batching: .reading, readAhead: readAhead) { buffer in
                let n = try input.read(into: buffer)
                read += n
                return n
            }
            #expect(read == 0)
            #expect(try r.next()?.count == ChunkBatching.reading.plaintextBytes)
            #expect(read == (readAhead ? 2 * batch + 1 : batch + 1))
        }
    }

    /// A source that yields `plain` in reads of at most `step` bytes.
    final class Pieces: ByteSource {
        let plain: [UInt8]
        let step: Int
        var at = 0
        init(_ plain: [UInt8], step: Int) { self.plain = plain; self.step = step }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = min(step, buffer.count, plain.count - at)
            plain.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[at..<at + n])) }
            at += n
            return n
        }
    }

    /// `consume` (reading ahead while sealing, three batches in rotation) writes the same
    /// payload as `write`, after any prefix, for lengths around every batch boundary.
    @Test(arguments: [1, 2, 16], [0, 1, 5000])
    func consumingASourceSealsWhatWritingDoes(batchChunks: Int, prefix: Int) throws {
        let batch = batchChunks * Self.chunk
        for length in [
            0, 1, batch - 1, batch, batch + 1, 2 * batch, 2 * batch + 1, 3 * batch, 3 * batch + 7, 7 * batch - 3
        ] where length >= prefix {
            let plain = testBytes(length, seed: UInt64(length + batchChunks))
            let cipher = Self.cipher()
            let want = MemoryEnvelope()
            let w = StreamWriter(cipher: cipher, batchChunks: batchChunks) { try want.append($0) }
            try plain.withUnsafeBytes { try w.write($0) }
            try w.finish()
            for step in [Self.chunk - 1, 1 << 20] {
                let got = MemoryEnvelope()
                let c = StreamWriter(cipher: cipher, batchChunks: batchChunks) { try got.append($0) }
                try plain.withUnsafeBytes { try c.write(UnsafeRawBufferPointer(rebasing: $0[0..<prefix])) }
                var seen: [UInt64] = []
                try c.consume(Pieces(Array(plain[prefix...]), step: step)) { seen.append($0) }
                try c.finish()
                #expect(
                    got.bytes == want.bytes,
                    "length \(length), batch \(batchChunks) chunks, prefix \(prefix), reads of \(step)")
                #expect(c.plaintextCount == UInt64(length))
                #expect(seen == seen.sorted() && (seen.last ?? 0) <= UInt64(length))
            }
        }
    }

    @Test func emptyStreamIsOneEmptyFinalChunk() throws {
        let payload = try Self.seal([], step: 1)
        #expect(payload.count == EnvelopeFormat.tagSize)
    }

    @Test(arguments: [1, 2 * 65536 + 7, 3 * 65536])
    func truncationAtEveryChunkBoundaryAndInsideTags(length: Int) throws {
        let payload = try Self.seal(testBytes(length), step: Self.chunk)
        let ss = EnvelopeFormat.sealedChunkSize
        var cuts = Set<Int>([0])
        for k in stride(from: ss, to: payload.count, by: ss) { cuts.formUnion([k, k - 1, k - 8, k + 1]) }
        cuts.formUnion([payload.count - 1, payload.count - 8, payload.count - 16])
        for cut in cuts.sorted() where cut >= 0 && cut < payload.count {
            let (released, error) = Self.open(Array(payload.prefix(cut)))
            #expect(error != nil, "cut at \(cut) of \(payload.count) was not detected")
            #expect(
                [.truncated, .chunkAuthenticationFailed].contains(error?.code),
                "cut at \(cut): \(String(describing: error))")
            #expect(released.count <= length, "released more than the plaintext")
        }
    }

    @Test func trailingDataAfterAFullFinalChunk() throws {
        let payload = try Self.seal(testBytes(Self.chunk), step: Self.chunk)
        for extra in [1, 16, 17, 100, EnvelopeFormat.sealedChunkSize] {
            let (_, error) = Self.open(payload + testBytes(extra, seed: 9))
            #expect(error?.code == .trailingData, "extra \(extra): \(String(describing: error))")
        }
    }

    @Test func trailingDataAfterAShortFinalChunkFailsAuthentication() throws {
        let payload = try Self.seal(testBytes(100), step: 100)
        let (released, error) = Self.open(payload + [1, 2, 3])
        #expect(error?.code == .chunkAuthenticationFailed)
        #expect(released.isEmpty)
    }

    @Test func swappedAndDuplicatedChunksAreRejected() throws {
        let ss = EnvelopeFormat.sealedChunkSize
        let payload = try Self.seal(testBytes(3 * Self.chunk + 10), step: Self.chunk)
        let c = (0..<4).map { Array(payload[($0 * ss)..<min(payload.count, ($0 + 1) * ss)]) }
        for variant in [
            c[1] + c[0] + c[2] + c[3], c[0] + c[2] + c[1] + c[3], c[0] + c[0] + c[2] + c[3], c[0] + c[1] + c[3]
        ] {
            let (_, error) = Self.open(variant)
            #expect(error?.code == .chunkAuthenticationFailed || error?.code == .truncated)
        }
    }

    @Test func bitFlipInEachChunkAndTagIsRejectedAndReleasesNothingAfterIt() throws {
        let ss = EnvelopeFormat.sealedChunkSize
        let plain = testBytes(40 * Self.chunk + 3)
        let payload = try Self.seal(plain, step: Self.chunk)
        let chunks = (payload.count + ss - 1) / ss
        for k in 0..<chunks {
            let end = min(payload.count, (k + 1) * ss)
            for offset in Set([k * ss, min(k * ss + 1000, end - 1), end - 1]) {
                var bad = payload
                bad[offset] ^= 0x40
                let (released, error) = Self.open(bad)
                #expect(error?.code == .chunkAuthenticationFailed, "flip at \(offset)")
                // Batches of 12 chunks: nothing of the failing batch is released.
                #expect(released.count <= (k / 12) * 12 * Self.chunk)
                #expect(Array(plain.prefix(released.count)) == released)
            }
        }
    }

    @Test func aChunkFromAnotherKeyIsRejected() throws {
        let other = ChunkCipher(
            payloadKey: try SecretBytes.random(count: 32, using: DeterministicRandom(seed: "other")))
        let ss = EnvelopeFormat.sealedChunkSize
        let a = try Self.seal(testBytes(2 * Self.chunk + 5), step: Self.chunk)
        let b = try Self.seal(testBytes(2 * Self.chunk + 5), step: Self.chunk, cipher: other)
        let spliced = Array(a[0..<ss]) + Array(b[ss..<(2 * ss)]) + Array(a[(2 * ss)...])
        #expect(Self.open(spliced).1?.code == .chunkAuthenticationFailed)
    }

    @Test func errorsAreSticky() throws {
        var payload = try Self.seal(testBytes(100), step: 100)
        payload[0] ^= 1
        let input = MemoryEnvelope(payload)
        let r = StreamReader(cipher: Self.cipher(), batching: .reading) { try input.read(into: $0) }
        let first = #expect(throws: VaultError.self) { try r.next() }
        let second = #expect(throws: VaultError.self) { try r.next() }
        #expect(first?.code == .chunkAuthenticationFailed && second?.code == .chunkAuthenticationFailed)
        #expect(first?.message == second?.message)
    }

    @Test func writerRejectsUseAfterFinish() throws {
        let w = StreamWriter(cipher: Self.cipher()) { _ in }
        try w.finish()
        expectError(.internal) { try [1, 2].withUnsafeBytes { try w.write($0) } }
    }

    @Test func sizeArithmeticRejectsImpossibleLengths() {
        #expect(EnvelopeSize.plaintextSize(payloadSize: 15) == nil)
        #expect(EnvelopeSize.plaintextSize(payloadSize: 16) == 0)
        #expect(EnvelopeSize.plaintextSize(payloadSize: UInt64(EnvelopeFormat.sealedChunkSize + 16)) == nil)
        #expect(
            EnvelopeSize.plaintextSize(payloadSize: UInt64(EnvelopeFormat.sealedChunkSize + 17))
                == UInt64(Self.chunk + 1))
        for n: UInt64 in [0, 1, 65535, 65536, 65537, 1 << 30] {
            #expect(EnvelopeSize.plaintextSize(payloadSize: EnvelopeSize.payloadSize(plaintextSize: n)) == n)
        }
    }
}
