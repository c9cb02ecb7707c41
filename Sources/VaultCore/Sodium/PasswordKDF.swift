internal import CSodium

/// Argon2id parameters as stored in `vault.json` and in every envelope header.
///
/// Memory is counted in KiB so that every stored value is canonical. A reader checks the
/// parameters with ``validate()`` before allocating anything: a hostile file must not make us
/// spend gigabytes or minutes.
public struct KDFParameters: Hashable, Sendable, Codable {
    /// Argon2id passes (`opslimit`).
    public var opsLimit: UInt32
    /// Argon2id memory in KiB (`memlimit / 1024`).
    public var memLimitKiB: UInt32

    /// The algorithm's name in `vault.json`: Argon2id, version 1.3 (libsodium's
    /// `crypto_pwhash_ALG_ARGON2ID13`), the only one vault uses.
    public static let algorithm = "argon2id13"

    /// Creates parameters; call ``validate()`` before use.
    public init(opsLimit: UInt32, memLimitKiB: UInt32) {
        self.opsLimit = opsLimit
        self.memLimitKiB = memLimitKiB
    }

    /// libsodium's `interactive` level: 2 passes, 64 MiB (≈0.1 s here).
    public static let interactive = KDFParameters(
        opsLimit: UInt32(crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE),
        memLimitKiB: UInt32(crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE / 1024))
    /// libsodium's `moderate` level: 3 passes, 256 MiB (≈0.7 s here). The default.
    public static let moderate = KDFParameters(
        opsLimit: UInt32(crypto_pwhash_argon2id_OPSLIMIT_MODERATE),
        memLimitKiB: UInt32(crypto_pwhash_argon2id_MEMLIMIT_MODERATE / 1024))
    /// libsodium's `sensitive` level: 4 passes, 1 GiB (≈3.5 s here). The most a reader accepts.
    public static let sensitive = KDFParameters(
        opsLimit: UInt32(crypto_pwhash_argon2id_OPSLIMIT_SENSITIVE),
        memLimitKiB: UInt32(crypto_pwhash_argon2id_MEMLIMIT_SENSITIVE / 1024))
    /// The smallest parameters Argon2id allows (1 pass, 8 KiB). Used by the fixture vectors so
    /// they run fast; never chosen for a real vault.
    public static let minimum = KDFParameters(
        opsLimit: UInt32(crypto_pwhash_argon2id_OPSLIMIT_MIN),
        memLimitKiB: UInt32(crypto_pwhash_argon2id_MEMLIMIT_MIN / 1024))

    /// Throws ``VaultError/Code/kdfParametersRejected`` unless `minimum ≤ self ≤ sensitive`.
    public func validate() throws {
        let lo = KDFParameters.minimum, hi = KDFParameters.sensitive
        guard opsLimit >= lo.opsLimit,
              memLimitKiB >= lo.memLimitKiB else {
            throw VaultError(
                .kdfParametersRejected,
                "password-hashing parameters below Argon2id's minimum (ops \(opsLimit), \(memLimitKiB) KiB)")
        }
        guard opsLimit <= hi.opsLimit,
              memLimitKiB <= hi.memLimitKiB else {
            throw VaultError(
                .kdfParametersRejected,
                "password-hashing parameters above the 'sensitive' level (ops \(opsLimit), \(memLimitKiB) KiB)",
                hint: "refusing to spend more than 1 GiB and 4 passes on one password; the file may be hostile")
        }
    }
}

/// The named strength levels offered when a vault is created.
package enum KDFLevel: String, CaseIterable, Sendable {
    case interactive, moderate, sensitive

    /// The parameters of this level.
    package var parameters: KDFParameters {
        switch self {
        case .interactive: .interactive
        case .moderate: .moderate
        case .sensitive: .sensitive
        }
    }
}

/// Password → key-encryption key, with Argon2id (`crypto_pwhash`, algorithm ARGON2ID13).
package enum PasswordKDF {
    /// Salt length in bytes (16).
    package static let saltSize = Int(crypto_pwhash_argon2id_SALTBYTES)
    /// Derived key length in bytes (32).
    package static let keySize = 32
    /// Length of the key check value stored beside the salt (16).
    package static let keyCheckSize = 16
    private static let keyCheckContext = Array("vault/v1 key check".utf8)

    /// Derives the 32-byte key-encryption key. Runs once per command.
    /// - Throws: ``VaultError/Code/kdfParametersRejected`` for out-of-range parameters,
    ///   ``VaultError/Code/internal`` if Argon2id cannot get its memory.
    package static func deriveKey(password: SecretBytes, salt: [UInt8], parameters: KDFParameters) throws -> SecretBytes
    {
        try parameters.validate()
        guard salt.count == saltSize else {
            throw VaultError(.headerMalformed, "salt must be \(saltSize) bytes, not \(salt.count)")
        }
        return try SecretBytes(count: keySize) { (out: UnsafeMutableRawBufferPointer) in
            let rc = password.withUnsafeBytes { pw -> Int32 in
                pw.withMemoryRebound(to: CChar.self) { pwc in
                    crypto_pwhash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(keySize),
                        pwc.baseAddress!, UInt64(pwc.count), salt,
                        UInt64(parameters.opsLimit), Int(parameters.memLimitKiB) * 1024,
                        crypto_pwhash_ALG_ARGON2ID13)
                }
            }
            guard rc == 0 else {
                throw VaultError(
                    .internal, "Argon2id failed (could not allocate \(parameters.memLimitKiB / 1024) MiB?)")
            }
        }
    }

    /// The public check value of a key-encryption key: BLAKE2b-128 keyed by the KEK over a fixed
    /// context. It lets a reader tell a wrong password from damaged data before touching any
    /// wrapped key. It reveals nothing a wrapped key does not already let an attacker test.
    package static func keyCheck(for kek: SecretBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: keyCheckSize)
        kek.withUnsafeBytes { k in
            _ = crypto_generichash(
                &out, keyCheckSize, keyCheckContext, UInt64(keyCheckContext.count),
                k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        return out
    }

    /// True when `check` is the check value of `kek` (constant time).
    package static func matches(kek: SecretBytes, check: [UInt8]) -> Bool {
        let expected = keyCheck(for: kek)
        return expected.withUnsafeBytes { e in check.withUnsafeBytes { Sodium.constantTimeEqual(e, $0) } }
    }
}
