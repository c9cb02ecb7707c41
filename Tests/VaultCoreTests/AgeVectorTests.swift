import CZlib
import Crypto
import Foundation
import Testing
@testable import VaultCore

/// age (age-encryption.org/v1): the C2SP CCTV test vectors of every family vault implements,
/// each giving exactly the expected outcome and the expected hash of the plaintext released
/// (failures included); the successful ones re-encoded byte for byte (header and STREAM under
/// the vector's file key); and vault's own files opened again, for both recipient types.
@Suite struct AgeVectorTests {
    static let families = ["x25519", "hybrid", "stream_", "hmac_", "header_", "stanza_"]
    static let notImplemented = ["scrypt", "armor_"]
    static let known: Set = [
        "expect", "payload", "file key", "identity", "passphrase", "armored", "compressed", "comment"
    ]

    struct Vector {
        var name: String
        var fields: [(String, String)]
        var file: [UInt8]
        func value(_ key: String) -> String? { fields.first { $0.0 == key }?.1 }
        func values(_ key: String) -> [String] { fields.filter { $0.0 == key }.map(\.1) }
    }

    static var directory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/age/testdata").path
    }

    static func load(_ name: String) throws -> Vector {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        guard let blank = (0..<bytes.count - 1).first(where: { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A }) else {
            throw NothingFound(what: "the header of vector \(name)")
        }
        let fields = String(decoding: bytes[..<blank], as: UTF8.self).split(separator: "\n").map { line in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var v = Vector(name: name, fields: fields, file: Array(bytes[(blank + 2)...]))
        if v.value("compressed") == "zlib" { v.file = try inflate(v.file) }
        return v
    }

    /// zlib's inflate (the library, not ours).
    static func inflate(_ input: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw NothingFound(what: "zlib")
        }
        defer { inflateEnd(&stream) }
        var out: [UInt8] = []
        var input = input
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var rc: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inp in
            stream.next_in = inp.baseAddress
            stream.avail_in = uInt(inp.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { c in
                    stream.next_out = c.baseAddress
                    stream.avail_out = uInt(c.count)
                    rc = CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                out += chunk[..<(chunk.count - Int(stream.avail_out))]
            } while rc == Z_OK
        }
        guard rc == Z_STREAM_END else { throw NothingFound(what: "a whole zlib stream") }
        return out
    }

    static func hex(_ s: String) -> [UInt8] {
        let d = Array(s)
        return stride(from: 0, to: d.count, by: 2).map { UInt8(String(d[$0...$0 + 1]), radix: 16)! }
    }

    /// Decrypts `v` as an API user would: the outcome's category, and the hash of every byte released.
    static func decrypt(_ v: Vector) throws -> (outcome: String, released: String) {
        let identities = try v.values("identity").map { try AgeIdentity(parsing: $0) }
        var hash = SHA256()
        do {
            let reader = try AgeReader(input: BytesSource(v.file), identities: identities)
            var buffer = [UInt8](repeating: 0, count: 10_000)  // not a chunk multiple
            while true {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { break }
                hash.update(data: buffer[..<n])
            }
            return ("success", Hex.encode(Array(hash.finalize())))
        } catch let f as AgeFailure {
            let outcome =
                switch f.kind {
                case .header: "header failure"
                case .noMatch: "no match"
                case .hmac: "HMAC failure"
                case .payload: "payload failure"
                case .otherFile: "other file"
                }
            return (outcome, Hex.encode(Array(hash.finalize())))
        }
    }

    static func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    @Test func everyVectorOfTheImplementedFamiliesGivesItsOutcomeAndReleasedPlaintext() throws {
        let all = try Self.names()
        let ours = all.filter { n in Self.families.contains { n.hasPrefix($0) } }
        let others = all.filter { n in !Self.families.contains { n.hasPrefix($0) } }
        // The copy holds 143 vectors: 83 of these families; the rest are scrypt, armor, and two
        // single ones (`empty`, `version_unsupported`) that the test runs too.
        #expect(ours.count == 83)
        var checked = 0, hashed = 0
        for name in ours + others.filter({ n in !Self.notImplemented.contains { n.hasPrefix($0) } }) {
            let v = try Self.load(name)
            #expect(v.fields.allSatisfy { Self.known.contains($0.0) }, "\(name): an unknown key")
            let expect = try #require(v.value("expect"), Comment(rawValue: name))
            let got = try Self.decrypt(v)
            #expect(got.outcome == expect, "\(name): \(v.value("comment") ?? "")")
            if let payload = v.value("payload") {
                #expect(got.released == payload, "\(name): released plaintext")
                hashed += 1
            }
            checked += 1
        }
        #expect(checked == 85)
        #expect(hashed >= 30)
        let skipped = others.filter { n in Self.notImplemented.contains { n.hasPrefix($0) } }
        #expect(skipped.count == 143 - 85, "scrypt and armor vectors: \(skipped.count)")
    }

    /// The push-driven opener (the receiver's) over the same vectors, fed in odd pieces: the same
    /// outcome, and on success the same plaintext.
    @Test func theOpenerAgreesWithTheReaderOnEveryVector() throws {
        var checked = 0
        for name in try Self.names() where !Self.notImplemented.contains(where: { name.hasPrefix($0) }) {
            let v = try Self.load(name)
            let identities = try v.values("identity").map { try AgeIdentity(parsing: $0) }
            var opener = AgeOpener(identities: identities)
            var hash = SHA256()
            var outcome = "success"
            do {
                var at = 0
                while at < v.file.count {
                    let n = min(7919, v.file.count - at)
                    try v.file[at..<at + n].withUnsafeBytes { try opener.feed($0) { hash.update(bufferPointer: $0) } }
                    at += n
                }
                try opener.finish { hash.update(bufferPointer: $0) }
            } catch let f as AgeFailure {
                outcome = [
                    "header": "header failure", "no match": "no match", "HMAC": "HMAC failure",
                    "payload": "payload failure"
                ][f.kind.rawValue]!
            }
            #expect(outcome == v.value("expect"), "\(name)")
            if outcome == "success" { #expect(Hex.encode(Array(hash.finalize())) == v.value("payload"), "\(name)") }
            checked += 1
        }
        #expect(checked == 85)
    }

    /// A hostile header sent a byte at a time (a stanza of 14,000 body lines, then a line of
    /// 60,000 bytes without its end): every byte is searched once, not once per piece. Bounds:
    /// more than 512 stanzas, or more than 1 MiB, is refused as such.
    @Test func aHeaderFedAByteAtATimeIsParsedOnceAndIsBounded() throws {
        var header = AgeHeader.versionLine + Array("-> a\n".utf8)
        for _ in 0..<14_000 { header += [UInt8](repeating: 0x41, count: 64) + [0x0A] }
        header += [UInt8](repeating: 0x41, count: 60_000)
        var parser = AgeHeaderParser()
        for n in 1...header.count {
            let done = try header[..<n].withUnsafeBytes { try parser.parse($0, complete: false) }
            #expect(done == nil)
            if done != nil { break }
        }
        #expect(parser.examined <= header.count)
        #expect(throws: AgeFailure(.header, "the header is cut short")) {
            try header.withUnsafeBytes { try parser.parse($0, complete: true) }
        }
        var stanzas = AgeHeader.versionLine
        for _ in 0...512 { stanzas += Array("-> a\n\n".utf8) }
        #expect(throws: AgeFailure(.header, "more than 512 recipient stanzas")) {
            try stanzas.withUnsafeBytes { try AgeHeader.parse($0, complete: false) }
        }
        let long = AgeHeader.versionLine + [UInt8](repeating: 0x41, count: AgeHeader.maxLength)
        #expect(throws: AgeFailure(.header, "the header is longer than 1 MiB")) {
            try long.withUnsafeBytes { try AgeHeader.parse($0, complete: false) }
        }
    }

    @Test func successfulVectorsReencodeByteForByteUnderTheirFileKey() throws {
        var done = 0
        for name in try Self.names() where Self.families.contains(where: { name.hasPrefix($0) }) {
            let v = try Self.load(name)
            guard v.value("expect") == "success", let key = v.value("file key") else { continue }
            let fileKey = try Self.hex(key).withUnsafeBytes { try SecretBytes(copying: $0) }
            let header = try #require(try v.file.withUnsafeBytes { try AgeHeader.parse($0, complete: true) })
            #expect(AgeHeader.encode(header.stanzas, fileKey: fileKey) == Array(v.file[..<header.length]), "\(name)")
            // The payload: decrypt, then seal the plaintext again under the same file key and nonce.
            let identities = try v.values("identity").map { try AgeIdentity(parsing: $0) }
            let plain = try Self.readAll(AgeReader(input: BytesSource(v.file), identities: identities))
            let nonce = Array(v.file[header.length..<header.length + 16])
            let keying = AgeFileKeying(fileKey: fileKey, nonce: nonce, header: Array(v.file[..<header.length]))
            #expect(try Self.seal(plain, keying) == v.file, "\(name): STREAM re-encryption")
            done += 1
        }
        #expect(done == 18)
    }

    static func readAll(_ reader: AgeReader) throws -> [UInt8] {
        var out: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 70_000)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if n == 0 { return out }
            out += buffer[..<n]
        }
    }

    /// Seals `plain` the way the export pipeline does: the prefix, then batches of whole chunks.
    static func seal(_ plain: [UInt8], _ keying: AgeFileKeying, batch: Int = 3 * 65536) throws -> [UInt8] {
        let sealer = try AgeFileSealer(keying: keying, plaintextSize: UInt64(plain.count), threads: 2)
        var out = sealer.prefix
        var scratch = [UInt8](repeating: 0, count: AgeFileSealer.maxOutput(for: batch))
        var at = 0
        while at < plain.count {
            let n = min(batch, plain.count - at)
            let w = plain[at..<at + n].withUnsafeBytes { p in
                scratch.withUnsafeMutableBytes { sealer.seal(p, into: $0) }
            }
            out += scratch[..<w]
            at += n
        }
        let w = scratch.withUnsafeMutableBytes { sealer.finish(into: $0) }
        return out + scratch[..<w]
    }

    @Test(arguments: [0, 1, 65535, 65536, 65537, 3 * 65536, 200_000])
    func vaultsFilesOpenForEachRecipientTypeAndTheirLengthIsKnownInAdvance(size: Int) throws {
        let x = try AgeIdentity.generate(postQuantum: false), pq = try AgeIdentity.generate(postQuantum: true)
        let plain = SystemRandom().bytes(size)
        for recipients in [[x.recipient], [pq.recipient], [x.recipient, pq.recipient]] {
            let keying = try AgeFileKeying(recipients: recipients)
            #expect(keying.header.count == AgeFormat.headerLength(for: recipients))
            let file = try Self.seal(plain, keying)
            #expect(
                UInt64(file.count) == AgeFormat.fileLength(plaintext: UInt64(size), headerLength: keying.header.count))
            for identity in [x, pq] where recipients.contains(identity.recipient) {
                #expect(try Self.readAll(AgeReader(input: BytesSource(file), identities: [identity])) == plain)
            }
            let stranger = try AgeIdentity.generate(postQuantum: false)
            #expect(throws: AgeFailure(.noMatch, "no stanza is addressed to the identities given")) {
                try AgeReader(input: BytesSource(file), identities: [stranger])
            }
        }
    }

    /// A capture-only station's keyings are made ahead on another thread: each must still be
    /// fresh (its own file key, nonce and ephemeral share) and open for the recipient only.
    @Test func keyingsMadeAheadAreEachFreshAndOpenForTheirRecipient() throws {
        let office = try AgeIdentity.generate(postQuantum: false)
        let supply = MadeAhead(depth: 4) { PayloadSealing.newKeying([office.recipient]) }
        let keyings = try (0..<40).map { _ in try supply.next() }  // ten times the depth: refills ran
        #expect(Set(keyings.map(\.header)).count == 40)
        #expect(Set(keyings.map(\.nonce)).count == 40)
        #expect(Set(keyings.map { k in k.fileKey.withUnsafeBytes { Array($0) } }).count == 40)
        let stranger = try AgeIdentity.generate(postQuantum: false)
        for (i, keying) in keyings.enumerated() {
            let plain = Array("document \(i)".utf8)
            let file = try Self.seal(plain, keying)
            #expect(try Self.readAll(AgeReader(input: BytesSource(file), identities: [office])) == plain)
            #expect(throws: AgeFailure.self) { try AgeReader(input: BytesSource(file), identities: [stranger]) }
        }
    }

    @Test func keysRoundTripThroughBech32AndSecretsAreRefusedAsRecipients() throws {
        for pq in [false, true] {
            let id = try AgeIdentity.generate(postQuantum: pq)
            let again = try AgeIdentity(parsing: id.secretText)
            #expect(again.recipient == id.recipient)
            #expect(try AgeRecipient(parsing: id.recipient.description) == id.recipient)
            #expect(id.secretText.hasPrefix(pq ? "AGE-SECRET-KEY-PQ-1" : "AGE-SECRET-KEY-1"))
            #expect(id.recipient.description.hasPrefix(pq ? "age1pq1" : "age1"))
            let e = try #require(throws: VaultError.self) { try AgeRecipient(parsing: id.secretText) }
            #expect(!e.message.contains(id.secretText) && !e.message.contains(id.secretText.lowercased()))
        }
        // The recipient in c2sp.org/age's X25519 example, and a flipped checksum character.
        let example = "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj"
        #expect(try AgeRecipient(parsing: example).description == example)
        #expect(throws: VaultError.self) { try AgeRecipient(parsing: String(example.dropLast()) + "k") }
        #expect(throws: VaultError.self) { try AgeRecipient(parsing: "AGE1" + example.dropFirst(4)) }  // mixed case
    }
}
