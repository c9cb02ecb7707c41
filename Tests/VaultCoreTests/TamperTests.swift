import Foundation
import Testing
import VaultTestSupport
@testable import VaultCore

/// The tamper matrix: every single-byte change in a document's header and metadata, a bit
/// flip in every chunk and every tag, truncation at every chunk boundary and inside every tag,
/// trailing data, swapped and duplicated chunks, and a chunk or header spliced from another
/// document of the same vault. `get`, `verify` and `export` must each detect every case as
/// damage (never as a wrong password), and no byte of the damaged document may reach a payload.
@Suite struct TamperTests {
    struct Counts { var tried = 0, detected = 0 }

    @Test(arguments: [0, 1, 70_000, 200_000, 800_000])
    // Long: a table of cases, read down the page.
    func everyMutationIsDetectedByGetVerifyAndExport(size: Int) throws {
        let f = try ExportTests.Fixture(sizes: [size, size, 500])
        let target = f.records[0], other = f.records[1]
        let path = f.vault.store.objectPath(target.id)
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let otherBytes = Array(try Data(contentsOf: URL(fileURLWithPath: f.vault.store.objectPath(other.id))))
        let header = try EnvelopeHeader.parse(original)
        let h = header.encodedSize
        let ss = EnvelopeFormat.sealedChunkSize
        let chunks = (original.count - h + ss - 1) / ss

        var cases: [(String, [UInt8])] = []
        for i in 0..<h { var b = original; b[i] ^= 0x01; cases.append(("header byte \(i)", b)) }
        for k in 0..<chunks {
            let start = h + k * ss, end = min(original.count, h + (k + 1) * ss)
            var body = original; body[start + (end - start - 16) / 2] ^= 0x80
            cases.append(("chunk \(k) body", body))
            var tag = original; tag[end - 1] ^= 0x01
            cases.append(("chunk \(k) tag", tag))
            if k > 0 { cases.append(("cut at chunk boundary \(k)", Array(original[..<start]))) }
            cases.append(("cut inside tag of chunk \(k)", Array(original[..<(end - 8)])))
        }
        for extra in [1, 17, ss] { cases.append(("\(extra) trailing bytes", original + testBytes(extra, seed: 5))) }
        if chunks >= 2 {
            let c0 = Array(original[h..<(h + ss)]), c1 = Array(original[(h + ss)..<min(original.count, h + 2 * ss)])
            let rest = Array(original[min(original.count, h + 2 * ss)...])
            cases.append(("chunks 0 and 1 swapped", Array(original[..<h]) + c1 + c0 + rest))
            cases.append(("chunk 0 duplicated", Array(original[..<h]) + c0 + c0 + rest))
            let oh = try EnvelopeHeader.parse(otherBytes).encodedSize
            cases.append(
                (
                    "chunk 1 from another document",
                    Array(original[..<(h + ss)]) + Array(otherBytes[(oh + ss)..<min(otherBytes.count, oh + 2 * ss)])
                        + rest
                ))
        }
        let oh = try EnvelopeHeader.parse(otherBytes).encodedSize
        cases.append(("header of another document", Array(otherBytes[..<oh]) + Array(original[h...])))

        // Every case goes through get and verify; through export (a folder written and a history
        // record appended per case), every chunk case and every 16th header byte in `make test`,
        // every case in `make long`.
        let headerStride = TestSize.pick(16, long: 1)
        var get = Counts(), verify = Counts(), export = Counts()
        for (n, (name, bytes)) in cases.enumerated() {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            // get: reading the document must fail, with a damage code.
            get.tried += 1
            do {
                let r = try f.vault.open(target.id)
                while try r.next() != nil {}
                Issue.record("get did not detect: \(name)")
            } catch {
                let e = VaultError.from(error)
                if e.code.isDamage {
                    get.detected += 1
                } else {
                    Issue.record("get: \(name): \(e.code) is not a damage code")
                }
            }
            // verify: the document is reported damaged.
            verify.tried += 1
            let report = try f.vault.verify([target.id])
            if let e = report.documents.first?.error, e.code.isDamage {
                verify.detected += 1
            } else {
                Issue.record("verify did not detect: \(name)")
            }
            // export: with --skip-bad the payload holds the other documents and nothing of this one.
            if n < h && n % headerStride != 0 && n != h - 1 { continue }
            export.tried += 1
            var o = ExportOptions()
            o.skipBad = true
            let (summary, out) = try f.export(o, records: [target, f.records[2]])
            let payload = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/batch-0001.json")))
            if summary.skipped.map(\.id) == [target.id], payload == f.reference([f.records[2]], shape: .objects) {
                export.detected += 1
            } else {
                Issue.record("export did not cut out: \(name)")
            }
            try? FileManager.default.removeItem(atPath: out)
        }
        try Data(original).write(to: URL(fileURLWithPath: path))
        #expect(try f.vault.verify([target.id]).isClean, "the original still verifies")
        print(
            """
                tamper matrix, \(size)-byte document (\(chunks) chunk(s), \(h)-byte header): \(cases.count) cases; \
                detected by get \(get.detected)/\(get.tried), verify \(verify.detected)/\(verify.tried), export \
                \(export.detected)/\(export.tried)
                """
        )
        #expect(get.detected == cases.count && verify.detected == cases.count && export.detected == export.tried)
        #expect(export.tried >= cases.count - h + h / headerStride)
    }

    @Test func aWrongPasswordIsNeverReportedAsDamage() throws {
        let f = try ExportTests.Fixture(sizes: [10])
        let e = #expect(throws: VaultError.self) { try f.vault.store.unlock(password: TestKeys.password("not it")) }
        #expect(e?.code == .wrongPassword)
    }
}
