import Foundation

extension Vault {
    /// Rewrites a `vault/1` `vault.json` as `vault/2` (key epoch 0, the same keys), under the
    /// writer lock, and records it; a plain `remotes.json` is sealed as `remotes.vlt`. A `vault/1` vault without a history gets its `begin` record
    /// first: from `vault/2` on, a missing history is a finding, never a fresh start. A folder
    /// vault cannot write (read-only) stays `vault/1` for this command.
    func upgradeFormat() throws -> Vault {
        do {
            return try store.withWriterLock { lock in
                let onDisk = try store.readConfig()
                guard onDisk.isLegacy, onDisk.sameKeys(as: config) else {
                    return try VaultStore.open(store, config: onDisk, keyring: keyring, path: store.configPath, random: random)
                }
                // The remote list, plain JSON before sealed state, is sealed as it is (the
                // stores the user added); from vault/2 on an unsealed one is refused.
                let legacyRemotes = store.path(.legacyRemotes)
                var detail = "vault.json \(VaultConfig.legacyFormat) → \(VaultConfig.currentFormat)"
                if FileSystem.kind(of: legacyRemotes) == .file {
                    let list = try FileSystem.readFile(legacyRemotes, limit: 1 << 20)
                    try AtomicFile.write(try sealState(list, purpose: .remotes, role: VaultFile.remotes.name), to: store.path(.remotes), random: random)
                    try FileSystem.remove(legacyRemotes)
                    detail += "; remotes.json sealed as remotes.vlt"
                }
                try appendToHistory(HistoryRecord(.upgrade, detail: detail), lock)
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
