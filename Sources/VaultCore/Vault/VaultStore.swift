#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A vault directory on disk, before it is unlocked.
///
/// Layout: `vault.json` (public parameters, wrapped vault key), `objects/<id>.vlt` (one
/// envelope per document: the truth), `index.db` (the index: sealed rows), `lock`
/// (writers take an exclusive `flock` on it). Directories are 0700, files 0600.
public struct VaultStore: Sendable {
    /// The vault directory (for a vault read from a remote store: its local cache folder), as a
    /// path: what the store's own file operations take.
    package let root: String
    /// The vault directory (for a vault read from a remote store: its local cache folder).
    public var url: URL { URL(fileURLWithPath: root, isDirectory: true) }
    /// Where the envelopes come from when they are not in `objects/` (a remote store read
    /// directly); such a store is read-only.
    package let source: (any ObjectSource)?
    var configPath: String { path(.config) }
    var objectsPath: String { path(.objects) }
    /// The index of the version before (`index.vlt`), read once to make `index.db` and removed.
    var indexPath: String { path(.legacyIndex) }
    var lockPath: String { path(.lock) }
    /// Where new objects are written before their commit (a rename into `objects/`).
    var stagingPath: String { path(.staging) }

    /// The staging folder, made (0700) when missing: vaults made before it existed have none.
    func staging() throws -> String {
        if FileSystem.kind(of: stagingPath) == .missing {
            do { try FileSystem.makeDirectory(stagingPath) } catch {
                // Made meanwhile by another thread or writer: fine.
                guard FileSystem.kind(of: stagingPath) == .directory else { throw error }
            }
        }
        return stagingPath
    }
    func objectPath(_ id: DocumentID) -> String { "\(objectsPath)/\(id.hex).vlt" }
    /// A captured document's metadata file, beside its data (``CapturedDocument``).
    func capturedMetadataPath(_ id: DocumentID) -> String { "\(objectsPath)/\(CapturedDocument.metadataFileName(id))" }

    /// A store at `root`; nothing is read yet.
    package init(root: String, source: (any ObjectSource)? = nil) {
        var r = root
        while r.count > 1 && r.hasSuffix("/") { r.removeLast() }
        self.root = r
        self.source = source
    }

    /// Fails for a store read from a remote source: `what` needs a local vault.
    package func requireLocal(_ what: String) throws {
        guard let source else { return }
        throw VaultError(
            .usage, "\(what) needs a local vault, and \(source.name) is read directly",
            remedy: .cloneFirst(source.name))
    }

    /// True when `root` holds a `vault.json`.
    public var exists: Bool { FileSystem.kind(of: configPath) == .file }

    /// Creates a new vault: directories, a random vault key wrapped under the password, an
    /// empty index. Runs Argon2id once.
    /// - Throws: ``VaultError/Code/alreadyExists`` if `root` is a vault or a non-empty directory.
    /// - Parameters:
    ///   - capture: a capture-only station's recipients (``Vault/captureRecipients``).
    ///   - sealNames: a capture-only station keeps no names either (``Vault/captureSealsNames``).
    package func create(
        password: SecretBytes, kdf: KDFParameters, random: any RandomSource = SystemRandom(),
        now: Date = Date(), capture: [AgeRecipient]? = nil, sealNames: Bool = false
    ) throws -> Vault {
        try checkCanCreate()
        try password.withUnsafeBytes { p in
            if p.isEmpty { throw VaultError(.usage, "the password is empty") }
        }
        let keyring = try Keyring.create(password: password, kdf: kdf, random: random)
        let vaultKey = try SecretBytes.random(count: EnvelopeFormat.keySize, using: random)
        var config = VaultConfig(
            format: VaultConfig.currentFormat, id: Hex.encode(random.bytes(16)), created: UTCTime(now).iso8601,
            kdf: .init(algorithm: KDFParameters.algorithm, opsLimit: kdf.opsLimit, memLimitKiB: kdf.memLimitKiB),
            salt: keyring.salt.base64, keyCheck: keyring.keyCheck.base64, wrappedKey: .init(nonce: "", ciphertext: ""),
            epoch: 0)
        if let capture {
            precondition(!capture.isEmpty, "internal error: a capture-only station with no recipient")
            config.capture = capture.map(\.description)
            if sealNames { config.captureSealsNames = true }
        }
        let nonce = random.bytes(EnvelopeFormat.nonceSize)
        config.wrappedKey = .init(
            nonce: nonce.base64,
            ciphertext: XChaCha20Poly1305.sealKey(vaultKey, ad: config.wrapAD, nonce: nonce, key: keyring.kek).base64)
        let keys = EpochKeys(epoch: 0, current: vaultKey)
        let vault = Vault(store: self, config: config, keyring: keyring, keys: keys, random: random)
        try establish(
            vault,
            first: HistoryRecord(
                .`init`,
                detail: "argon2id ops \(kdf.opsLimit), memory \(kdf.memLimitKiB) KiB"
                    + (capture.map { "; capture-only, sealed to \($0.count) recipient" + ($0.count == 1 ? "" : "s") }
                        ?? ""),
                now: now),
            config: config.encoded(), random: random)
        return vault
    }

    /// Fails unless a vault can be made at `root`: a missing folder (missing parents are made
    /// too) under a folder this user can write in, or an empty folder. Nothing is created.
    package func checkCanCreate() throws {
        switch FileSystem.kind(of: root) {
        case .missing:
            // Missing parents are made too (0700): the nearest one that exists
            // must be a folder this user can write in.
            var ancestor = FileSystem.directory(of: root)
            while FileSystem.kind(of: ancestor) == .missing && ancestor != "/" && ancestor != "." {
                ancestor = FileSystem.directory(of: ancestor)
            }
            guard FileSystem.kind(of: ancestor) == .directory else {
                throw VaultError(.alreadyExists, "cannot create a vault in \(root): \(ancestor) is not a directory")
            }
            guard FileManager.default.isWritableFile(atPath: ancestor) else {
                throw VaultError(.io, "cannot create a vault in \(root): \(ancestor) is not writable")
            }
        case .directory:
            if exists { throw VaultError(.alreadyExists, "a vault already exists at \(root)") }
            guard try FileSystem.list(root).isEmpty else {
                throw VaultError(
                    .alreadyExists, "\(root) exists and is not empty", hint: "choose an empty or new directory")
            }
        case .file, .other:
            throw VaultError(.alreadyExists, "\(root) exists and is not a directory")
        }
    }

    /// Makes `vault` on disk, after ``checkCanCreate()`` and every check that needs no disk:
    /// the folder (0700) and `objects/`, the index, the history's first record, and `vault.json`
    /// last (its presence is what makes the folder a vault). The one way a vault comes to be,
    /// new or as a replica.
    func establish(_ vault: Vault, first record: HistoryRecord, config: [UInt8], random: any RandomSource) throws {
        if FileSystem.kind(of: root) == .missing {
            try FileSystem.makeDirectories(root)
        } else {
            try FileSystem.setPermissions(root, .ownerReadWriteExecute)
        }
        try FileSystem.makeDirectory(objectsPath)
        try withWriterLock { lock in
            try vault.createIndex(lock)
            try vault.appendToHistory(record, lock)
            try AtomicFile.write(config, to: configPath, random: random)
        }
    }

    /// Reads `vault.json` and unlocks the vault: one Argon2id run, then the key check, so a
    /// wrong password is reported before any document is touched.
    package func unlock(password: SecretBytes, random: any RandomSource = SystemRandom()) throws -> Vault {
        _ = try readConfig()  // a clear error when there is no vault here
        try recoverPasswordChange()
        let config = try readConfig()
        let block = try config.passwordBlock(path: configPath)
        try checkPasswordBlock(of: config, salt: block.salt, keyCheck: block.keyCheck)
        let keyring = try Keyring.unlock(
            password: password, kdf: config.parameters, salt: block.salt, keyCheck: block.keyCheck)
        let vault = try Self.open(self, config: config, keyring: keyring, path: configPath, random: random)
        if config.format != VaultConfig.currentFormat && source == nil { return try vault.upgradeFormat() }
        return vault
    }

    /// The vault `config` describes, its vault key unwrapped with `keyring` (the password's) and
    /// its keyring of earlier epochs opened.
    static func open(
        _ store: VaultStore, config: VaultConfig, keyring: Keyring, path: String, random: any RandomSource
    ) throws -> Vault {
        let block = try config.passwordBlock(path: path)
        guard
            let vaultKey = try XChaCha20Poly1305.openKey(
                block.wrapped, ad: config.wrapAD, nonce: block.nonce, key: keyring.kek)
        else {
            throw VaultError(.vaultDamaged, "the vault key in \(path) failed authentication")
        }
        var keys = EpochKeys(epoch: config.keyEpoch, current: vaultKey)
        var earlier: [Keyring] = []
        if let text = config.keyring {
            let retired = try EpochKeyring.open(text, keys: keys, vaultID: config.id, path: path)
            keys = EpochKeys(
                epoch: config.keyEpoch, current: vaultKey,
                earlier: Dictionary(retired.map { ($0.epoch, $0.vaultKey) }, uniquingKeysWith: { a, _ in a }),
                retiredAt: Dictionary(
                    retired.compactMap { e in e.anchor.map { (e.epoch, $0) } }, uniquingKeysWith: { a, _ in a }))
            earlier = retired.sorted { $0.epoch > $1.epoch }.map {
                Keyring(kdf: $0.kdf, salt: $0.salt, kek: $0.kek, epoch: $0.epoch)
            }
        }
        return Vault(
            store: store, config: config, keyring: keyring.with(epoch: config.keyEpoch, earlier: earlier), keys: keys,
            random: random)
    }

    /// Every envelope carries the vault's KDF parameters, salt and key check. When vault.json's
    /// differ from all of the first envelopes that parse, vault.json was edited or damaged: say
    /// so before Argon2id runs, rather than report a wrong password.
    /// Only in key epoch 0: after a password change an envelope of an earlier epoch can be in
    /// the folder (put back from a backup, or planted), and it must not make the vault unopenable.
    func checkPasswordBlock(of config: VaultConfig, salt: [UInt8], keyCheck: [UInt8]) throws {
        guard config.keyEpoch == 0 else { return }
        var compared = 0
        // The first few entries the directory yields: reading all of it cost 10–30 ms at 20,000
        // documents, on every command.
        let first =
            source == nil
            ? ((try? Platform.firstNames(objectsPath, suffix: ".vlt", limit: 8)) ?? []).compactMap {
                DocumentID(hex: String($0.dropLast(4)))
            }
            : ((try? objectIDs()) ?? []).sorted().prefix(8).map { $0 }
        for id in first {
            guard let file = try? OpenFile.openStored(objectPath(id)),
                  let header = try? EnvelopeReader.readHeader(file) else { continue }
            if header.kdf == config.parameters && header.salt == salt && header.keyCheck == keyCheck { return }
            compared += 1
        }
        if compared > 0 {
            throw VaultError(
                .vaultDamaged, "\(configPath) does not match its envelopes (KDF parameters, salt or key check differ)",
                hint: "restore vault.json from a backup; the documents themselves are unchanged")
        }
    }

    func readConfig() throws -> VaultConfig {
        switch FileSystem.kind(of: root) {
        case .missing:
            throw VaultError(.notFound, "no vault at \(root)", remedy: .createVault)
        case .directory:
            guard exists else {
                throw VaultError(.notFound, "\(root) is not a vault (it has no vault.json)", remedy: .createVault)
            }
        default:
            throw VaultError(.notFound, "\(root) is not a vault directory")
        }
        return try VaultConfig.decode(try FileSystem.readFile(configPath, limit: 1 << 20), path: configPath)
    }

    /// The ids of the objects on disk (or in the source).
    func objectIDs() throws -> Set<DocumentID> {
        if let source { return try source.objectIDs() }
        return Set(
            try FileSystem.list(objectsPath).compactMap { name -> DocumentID? in
                guard name.hasSuffix(".vlt") else { return nil }
                return DocumentID(hex: String(name.dropLast(4)))
            })
    }
}
