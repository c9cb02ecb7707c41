// Family `rncryptor`: RNCryptor v3 messages (`vault import`). The first byte picks:
//  0  the input as a key-based message;
//  1  the input as a password-based message (PBKDF2, 10,000 rounds: slow, so one value of the
//     byte in eight);
//  2  the input with a valid HMAC appended under the test key, so the code behind the HMAC
//     (CBC decryption, the PKCS#7 padding) sees it;
//  3  the input as plaintext, encrypted by vault's writer and read back: the same bytes.
// On every message no bigger than the reader's step (all fuzz inputs): nothing is released
// before the HMAC verified — no plaintext at all from a message that then fails — and a message
// that reads to its end carries the right HMAC, checked here independently. Errors are
// VaultErrors with the reader's codes. The test keys are those of the official key-based
// vector "One byte" (Fixtures/rncryptor/key), so seeds from the vectors decrypt.
import Crypto
import Foundation
import VaultCore

enum RNCryptorFamily {
    static let encryptionKey: [UInt8] = Array(0..<16) + Array(0..<16)
    static let hmacKey: [UInt8] = Array(1..<16) + [0] + Array(1..<16) + [0]
    static let keys = try! RNCryptorKeys(encryptionKey: secret(encryptionKey), hmacKey: secret(hmacKey))

    static func secret(_ bytes: [UInt8]) -> SecretBytes { bytes.withUnsafeBytes { try! SecretBytes(copying: $0) } }
    static let passwordKeys = try! RNCryptorKeys(password: try! SecretBytes(password: "thepassword"))
    /// The reader's documented failures (RNCryptorReader's comment).
    static let codes: Set<VaultError.Code> = [
        .hmacMismatch, .badPadding, .unsupportedVersion, .headerMalformed, .truncated, .usage
    ]

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch mode % 8 {
        case 1:
            read(rest, keys: passwordKeys)
        case 2:
            read(
                rest + Array(HMAC<SHA256>.authenticationCode(for: rest, using: SymmetricKey(data: hmacKey))), keys: keys
            )
        case 3:
            let header = RNCryptorHeader(salts: nil, iv: Array((rest + [UInt8](repeating: 7, count: 16)).prefix(16)))
            let message = try! RNCryptorWriter.message(rest, keys: keys, header: header)
            expect(read(message, keys: keys) == rest, "a message vault wrote does not read back as its plaintext")
        default:
            read(rest, keys: keys)
        }
    }

    /// Reads the whole message in small steps; the plaintext, or nil when it failed.
    @discardableResult
    static func read(_ message: [UInt8], keys: RNCryptorKeys) -> [UInt8]? {
        var released: [UInt8] = []
        let plain = onlyVaultErrors("an RNCryptor message", codes: codes) { () -> [UInt8] in
            let reader = try RNCryptorReader(input: BytesSource(message), keys: keys)
            var buffer = [UInt8](repeating: 0, count: 37)
            while true {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { return released }
                released += buffer[..<n]
            }
        }
        guard message.count <= 1 << 20 else { return plain }
        expect(
            plain != nil || released.isEmpty,
            "plaintext released from a message that then failed (\(released.count) bytes)")
        if plain != nil, keys === Self.keys {
            let tag = HMAC<SHA256>.authenticationCode(for: message.dropLast(32), using: SymmetricKey(data: hmacKey))
            expect(Array(tag) == Array(message.suffix(32)), "a message read to its end without the right HMAC")
        }
        return plain
    }
}
