import Crypto
import Foundation
import Testing
@testable import VaultCore

/// Runs every `Fixtures/envelope/*.vector` file, and checks the committed files are exactly
/// what the committed generator produces.
@Suite struct VectorTests {
    struct Parsed {
        var fields: [String: String]
        var bytes: [UInt8]
    }

    static func load(from dir: String = FixtureGenerator.directory) throws -> [(String, Parsed)] {
        let names = try inputFiles(in: dir, suffix: ".vector")
        return try names.map { name in
            let data = Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
            var split = 0
            while split + 1 < data.count && !(data[split] == 0x0A && data[split + 1] == 0x0A) { split += 1 }
            let head = String(decoding: data[0..<split], as: UTF8.self)
            var fields: [String: String] = [:]
            for line in head.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                fields[String(parts[0])] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            }
            return (name, Parsed(fields: fields, bytes: Array(data[min(data.count, split + 2)...])))
        }
    }

    @Test func everyVectorGivesItsExpectedOutcome() throws {
        let vectors = try Self.load()
        #expect(vectors.count >= 30, "no (or too few) vectors found in \(FixtureGenerator.directory)")
        var good = 0, bad = 0
        for (name, v) in vectors {
            let pw = Array((v.fields["password"] ?? "").utf8)
            let password = try pw.withUnsafeBytes { try SecretBytes(copying: $0) }
            var released: [UInt8] = []
            var outcome = "success"
            var document: DocumentMetadata?
            do {
                let header = try EnvelopeReader.readHeader(MemoryEnvelope(v.bytes))
                let keyring = try Keyring.unlock(password: password, envelope: header)
                let reader = try EnvelopeReader(input: MemoryEnvelope(v.bytes), keyring: keyring, verifyDigest: true)
                document = reader.metadata
                while let batch = try reader.next() { released += batch }
            } catch {
                outcome = VaultError.from(error).code.rawValue
            }
            #expect(outcome == v.fields["expect"], "\(name): got \(outcome)")
            #expect(
                Hex.encode(Array(SHA256.hash(data: released))) == v.fields["payload"],
                "\(name): released plaintext differs")
            if outcome == "success" {
                good += 1
                #expect(document.map { String(reflecting: $0.name) } == v.fields["name"], "\(name): document name")
                #expect(UInt64(released.count) == document?.size)
            } else {
                bad += 1
            }
        }
        #expect(good >= 7 && bad >= 25)
    }

    @Test func committedVectorsMatchTheGenerator() throws {
        let generated = FixtureGenerator.vectors()
        let dir = FixtureGenerator.directory
        if ProcessInfo.processInfo.environment["VAULT_REGENERATE_FIXTURES"] == "1" {
            try? FileManager.default.removeItem(atPath: dir)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for v in generated { try Data(v.fileContents).write(to: URL(fileURLWithPath: "\(dir)/\(v.name).vector")) }
        }
        let files = try inputFiles(in: dir, suffix: ".vector")
        #expect(Set(files) == Set(generated.map { "\($0.name).vector" }))
        for v in generated {
            let committed = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(v.name).vector"))
            #expect(
                Array(committed) == v.fileContents,
                "\(v.name).vector differs from the generator's output (run make fixtures)")
        }
    }
}
