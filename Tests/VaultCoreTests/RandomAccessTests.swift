import Foundation
import Testing
@testable import VaultCore

/// `Vault.randomAccess`: `read(at:count:)` returns the plaintext's bytes for any range, opening
/// only the chunks that cover it, once (the cache), and fails only where it touches damage.
@Suite struct RandomAccessTests {
    static let chunk = EnvelopeFormat.chunkSize

    final class OneDocument {
        let dir = TempDir()
        let vault: Vault
        let id: DocumentID
        let plain: [UInt8]
        init(size: Int) throws {
            vault = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
            plain = testBytes(size, seed: UInt64(size))
            _ = FileManager.default.createFile(atPath: dir.file("in"), contents: Data(plain))
            id = try vault.add(from: OpenFile.openForReading(dir.file("in")), name: "doc.bin").id
        }
    }

    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk + 77, 40 * chunk])
    func everyRangeReadsTheRightBytesOpeningOnlyItsChunks(size: Int) throws {
        let d = try OneDocument(size: size)
        var ranges: [(Int, Int)] = [(0, 1), (0, size), (size - 1, 1), (size, 5), (0, 0)]
        for b in stride(from: Self.chunk, to: size, by: Self.chunk) {
            ranges += [(b - 1, 2), (b, 1), (b - 3, Self.chunk + 6)]
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 where size > 0 {
            let start = Int.random(in: 0..<size, using: &rng)
            ranges.append((start, Int.random(in: 1...min(size - start, 3 * Self.chunk), using: &rng)))
        }
        for (start, count) in ranges where start >= 0 {
            let reader = try d.vault.randomAccess(d.id)
            let got = try reader.read(at: UInt64(start), count: count)
            let end = min(size, start + max(count, 0))
            let want = start < size ? Array(d.plain[start..<end]) : []
            #expect(got == want, "\(start)+\(count) of \(size)")
            let covering = want.isEmpty ? 0 : (end - 1) / Self.chunk - start / Self.chunk + 1
            #expect(
                reader.chunksOpened == UInt64(covering),
                "\(start)+\(count) of \(size): opened \(reader.chunksOpened), covering \(covering)")
            // The same range again comes from the cache.
            _ = try reader.read(at: UInt64(start), count: count)
            #expect(reader.chunksOpened == UInt64(covering))
        }
    }

    @Test func readingFrontToBackInSmallPiecesOpensEachChunkOnceWithinTheCacheLimit() throws {
        let d = try OneDocument(size: 40 * Self.chunk + 5)
        let reader = try d.vault.randomAccess(d.id, cacheBytes: 2 * Self.chunk)
        var out: [UInt8] = []
        while out.count < d.plain.count { out += try reader.read(at: UInt64(out.count), count: 10_000) }
        #expect(out == d.plain)
        #expect(reader.chunksOpened == 41)
        // A read larger than the cache still returns every byte.
        #expect(try reader.read(at: 3, count: 20 * Self.chunk) == Array(d.plain[3..<(3 + 20 * Self.chunk)]))
    }

    @Test func damageIsFoundOnlyWhereAReadTouchesIt() throws {
        let d = try OneDocument(size: 10 * Self.chunk)
        let path = d.vault.store.objectPath(d.id)
        var bytes = Array(FileManager.default.contents(atPath: path)!)
        let header = try EnvelopeReader.readHeader(MemoryEnvelope(bytes)).encodedSize
        bytes[header + 6 * EnvelopeFormat.sealedChunkSize + 100] ^= 1  // chunk 6
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let reader = try d.vault.randomAccess(d.id)
        #expect(try reader.read(at: 0, count: 6 * Self.chunk) == Array(d.plain[0..<(6 * Self.chunk)]))
        #expect(
            try reader.read(at: UInt64(7 * Self.chunk), count: Self.chunk)
                == Array(d.plain[(7 * Self.chunk)..<(8 * Self.chunk)]))
        expectError(.chunkAuthenticationFailed) { _ = try reader.read(at: UInt64(6 * Self.chunk + 10), count: 1) }
        do {
            _ = try reader.read(at: UInt64(5 * Self.chunk), count: 2 * Self.chunk)
            Issue.record("a read across the damaged chunk returned bytes")
        } catch let e as VaultError {
            #expect(e.code == .chunkAuthenticationFailed)
            #expect(e.message.contains("chunk 6 failed authentication"), "\(e.message)")
        }
    }
}
