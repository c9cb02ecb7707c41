import Crypto
import CryptoExtras
import Foundation
import Testing
@testable import VaultCore

/// RNCryptor v3: the official vectors in both directions, streaming, and a tamper matrix
/// against a real vault (nothing that fails is ever added).
@Suite struct RNCryptorTests {
    /// The records of `Fixtures/rncryptor/<name>`: `name: value` lines, blank-line separated.
    static func vectors(_ name: String) throws -> [[String: String]] {
        let path = URL(fileURLWithPath: FixtureGenerator.directory).deletingLastPathComponent()
            .appendingPathComponent("rncryptor/" + name).path
        return try records(try String(contentsOfFile: path, encoding: .utf8), of: name)
    }

    /// The records of a vector file's text; ``NothingFound`` for none.
    static func records(_ text: String, of name: String) throws -> [[String: String]] {
        var records: [[String: String]] = [], current: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) + [""] {
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                if !current.isEmpty { records.append(current); current = [:] }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            current[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return try requireSome(records, "records in Fixtures/rncryptor/\(name)")
    }

    static func hex(_ s: String?) -> [UInt8] {
        let digits = Array((s ?? "").filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static func secret(_ bytes: [UInt8]) -> SecretBytes { bytes.withUnsafeBytes { try! SecretBytes(copying: $0) } }

    /// Reads a whole message through the reader, in odd-sized pieces.
    static func decrypt(_ message: [UInt8], keys: RNCryptorKeys, piece: Int = 7) throws -> [UInt8] {
        let reader = try RNCryptorReader(input: BytesSource(message), keys: keys)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: piece)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if n == 0 { return out }
            out += buffer[..<n]
        }
    }

    @Test func kdfVectors() throws {
        let records = try Self.vectors("kdf")
        #expect(records.count == 6)
        for r in records {
            let keys = try RNCryptorKeys(password: Self.secret(Array(r["password"]!.utf8)))
            let salt = Self.hex(r["salt_hex"])
            let derived = try keys.keys(for: RNCryptorHeader(salts: (salt, salt), iv: [UInt8](repeating: 0, count: 16)))
            #expect(derived.encryption.withUnsafeBytes { Array($0) } == Self.hex(r["key_hex"]), "\(r["title"]!)")
        }
    }

    @Test func keyVectorsBothWays() throws {
        let records = try Self.vectors("key")
        #expect(records.count == 4)
        for r in records {
            let keys = try RNCryptorKeys(
                encryptionKey: Self.secret(Self.hex(r["enc_key_hex"])),
                hmacKey: Self.secret(Self.hex(r["hmac_key_hex"])))
            let plaintext = Self.hex(r["plaintext_hex"]), message = Self.hex(r["ciphertext_hex"])
            #expect(
                try RNCryptorWriter.message(
                    plaintext, keys: keys, header: RNCryptorHeader(salts: nil, iv: Self.hex(r["iv_hex"]))) == message,
                "\(r["title"]!)")
            #expect(try Self.decrypt(message, keys: keys) == plaintext, "\(r["title"]!)")
        }
    }

    @Test func passwordVectorsBothWays() throws {
        let records = try Self.vectors("password")
        #expect(records.count == 6)
        for r in records {
            let keys = try RNCryptorKeys(password: Self.secret(Array(r["password"]!.utf8)))
            let header = RNCryptorHeader(
                salts: (Self.hex(r["enc_salt_hex"]), Self.hex(r["hmac_salt_hex"])), iv: Self.hex(r["iv_hex"]))
            let plaintext = Self.hex(r["plaintext_hex"]), message = Self.hex(r["ciphertext_hex"])
            #expect(try RNCryptorWriter.message(plaintext, keys: keys, header: header) == message, "\(r["title"]!)")
            #expect(try Self.decrypt(message, keys: keys) == plaintext, "\(r["title"]!)")
            // The wrong credential kind is refused before any byte is read past the header.
            let other = try RNCryptorKeys(
                encryptionKey: Self.secret([UInt8](repeating: 1, count: 32)),
                hmacKey: Self.secret([UInt8](repeating: 2, count: 32)))
            let e = #expect(throws: VaultError.self) { try RNCryptorReader(input: BytesSource(message), keys: other) }
            #expect(e?.code == .usage)
        }
    }

    @Test(arguments: [0, 1, 15, 16, 17, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20 | 5])
    func streamingRoundTrip(size: Int) throws {
        let keys = try RNCryptorKeys(password: Self.secret(Array("pässwörd".utf8)))
        let plaintext = testBytes(size, seed: UInt64(size + 1))
        let message = try RNCryptorWriter.message(
            plaintext, keys: keys, header: RNCryptorWriter.randomHeader(for: keys))
        #expect(message.count == 34 + (size / 16 + 1) * 16 + 32)
        #expect(try Self.decrypt(message, keys: keys, piece: 65_537) == plaintext)
    }

    @Test func everyBitFlipTruncationAndExtensionIsRefusedAndAddsNothing() throws {
        let dir = TempDir()
        let vault = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
        let keys = try RNCryptorKeys(password: Self.secret(Array("pw".utf8)))
        let plaintext = Array("a small scan, three blocks long......".utf8)
        let message = try RNCryptorWriter.message(
            plaintext, keys: keys, header: RNCryptorWriter.randomHeader(for: keys))
        var mutations: [(String, [UInt8])] = []
        for i in 0..<message.count {
            for bit in 0..<8 { var m = message; m[i] ^= 1 << bit; mutations.append(("flip \(i).\(bit)", m)) }
        }
        for n in 0..<message.count { mutations.append(("cut at \(n)", Array(message[..<n]))) }
        mutations.append(("one byte more", message + [0]))
        mutations.append(("a block more", message + [UInt8](repeating: 0, count: 16)))
        var codes: [VaultError.Code: Int] = [:]
        for (what, m) in mutations {
            let e = #expect(throws: VaultError.self, "\(what)") {
                _ = try vault.add(
                    from: RNCryptorReader(input: BytesSource(m), keys: keys), name: "scan", allowDuplicate: true)
            }
            if let e {
                codes[e.code, default: 0] += 1; #expect(e.code.isDamage || e.code == .usage, "\(what): \(e.code)")
            }
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir.file("vault/objects")).isEmpty,
            "nothing added, no temporary file")
        #expect(
            codes[.hmacMismatch, default: 0] > 0 && codes[.truncated, default: 0] > 0
                && codes[.unsupportedVersion, default: 0] > 0)
        // And the unchanged message is added, byte for byte.
        let record = try vault.add(from: RNCryptorReader(input: BytesSource(message), keys: keys), name: "scan")
        var back: [UInt8] = []
        let reader = try vault.open(record.id)
        while let batch = try reader.next() { back += batch }
        #expect(back == plaintext && record.metadata.contentType == "text/plain")
    }

    @Test func badPaddingUnderAValidHMACAndAnUnknownVersionAreNamed() throws {
        let encryption = [UInt8](repeating: 7, count: 32), mac = [UInt8](repeating: 9, count: 32)
        let keys = try RNCryptorKeys(encryptionKey: Self.secret(encryption), hmacKey: Self.secret(mac))
        let iv = [UInt8](repeating: 3, count: 16)
        // One block whose last byte is 0: never valid PKCS#7, though the HMAC is right.
        let ciphertext = Array(
            try AES._CBC.encrypt(
                [UInt8](repeating: 0x41, count: 15) + [0], using: .init(data: encryption),
                iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        let body = [3, 0] + iv + ciphertext
        let message = body + Array(HMAC<SHA256>.authenticationCode(for: body, using: .init(data: mac)))
        let bad = #expect(throws: VaultError.self) { try Self.decrypt(message, keys: keys) }
        #expect(bad?.code == .badPadding)
        let v2 = #expect(throws: VaultError.self) { try Self.decrypt([2] + message.dropFirst(), keys: keys) }
        #expect(v2?.code == .unsupportedVersion && v2?.message.contains("0x02") == true)
    }
}
