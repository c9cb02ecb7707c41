import Crypto
import CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes RNCryptor v3 messages, streaming: the encrypting direction of ``RNCryptorReader``.
/// vault itself never writes RNCryptor (its own envelope is the format it keeps documents in);
/// this exists to check the format against the published vectors byte for byte, and to make
/// large test messages without holding them in memory.
package enum RNCryptorWriter {
    /// Encrypts everything `source` yields into `sink`, under `keys`, with the salts and IV of
    /// `header` (give random ones for real use): header, AES-256-CBC with PKCS#7 padding,
    /// HMAC-SHA256 over header and ciphertext.
    package static func encrypt(
        from source: any ByteSource, to sink: (UnsafeRawBufferPointer) throws -> Void,
        keys: RNCryptorKeys, header: RNCryptorHeader
    ) throws {
        let (encryption, mac) = try keys.keys(for: header)
        var hmac = HMAC<SHA256>(key: mac)
        let head = header.bytes
        hmac.update(data: head)
        try head.withUnsafeBytes(sink)
        var iv = header.iv
        let step = 1 << 20
        var buffer = [UInt8](repeating: 0, count: step)
        defer { buffer.withUnsafeMutableBytes { Sodium.wipe($0) } }
        while true {
            let n = try buffer.withUnsafeMutableBytes { try source.readFully(into: $0) }
            let final = n < step
            var block = Array(buffer[..<n])
            if final {
                let pad = RNCryptorFormat.blockSize - n % RNCryptorFormat.blockSize
                block += [UInt8](repeating: UInt8(pad), count: pad)
            }
            let ciphertext = Array(
                try AES._CBC.encrypt(block, using: encryption, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
            block.withUnsafeMutableBytes { Sodium.wipe($0) }
            hmac.update(data: ciphertext)
            try ciphertext.withUnsafeBytes(sink)
            if final { break }
            iv = Array(ciphertext.suffix(RNCryptorFormat.blockSize))
        }
        try Array(hmac.finalize()).withUnsafeBytes(sink)
    }

    /// A message holding `plaintext` (small inputs: vectors, tests).
    package static func message(_ plaintext: [UInt8], keys: RNCryptorKeys, header: RNCryptorHeader) throws -> [UInt8] {
        var out: [UInt8] = []
        try encrypt(from: BytesSource(plaintext), to: { out += $0 }, keys: keys, header: header)
        return out
    }

    /// A header with random salts (for `keys` with a password) and a random IV.
    package static func randomHeader(
        for keys: RNCryptorKeys, random: any RandomSource = SystemRandom()
    ) -> RNCryptorHeader {
        let salts =
            keys.isPassword ? (random.bytes(RNCryptorFormat.saltSize), random.bytes(RNCryptorFormat.saltSize)) : nil
        return RNCryptorHeader(salts: salts, iv: random.bytes(RNCryptorFormat.blockSize))
    }
}
