internal import CSodium

/// Ed25519 signatures (libsodium `crypto_sign_*`, RFC 8032): what a receiver signs its receipts
/// with, and what a station checks them with. The secret key lives in protected memory
/// (``SecretBytes``), made from a 32-byte seed so it can be kept sealed as the seed alone.
package struct SigningKey: Sendable {
    /// The seed's size (`crypto_sign_SEEDBYTES`).
    package static let seedSize = 32
    /// A public key's size (`crypto_sign_PUBLICKEYBYTES`).
    package static let publicKeySize = 32
    /// A signature's size (`crypto_sign_BYTES`).
    package static let signatureSize = 64

    /// The expanded secret key (`crypto_sign_SECRETKEYBYTES`: the seed, then the public key).
    private let secretKey: SecretBytes
    /// The public key.
    package let publicKey: [UInt8]

    /// The key pair of `seed` (32 bytes).
    package init(seed: SecretBytes) throws {
        try Sodium.ensureInitialized()
        precondition(seed.count == Self.seedSize, "internal error: an Ed25519 seed is 32 bytes")
        var pk = [UInt8](repeating: 0, count: Self.publicKeySize)
        secretKey = try SecretBytes(count: Int(crypto_sign_secretkeybytes())) { sk in
            seed.withUnsafeBytes { s in
                _ = pk.withUnsafeMutableBytes { p in
                    crypto_sign_seed_keypair(
                        p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        publicKey = pk
    }

    /// The detached signature of `message`.
    package func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Self.signatureSize)
        secretKey.withUnsafeBytes { sk in
            message.withUnsafeBufferPointer { m in
                _ = signature.withUnsafeMutableBufferPointer { s in
                    crypto_sign_detached(
                        s.baseAddress!, nil, m.baseAddress, UInt64(m.count),
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return signature
    }

    /// True when `signature` is `publicKey`'s signature of `message` (libsodium refuses
    /// non-canonical signatures and small-order public keys).
    package static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard (try? Sodium.ensureInitialized()) != nil,
              signature.count == signatureSize,
              publicKey.count == publicKeySize else { return false }
        return message.withUnsafeBufferPointer { m in
            crypto_sign_verify_detached(signature, m.baseAddress, UInt64(m.count), publicKey) == 0
        }
    }
}
