/// RNCryptor data format v3 (RNCryptor-Spec-v3), the format of the apps vault replaces. Pure:
/// constants and header parsing, no crypto, no I/O.
///
/// ```
/// password-based: 03 01 ‖ encryption salt (8) ‖ HMAC salt (8) ‖ IV (16) ‖ AES-256-CBC ciphertext ‖ HMAC-SHA256 (32)
/// key-based:      03 00 ‖ IV (16) ‖ AES-256-CBC ciphertext ‖ HMAC-SHA256 (32)
/// ```
/// Keys: PBKDF2-HMAC-SHA1, 10,000 rounds, 32 bytes, once per salt (password-based), or two
/// caller-supplied 32-byte keys. The HMAC covers header ‖ ciphertext; PKCS#7 padding, so the
/// ciphertext is at least one 16-byte block.
package enum RNCryptorFormat {
    /// The only version this reads.
    package static let version: UInt8 = 3
    /// Options byte of a password-based message.
    package static let optionsPassword: UInt8 = 1
    /// Options byte of a key-based message.
    package static let optionsKeys: UInt8 = 0
    /// Each salt.
    package static let saltSize = 8
    /// The AES-CBC IV, and the AES block.
    package static let blockSize = 16
    /// The HMAC-SHA256 trailer.
    package static let hmacSize = 32
    /// Each key (AES-256, HMAC).
    package static let keySize = 32
    /// PBKDF2-HMAC-SHA1 rounds, fixed by the format.
    package static let pbkdf2Rounds = 10_000
    /// Header of a password-based message: version, options, two salts, IV.
    package static let passwordHeaderSize = 2 + 2 * saltSize + blockSize
    /// Header of a key-based message: version, options, IV.
    package static let keyHeaderSize = 2 + blockSize
}

/// A parsed RNCryptor v3 header.
package struct RNCryptorHeader: Sendable, Equatable {
    /// The salts of a password-based message; nil for a key-based one.
    package var salts: (encryption: [UInt8], hmac: [UInt8])?
    /// The AES-CBC IV.
    package var iv: [UInt8]

    /// True for a password-based message.
    package var usesPassword: Bool { salts != nil }

    /// The header's bytes, as they appear in the message (and in the HMAC).
    package var bytes: [UInt8] {
        if let salts {
            return [RNCryptorFormat.version, RNCryptorFormat.optionsPassword] + salts.encryption + salts.hmac + iv
        }
        return [RNCryptorFormat.version, RNCryptorFormat.optionsKeys] + iv
    }

    /// A header.
    package init(salts: (encryption: [UInt8], hmac: [UInt8])?, iv: [UInt8]) {
        self.salts = salts
        self.iv = iv
    }

    /// The header's length from its first two bytes (version, options).
    /// - Throws: ``VaultError/Code/unsupportedVersion`` naming the version byte;
    ///   ``VaultError/Code/headerMalformed`` for an unknown options byte.
    package static func length(version: UInt8, options: UInt8) throws -> Int {
        guard version == RNCryptorFormat.version else {
            throw VaultError(
                .unsupportedVersion,
                "RNCryptor version 0x\(Hex.digits(version)) is not supported (only v3, 0x03)")
        }
        switch options {
        case RNCryptorFormat.optionsPassword: return RNCryptorFormat.passwordHeaderSize
        case RNCryptorFormat.optionsKeys: return RNCryptorFormat.keyHeaderSize
        default: throw VaultError(.headerMalformed, "unknown RNCryptor options byte 0x\(Hex.digits(options))")
        }
    }

    /// Parses a whole header (as long as ``length(version:options:)`` says).
    package static func parse(_ bytes: [UInt8]) throws -> RNCryptorHeader {
        guard bytes.count >= 2 else { throw VaultError(.truncated, "the file ends inside its RNCryptor header") }
        let n = try length(version: bytes[0], options: bytes[1])
        guard bytes.count == n else { throw VaultError(.truncated, "the file ends inside its RNCryptor header") }
        let s = RNCryptorFormat.saltSize
        if bytes[1] == RNCryptorFormat.optionsPassword {
            return RNCryptorHeader(
                salts: (Array(bytes[2..<2 + s]), Array(bytes[2 + s..<2 + 2 * s])), iv: Array(bytes[2 + 2 * s..<n]))
        }
        return RNCryptorHeader(salts: nil, iv: Array(bytes[2..<n]))
    }

    package static func == (a: RNCryptorHeader, b: RNCryptorHeader) -> Bool {
        a.bytes == b.bytes
    }
}
