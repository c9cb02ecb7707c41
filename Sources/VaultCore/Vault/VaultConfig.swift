#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The contents of `vault.json`: public parameters and the wrapped vault key. No secret is
/// stored in clear: the vault key is sealed under the password-derived key-encryption key.
///
/// `vault/2` adds the key epoch (0 until the first password change) and, after a password
/// change, the keyring of earlier epochs sealed under the current vault key. A `vault/2` vault
/// always has a history: a missing log is a finding, never a fresh start. `vault/1` files are
/// read as epoch 0 and rewritten as `vault/2` by the first command that opens them for writing.
package struct VaultConfig: Codable, Equatable {
    static let currentFormat = "vault/3"
    /// The format before: the destination list in `destinations.vlt` rather than the history.
    static let previousFormat = "vault/2"
    static let legacyFormat = "vault/1"

    /// Format identifier, `vault/2` (or `vault/1`, read as epoch 0 with no keyring).
    var format: String
    /// Random vault id (32 hex digits).
    var id: String
    /// When the vault was created (ISO 8601).
    var created: String
    /// Argon2id parameters.
    var kdf: KDF
    /// Argon2id salt (base64).
    var salt: String
    /// Check value of the key-encryption key (base64): tells a wrong password apart quickly.
    var keyCheck: String
    /// The vault key (used for the index) sealed under the KEK: nonce and ciphertext (base64).
    var wrappedKey: WrappedKey
    /// The key epoch (`vault/2`): 0, then one more for each password change.
    var epoch: UInt32?
    /// The earlier epochs' keys (`vault/2` after a password change): a sealed state file
    /// (purpose keyring, role `vault.json`) under the current vault key, base64.
    var keyring: String?
    /// A capture-only station's recipients (`age1…`, `age1pq1…`): every document is sealed to
    /// them as it is added, and nothing the vault keeps opens it. Public keys, kept in clear and
    /// bound into the vault key's wrap (``wrapAD``): a file edited to drop or change them does
    /// not unlock.
    var capture: [String]?
    /// True when a capture-only station keeps no document names either (they are sealed too): its
    /// records say ``CapturedDocument/sealedName``. Bound into the wrap with the recipients.
    var captureSealsNames: Bool?

    struct KDF: Codable, Equatable {
        var algorithm: String
        var opsLimit: UInt32
        var memLimitKiB: UInt32
    }

    struct WrappedKey: Codable, Equatable {
        var nonce: String
        var ciphertext: String
    }

    package var parameters: KDFParameters { KDFParameters(opsLimit: kdf.opsLimit, memLimitKiB: kdf.memLimitKiB) }

    /// The key epoch (0 for `vault/1`).
    var keyEpoch: UInt32 { epoch ?? 0 }

    /// True for a `vault/1` file (no epoch; no promise that a history exists).
    var isLegacy: Bool { format == Self.legacyFormat }

    /// The bytes the vault key wrap authenticates; for `vault/2` they include the epoch, so an
    /// edited epoch or format does not unwrap.
    var wrapAD: [UInt8] {
        if isLegacy { return Array("vault.json|\(format)|\(id)|\(kdf.opsLimit)|\(kdf.memLimitKiB)|\(salt)".utf8) }
        let bound = "vault.json|\(format)|\(id)|\(keyEpoch)|\(kdf.opsLimit)|\(kdf.memLimitKiB)|\(salt)"
        guard let capture else { return Array(bound.utf8) }
        let names = captureSealsNames == true ? "|sealed-names" : ""
        return Array((bound + "|capture|" + capture.joined(separator: ",") + names).utf8)
    }

    /// The capture-only station's recipients, parsed (nil for an ordinary vault).
    func captureRecipients(path: String) throws -> [AgeRecipient]? {
        guard let capture else { return nil }
        guard !capture.isEmpty, let parsed = try? capture.map(AgeRecipient.init(parsing:)) else {
            throw VaultError(.vaultDamaged, "\(path) names capture recipients that are not age recipients")
        }
        return parsed
    }

    /// True when `other` is this vault under the same password and key epoch (the format and
    /// the wrap may differ: a `vault/1` file and its `vault/2` upgrade hold the same keys).
    func sameKeys(as other: VaultConfig) -> Bool {
        id == other.id && kdf == other.kdf && salt == other.salt && keyCheck == other.keyCheck
            && keyEpoch == other.keyEpoch
    }

    /// The password block's binary fields, checked for size.
    func passwordBlock(path: String) throws -> (salt: [UInt8], keyCheck: [UInt8], nonce: [UInt8], wrapped: [UInt8]) {
        guard let salt = [UInt8](base64: salt),
              salt.count == PasswordKDF.saltSize,
              let check = [UInt8](base64: keyCheck),
              check.count == PasswordKDF.keyCheckSize,
              let nonce = [UInt8](base64: wrappedKey.nonce),
              nonce.count == EnvelopeFormat.nonceSize,
              let wrapped = [UInt8](base64: wrappedKey.ciphertext) else {
            throw VaultError(.vaultDamaged, "\(path) has a malformed field")
        }
        return (salt, check, nonce, wrapped)
    }

    package static func decode(_ bytes: [UInt8], path: String) throws -> VaultConfig {
        let config: VaultConfig
        do {
            config = try JSONDecoder().decode(VaultConfig.self, from: Data(bytes))
        } catch {
            throw VaultError(.vaultDamaged, "\(path) is not a valid vault configuration", cause: error)
        }
        guard [currentFormat, previousFormat, legacyFormat].contains(config.format) else {
            throw VaultError(
                .unsupportedVersion,
                """
                    \(path) has format '\(config.format)'; this build reads '\(currentFormat)', '\(previousFormat)' \
                    and '\(legacyFormat)'
                    """,
                hint: "a later version of vault wrote it: open it with that version (nothing was changed)"
            )
        }
        guard config.isLegacy ? (config.epoch == nil && config.keyring == nil) : config.epoch != nil else {
            throw VaultError(
                .vaultDamaged, "\(path) has a key epoch field that does not fit its format '\(config.format)'")
        }
        guard config.kdf.algorithm == KDFParameters.algorithm else {
            throw VaultError(
                .vaultDamaged, "\(path) names an unknown password-hashing algorithm '\(config.kdf.algorithm)'")
        }
        try config.parameters.validate()
        guard (!config.isLegacy || config.capture == nil) && (config.capture != nil || config.captureSealsNames == nil)
        else {
            throw VaultError(.vaultDamaged, "\(path) has capture recipients in a '\(config.format)' vault")
        }
        _ = try config.captureRecipients(path: path)
        return config
    }

    package func encoded() -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return Array(try! e.encode(self)) + [0x0a]
    }
}

extension Array where Element == UInt8 {
    init?(base64 text: String) {
        guard let d = Data(base64Encoded: text) else { return nil }
        self = Array(d)
    }
    var base64: String { Data(self).base64EncodedString() }
}
