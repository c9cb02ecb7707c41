import Foundation

/// The contents of `vault.json`: public parameters and the wrapped vault key. No secret is
/// stored in clear: the vault key is sealed under the password-derived key-encryption key.
struct VaultConfig: Codable, Equatable {
    static let currentFormat = "vault/1"

    /// Format identifier, `vault/1`.
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

    struct KDF: Codable, Equatable {
        var algorithm: String
        var opsLimit: UInt32
        var memLimitKiB: UInt32
    }

    struct WrappedKey: Codable, Equatable {
        var nonce: String
        var ciphertext: String
    }

    var parameters: KDFParameters { KDFParameters(opsLimit: kdf.opsLimit, memLimitKiB: kdf.memLimitKiB) }

    /// The bytes the vault key wrap authenticates.
    var wrapAD: [UInt8] { Array("vault.json|\(format)|\(id)|\(kdf.opsLimit)|\(kdf.memLimitKiB)|\(salt)".utf8) }

    static func decode(_ bytes: [UInt8], path: String) throws -> VaultConfig {
        let config: VaultConfig
        do {
            config = try JSONDecoder().decode(VaultConfig.self, from: Data(bytes))
        } catch {
            throw VaultError(.vaultDamaged, "\(path) is not a valid vault configuration", cause: error)
        }
        guard config.format == currentFormat else {
            throw VaultError(.unsupportedVersion, "\(path) has format '\(config.format)'; this build reads '\(currentFormat)'")
        }
        guard config.kdf.algorithm == "argon2id13" else {
            throw VaultError(.vaultDamaged, "\(path) names an unknown password-hashing algorithm '\(config.kdf.algorithm)'")
        }
        try config.parameters.validate()
        return config
    }

    func encoded() -> [UInt8] {
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
