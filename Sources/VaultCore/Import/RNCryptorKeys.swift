import Crypto
import CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// What opens RNCryptor messages: a password (PBKDF2 per salt) or the two raw keys.
///
/// Derived keys are cached by salt for the life of this object: RNCryptor runs PBKDF2 once per
/// salt and file, which cannot be avoided, but a salt seen again (the same message, or an app
/// that reused salts) is not derived twice. The keys live in swift-crypto's `SymmetricKey`,
/// whose storage is zeroed when freed.
package final class RNCryptorKeys: @unchecked Sendable {
    // @unchecked: `cache` is touched only with `lock` held.
    private enum Source {
        case password(SecretBytes)
        case keys(encryption: SymmetricKey, hmac: SymmetricKey)
    }
    private let source: Source
    private var cache: [[UInt8]: SymmetricKey] = [:]
    private let lock = NIOLock()

    /// Keys derived from `password` (its UTF-8 bytes, not empty).
    package init(password: SecretBytes) throws {
        guard password.count > 0 else { throw VaultError(.usage, "the RNCryptor password is empty") }
        source = .password(password)
    }

    /// The two 32-byte keys of key-based messages: encryption first, then HMAC.
    package init(encryptionKey: SecretBytes, hmacKey: SecretBytes) throws {
        guard encryptionKey.count == RNCryptorFormat.keySize,
              hmacKey.count == RNCryptorFormat.keySize else {
            throw VaultError(.usage, "RNCryptor keys must be 32 bytes each")
        }
        source = .keys(
            encryption: encryptionKey.withUnsafeBytes { SymmetricKey(data: $0) },
            hmac: hmacKey.withUnsafeBytes { SymmetricKey(data: $0) })
    }

    /// True when these open password-based messages.
    package var isPassword: Bool {
        if case .password = source { return true }
        return false
    }

    /// The encryption and HMAC keys for a message with `header`.
    /// - Throws: ``VaultError/Code/usage`` when the message needs the other kind of credential.
    package func keys(for header: RNCryptorHeader) throws -> (encryption: SymmetricKey, hmac: SymmetricKey) {
        switch (source, header.salts) {
        case (.keys(let e, let h), nil):
            return (e, h)
        case (.password(let password), let salts?):
            return (try derive(password, salt: salts.encryption), try derive(password, salt: salts.hmac))
        case (.password, nil):
            throw VaultError(.usage, "it is key-based (RNCryptor options 0x00): it needs the two keys, not a password")
        case (.keys, _?):
            throw VaultError(.usage, "it is password-based (RNCryptor options 0x01): it needs the password, not keys")
        }
    }

    /// PBKDF2-HMAC-SHA1 with the format's fixed 10,000 rounds (below swift-crypto's
    /// recommended minimum, hence the unchecked call: the format, not vault, sets the rounds).
    private func derive(_ password: SecretBytes, salt: [UInt8]) throws -> SymmetricKey {
        lock.lock(); defer { lock.unlock() }
        if let key = cache[salt] { return key }
        let key = try password.withUnsafeBytes { p in
            try KDF.Insecure.PBKDF2.deriveKey(
                from: p, salt: salt, using: .insecureSHA1, outputByteCount: RNCryptorFormat.keySize,
                unsafeUncheckedRounds: RNCryptorFormat.pbkdf2Rounds)
        }
        cache[salt] = key
        return key
    }
}
