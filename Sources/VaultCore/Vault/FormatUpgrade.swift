#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Vault {
    /// Rewrites `vault.json` in the current format (`vault/3`), under the writer lock, and
    /// records it; the key epoch and the keys stay. What each step from an earlier format does:
    ///
    /// - from `vault/1`: a plain `remotes.json` is sealed as `remotes.vlt`, and a vault without a
    ///   history gets its `begin` record first (from `vault/2` on, a missing history is a
    ///   finding, never a fresh start);
    /// - from `vault/2`: the destination list moves into the history: each entry of
    ///   `destinations.vlt` becomes a `destination` record, and the file goes. It is opened under
    ///   any key of the vault's keyring (versions before did not seal it again at a password
    ///   change: one sealed under an earlier epoch is taken, and the user told); one that opens
    ///   under none is not taken (nobody with the password wrote it), and the user told.
    ///
    /// A folder vault cannot write (read-only) stays as it is for this command.
    func upgradeFormat() throws -> Vault {
        do {
            return try store.withWriterLock { lock in
                let onDisk = try store.readConfig()
                guard onDisk.format != VaultConfig.currentFormat,
                      onDisk.sameKeys(as: config) else {
                    return try VaultStore.open(
                        store, config: onDisk, keyring: keyring, path: store.configPath, random: random)
                }
                var detail = "vault.json \(onDisk.format) → \(VaultConfig.currentFormat)"
                // The remote list, plain JSON before sealed state, is sealed as it is (the
                // stores the user added); from vault/2 on an unsealed one is refused.
                let legacyRemotes = store.path(.legacyRemotes)
                if onDisk.isLegacy && FileSystem.kind(of: legacyRemotes) == .file {
                    let list = try FileSystem.readFile(legacyRemotes, limit: 1 << 20)
                    try AtomicFile.write(
                        try sealState(list, purpose: .remotes, role: VaultFile.remotes.name), to: store.path(.remotes),
                        random: random)
                    try FileSystem.remove(legacyRemotes)
                    detail += "; remotes.json sealed as remotes.vlt"
                }
                let destinationsFile = store.path(.destinations)
                var moved: [DestinationEntry] = []
                if FileSystem.kind(of: destinationsFile, following: false) != .missing {
                    do {
                        moved = try DestinationList.loadFile(self, anyEpoch: true).destinations
                        if let bytes = try? FileSystem.readFile(destinationsFile, limit: 1 << 20),
                            let sealed = SealedState.prefix(of: bytes),
                            sealed.epoch < keys.epoch
                        {
                            VaultNotices.post(
                                """
                                    destinations.vlt was sealed under the key of epoch \(sealed.epoch), before a \
                                    password change; 
                                    """
                                    + """
                                        its \(moved.count) destinations were moved into the history as they were: \
                                        check them
                                        """
                            )
                        }
                    } catch let e as VaultError where e.code.isDamage {
                        VaultNotices.post("\(e.message): its destinations were not taken; add them again")
                        detail += "; destinations.vlt did not open and was not taken"
                    }
                }
                for entry in moved {
                    try appendToHistory(HistoryRecord(.destination, detail: DestinationChange(set: entry).detail), lock)
                }
                if !moved.isEmpty {
                    detail +=
                        """
                            ; \(moved.count) destination\(moved.count == 1 ? "" : "s") moved from destinations.vlt \
                            into the history
                            """
                }
                try appendToHistory(HistoryRecord(.upgrade, detail: detail), lock)
                var upgraded = config
                upgraded.format = VaultConfig.currentFormat
                upgraded.epoch = config.keyEpoch
                let nonce = random.bytes(EnvelopeFormat.nonceSize)
                upgraded.wrappedKey = .init(
                    nonce: nonce.base64,
                    ciphertext: XChaCha20Poly1305.sealKey(vaultKey, ad: upgraded.wrapAD, nonce: nonce, key: keyring.kek)
                        .base64)
                try AtomicFile.write(upgraded.encoded(), to: store.configPath, random: random)
                // The commit is vault.json; the list goes after it (a crash between leaves a file
                // vault/3 never reads).
                if FileSystem.kind(of: destinationsFile, following: false) != .missing {
                    try FileSystem.remove(destinationsFile)
                }
                // The index took the records as they were appended: it keeps the list from now on.
                return Vault(store: store, config: upgraded, keyring: keyring, keys: keys, random: random)
            }
        } catch let e as VaultError where e.code == .io {
            return self
        }
    }
}
