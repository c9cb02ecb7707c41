import Foundation

extension Vault {
    /// Rewrites a `vault/1` `vault.json` as `vault/2` (key epoch 0, the same keys), under the
    /// writer lock, and records it. A `vault/1` vault without a history gets its `begin` record
    /// first: from `vault/2` on, a missing history is a finding, never a fresh start. A folder
    /// vault cannot write (read-only) stays `vault/1` for this command.
    func upgradeFormat() throws -> Vault {
        do {
            return try store.withLock {
                let onDisk = try store.readConfig()
                guard onDisk.isLegacy, onDisk.sameKeys(as: config) else {
                    return try VaultStore.open(store, config: onDisk, keyring: keyring, path: store.configPath, random: random)
                }
                try recordLocked(HistoryRecord(.upgrade, detail: "vault.json \(VaultConfig.legacyFormat) → \(VaultConfig.currentFormat)"))
                var upgraded = config
                upgraded.format = VaultConfig.currentFormat
                upgraded.epoch = 0
                let nonce = random.bytes(EnvelopeFormat.nonceSize)
                upgraded.wrappedKey = .init(nonce: nonce.base64,
                                            ciphertext: XChaCha20Poly1305.sealKey(vaultKey, ad: upgraded.wrapAD, nonce: nonce, key: keyring.kek).base64)
                try AtomicFile.write(upgraded.encoded(), to: store.configPath, random: random)
                return Vault(store: store, config: upgraded, keyring: keyring, keys: keys, random: random)
            }
        } catch let e as VaultError where e.code == .io {
            return self
        }
    }
}
