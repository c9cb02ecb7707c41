import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a password change did.
package struct PasswordChangeSummary: Sendable {
    /// Envelopes whose header was rewritten.
    package var documents: Int
    /// Bytes written: the journal, the headers and `vault.json` (payloads are never touched).
    package var bytesWritten: UInt64
    /// The new Argon2id parameters.
    package var kdf: KDFParameters
}

/// `passwd.journal`: everything needed to finish or undo a password change without either
/// password — the old and new `vault.json`, and each envelope's old and new header (public
/// bytes: they are on disk anyway). Written whole (an ``AtomicFile``) before any header changes.
///
/// Layout: `VAULTPJ2` ‖ u32 n ‖ old vault.json ‖ u32 n ‖ new vault.json ‖ u32 count ‖ count ×
/// (16-byte id ‖ u32 header length h ‖ old header (h) ‖ new header (h)) ‖ u32 count ‖ count ×
/// (u32 n ‖ a state file's name in the folder (n) ‖ u32 m ‖ its bytes sealed under the new key
/// (m)) ‖ SHA-256 of all before. Journals of earlier versions (`VAULTPWJ`) end after the entries
/// with, optionally, `u32 n ‖ remotes.vlt sealed under the new key`; they are still read.
package struct PasswordJournal {
    struct Entry { var id: DocumentID; var old: [UInt8]; var new: [UInt8] }
    /// A sealed state file (by its name in the vault folder) as it is under the new key.
    struct Resealed: Equatable { var name: String; var bytes: [UInt8] }
    var oldConfig: [UInt8]
    var newConfig: [UInt8]
    var entries: [Entry]
    /// The state files sealed under the new key epoch (sealed bytes: nothing secret), written
    /// in place when the change commits.
    var resealed: [Resealed] = []
    /// Read from a journal of the first layout (`VAULTPWJ`): encoded in it again.
    var firstLayout = false

    static let magic = Array("VAULTPJ2".utf8)
    /// The journal of versions that re-sealed the remote list only.
    static let firstMagic = Array("VAULTPWJ".utf8)

    package func encoded() -> [UInt8] {
        var out = firstLayout ? Self.firstMagic : Self.magic
        out.appendBigEndian(UInt32(oldConfig.count)); out += oldConfig
        out.appendBigEndian(UInt32(newConfig.count)); out += newConfig
        out.appendBigEndian(UInt32(entries.count))
        for e in entries {
            out += e.id.bytes
            out.appendBigEndian(UInt32(e.old.count))
            out += e.old + e.new
        }
        if firstLayout {
            if let r = resealed.first { out.appendBigEndian(UInt32(r.bytes.count)); out += r.bytes }
        } else {
            out.appendBigEndian(UInt32(resealed.count))
            for r in resealed {
                out.appendBigEndian(UInt32(r.name.utf8.count)); out += Array(r.name.utf8)
                out.appendBigEndian(UInt32(r.bytes.count)); out += r.bytes
            }
        }
        return out + Array(SHA256.hash(data: out))
    }

    package static func decode(_ bytes: [UInt8]) throws -> PasswordJournal {
        let damaged = VaultError(
            .vaultDamaged, "passwd.journal (an interrupted password change) is damaged",
            hint: "restore the vault folder from a backup")
        let first = bytes.starts(with: firstMagic)
        guard bytes.count > magic.count + 32,
              first || bytes.starts(with: magic),
              Array(SHA256.hash(data: bytes.dropLast(32))) == Array(bytes.suffix(32)) else { throw damaged }
        var reader = ByteReader(
            bytes, what: "passwd.journal", offset: magic.count, end: bytes.count - 32, damaged: damaged)
        func field() throws -> [UInt8] { try reader.raw(Int(try reader.u32())) }
        var journal = PasswordJournal(oldConfig: try field(), newConfig: try field(), entries: [])
        journal.firstLayout = first
        for _ in 0..<(try reader.u32()) {
            let id = DocumentID(bytes: try reader.raw(EnvelopeFormat.documentIDSize))
            let h = Int(try reader.u32())
            journal.entries.append(Entry(id: id, old: try reader.raw(h), new: try reader.raw(h)))
        }
        if first {
            if reader.remaining > 0 { journal.resealed = [Resealed(name: VaultFile.remotes.name, bytes: try field())] }
        } else {
            for _ in 0..<(try reader.u32()) {
                guard let name = String(validating: try field(), as: UTF8.self),
                      ResealedFiles.isResealable(name) else {
                    throw damaged
                }
                journal.resealed.append(Resealed(name: name, bytes: try field()))
            }
        }
        guard reader.remaining == 0 else { throw damaged }
        return journal
    }
}

extension Vault {
    /// Changes the password (and optionally the Argon2id parameters): a new salt and key-
    /// encryption key, every document key and the vault key re-wrapped, every envelope's
    /// metadata re-sealed (its header's associated data changed); payloads are not touched.
    ///
    /// Crash-safe: the journal (both versions of every header and of `vault.json`) is written
    /// first; then the headers are overwritten in place and synced; replacing `vault.json` is the
    /// commit; then the journal goes. A crash at any moment is finished or undone by the next
    /// command (``VaultStore/recoverPasswordChange()``), so the vault opens with exactly one of
    /// the two passwords. Holds the writer lock throughout. Recorded in the history.
    /// - Throws: before changing anything, when an envelope does not open (a damaged vault is
    ///   not re-keyed: that document would be lost).
    package func changePassword(
        to newPassword: SecretBytes, kdf newKDF: KDFParameters? = nil,
        progress: ((Int, Int) -> Void)? = nil
    ) throws -> PasswordChangeSummary {
        try newPassword.withUnsafeBytes { p in
            if p.isEmpty { throw VaultError(.usage, "the new password is empty") }
        }
        let parameters = newKDF ?? kdf
        try parameters.validate()
        let keyring2 = try Keyring.create(password: newPassword, kdf: parameters, random: random)
        return try rotate(keyring: keyring2, parameters: parameters, progress: progress) { anchor in
            let (newConfig, newKeys) = try rotatedConfig(keyring: keyring2, parameters: parameters, anchor: anchor)
            let level = KDFLevel.allCases.first { $0.parameters == parameters }?.rawValue
            let from = keys.epoch
            return (
                newConfig, newKeys,
                { headers in
                    HistoryRecord(
                        .passwd,
                        detail: """
                        argon2id \(level ?? "custom"): ops \(parameters.opsLimit), memory \
                        \(parameters.memLimitKiB) KiB; \(headers) headers re-sealed; key epoch \
                        \(from) → \(newKeys.epoch) (a new vault key)
                        """)
                }
            )
        }
    }

    /// Takes on a password change made at another station of this vault: `storeConfig` (the
    /// `vault.json` a store holds, of a later key epoch) opened with `password` (the new one)
    /// must hold this vault's current key in its keyring; this vault then moves to that epoch
    /// as ``changePassword(to:kdf:progress:)`` would (the same journal, headers re-sealed, state
    /// sealed again, a `passwd` record), and its keyring anchors the retired epochs at where its
    /// own history stands, not where the other station's stood.
    /// - Throws: `wrong-password` when `password` does not open `storeConfig`; `already-exists`
    ///   when it is not a later epoch of this vault's keys.
    package func adoptPasswordChange(
        storeConfig bytes: [UInt8], password: SecretBytes, source: String, progress: ((Int, Int) -> Void)? = nil
    ) throws -> PasswordChangeSummary {
        let path = "\(source)/vault.json"
        let later = try VaultConfig.decode(bytes, path: path)
        let notLater = VaultError(
            .alreadyExists, "\(source) holds this vault under keys that are not a later epoch of this vault's")
        guard later.id == config.id, later.keyEpoch > keys.epoch else { throw notLater }
        let block = try later.passwordBlock(path: path)
        let keyring2 = try Keyring.unlock(
            password: password, kdf: later.parameters, salt: block.salt, keyCheck: block.keyCheck)
        let opened = try VaultStore.open(store, config: later, keyring: keyring2, path: path, random: random)
        guard let mine = opened.keys.earlier[keys.epoch],
            mine.withUnsafeBytes({ a in keys.current.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } })
        else { throw notLater }
        let retired = try later.keyring.map {
            try EpochKeyring.open($0, keys: opened.keys, vaultID: config.id, path: path)
        }
        return try rotate(keyring: keyring2, parameters: later.parameters, progress: progress) { anchor in
            // Epochs this vault retired itself keep its own anchors; the others end where its
            // history stands now (no record of theirs is in it, or comes after).
            var own = retired ?? []
            for i in own.indices {
                own[i].anchor = own[i].epoch < keys.epoch ? keys.retiredAt[own[i].epoch] : anchor
            }
            let newKeys = EpochKeys(
                epoch: later.keyEpoch, current: opened.keys.current, earlier: opened.keys.earlier,
                retiredAt: Dictionary(
                    own.compactMap { e in e.anchor.map { (e.epoch, $0) } }, uniquingKeysWith: { a, _ in a }))
            var newConfig = later
            newConfig.keyring = try EpochKeyring.seal(own, keys: newKeys, vaultID: config.id, random: random)
            let from = keys.epoch
            return (
                newConfig, newKeys,
                { headers in
                    HistoryRecord(
                        .passwd, destinations: [source],
                        detail: """
                        the password changed at another station, taken from \(source): \(headers) headers \
                        re-sealed; key epoch \(from) → \(later.keyEpoch)
                        """)
                }
            )
        }
    }

    /// Moves the vault to the next key epoch: `next` is given where the history stands as this
    /// epoch ends and returns the new `vault.json`, its keys and the `passwd` record (given how
    /// many headers were re-sealed). Journaled and crash-safe; see
    /// ``changePassword(to:kdf:progress:)``.
    private func rotate(
        keyring keyring2: Keyring, parameters: KDFParameters, progress: ((Int, Int) -> Void)?,
        next: (LogAnchor) throws -> (VaultConfig, EpochKeys, (Int) -> HistoryRecord)
    ) throws -> PasswordChangeSummary {
        try SessionLock.alone(store) {
            try store.withWriterLock { lock in
                // A removal a crash interrupted is finished under the key it was sealed with.
                try withIndex(lock) { index in
                    var writer = try historyWriter(index: index, lock)
                    if let interrupted = writer.log.pendingRemoval() {
                        try finishRemoval(interrupted, writer: &writer, interrupted: true)
                    }
                }
                let known = Dictionary(try records().records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
                // Where the history stands as this epoch ends: sealed into the keyring, so no record
                // of this epoch's key can follow it (nobody writes between here and the change: the
                // writer lock is held throughout).
                let log = try HistoryLog(vault: self)
                let tail = try log.verifiedTail() ?? LogTail(try log.scan(keepRecords: false))
                let (newConfig, newKeys, detail) = try next(LogAnchor(count: tail.count, tag: tail.tag))
                // Every header, re-sealed in memory first: nothing changes unless all of them open.
                let ids = try store.objectIDs().sorted()
                var entries: [PasswordJournal.Entry] = []
                for (n, id) in ids.enumerated() {
                    progress?(n, ids.count * 2)
                    // A captured pair's record (a capture-only station's, or one an office received).
                    entries.append(
                        holdsCaptured(id)
                            ? try resealedCapturedRecord(id, to: newKeys) : try resealedHeader(id, keyring: keyring2))
                }
                let resealed = try ResealedFiles(vault: self).resealed(to: newKeys)
                PausePoint.reached("passwd.resealed")
                let journal = PasswordJournal(
                    oldConfig: try FileSystem.readFile(store.configPath, limit: 1 << 20),
                    newConfig: newConfig.encoded(), entries: entries, resealed: resealed
                ).encoded()
                try AtomicFile.write(journal, to: store.passwordJournalPath, random: random)
                var written = UInt64(journal.count)
                PausePoint.reached("passwd.journal-written")
                for (n, e) in entries.enumerated() {
                    progress?(ids.count + n, ids.count * 2)
                    let file = try OpenFile.openExisting(store.resealedPath(e.id))
                    defer { file.close() }
                    try file.write(e.new, at: 0)
                    try file.sync()
                    written += UInt64(e.new.count)
                    PausePoint.reached("passwd.header")
                }
                // The commit point.
                try AtomicFile.write(newConfig.encoded(), to: store.configPath, random: random)
                written += UInt64(newConfig.encoded().count)
                PausePoint.reached("passwd.committed")
                for file in resealed {
                    try AtomicFile.write(file.bytes, to: store.root + "/" + file.name, random: random)
                }
                try FileSystem.remove(store.passwordJournalPath)
                try FileSystem.syncDirectory(store.root)
                PausePoint.reached("passwd.journal-removed")
                progress?(ids.count * 2, ids.count * 2)
                // The state sealed under the retired key, sealed again under the new one; the record
                // of the change is the first of the new epoch (a crash before it leaves a log whose
                // head is of the old epoch, as its last record: consistent, and the next record is
                // sealed under the new key).
                let rotated = Vault(
                    store: store, config: newConfig, keyring: keyring2.with(epoch: newKeys.epoch, earlier: []),
                    keys: newKeys, random: random)
                try rotated.withIndex(lock, known: known) { _ in }  // sealed again under the new key
                try rotated.appendToHistory(detail(entries.count), lock)
                return PasswordChangeSummary(documents: entries.count, bytesWritten: written, kdf: parameters)
            }
        }
    }

    /// This vault's `vault.json` with no anchors in its keyring (the same keys, the keyring sealed
    /// again), or nil when it has none: for a new replica, whose history is not the one the
    /// anchors name.
    func configWithoutAnchors() throws -> VaultConfig? {
        guard let text = config.keyring else { return nil }
        var retired = try EpochKeyring.open(text, keys: keys, vaultID: config.id, path: store.configPath)
        guard retired.contains(where: { $0.anchor != nil }) else { return nil }
        for i in retired.indices { retired[i].anchor = nil }
        var own = config
        own.keyring = try EpochKeyring.seal(retired, keys: keys, vaultID: config.id, random: random)
        return own
    }

    /// The `vault.json` of the next key epoch: the new password block, a new random vault key
    /// wrapped under the new KEK, and the keyring of every earlier epoch (this one included)
    /// sealed under the new vault key.
    private func rotatedConfig(
        keyring keyring2: Keyring, parameters: KDFParameters, anchor: LogAnchor
    ) throws -> (VaultConfig, EpochKeys) {
        var retired =
            try config.keyring.map { try EpochKeyring.open($0, keys: keys, vaultID: config.id, path: store.configPath) }
            ?? []
        retired.append(
            RetiredEpoch(
                epoch: keys.epoch, vaultKey: vaultKey, kek: keyring.kek, kdf: keyring.kdf, salt: keyring.salt,
                keyCheck: keyring.keyCheck, retired: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)),
                anchor: anchor))
        let newKey = try SecretBytes.random(count: EnvelopeFormat.keySize, using: random)
        let newKeys = EpochKeys(
            epoch: keys.epoch + 1, current: newKey,
            earlier: Dictionary(retired.map { ($0.epoch, $0.vaultKey) }, uniquingKeysWith: { a, _ in a }),
            retiredAt: Dictionary(
                retired.compactMap { e in e.anchor.map { (e.epoch, $0) } }, uniquingKeysWith: { a, _ in a }))
        var newConfig = config
        newConfig.format = VaultConfig.currentFormat
        newConfig.epoch = newKeys.epoch
        newConfig.kdf = .init(
            algorithm: KDFParameters.algorithm, opsLimit: parameters.opsLimit, memLimitKiB: parameters.memLimitKiB)
        newConfig.salt = keyring2.salt.base64
        newConfig.keyCheck = keyring2.keyCheck.base64
        let nonce = random.bytes(EnvelopeFormat.nonceSize)
        newConfig.wrappedKey = .init(
            nonce: nonce.base64,
            ciphertext: XChaCha20Poly1305.sealKey(newKey, ad: newConfig.wrapAD, nonce: nonce, key: keyring2.kek).base64)
        newConfig.keyring = try EpochKeyring.seal(retired, keys: newKeys, vaultID: config.id, random: random)
        return (newConfig, newKeys)
    }

    /// Document `id`'s header re-sealed under `keyring2` (its document key re-wrapped, its
    /// metadata sealed again): the journal entry, or an error naming the document.
    private func resealedHeader(_ id: DocumentID, keyring keyring2: Keyring) throws -> PasswordJournal.Entry {
        do {
            let file = try OpenFile.openStored(store.objectPath(id))
            defer { file.close() }
            let reader = try EnvelopeReader(input: file, keyring: keyring, expectedID: id)
            let kek = try keyring.kek(for: reader.header)
            guard
                let documentKey = try XChaCha20Poly1305.openKey(
                    reader.header.wrappedKey, ad: reader.header.keyWrapAD,
                    nonce: reader.header.wrapNonce, key: kek)
            else {
                throw VaultError(.headerAuthenticationFailed, "the wrapped document key failed authentication")
            }
            let header = try EnvelopeWriter.sealHeader(
                documentKey: documentKey, keyring: keyring2, documentID: id,
                metadata: reader.metadata, random: random)
            let old = reader.header.serialized(), new = header.serialized()
            precondition(old.count == new.count, "internal error: a re-sealed header changed size")
            return .init(id: id, old: old, new: new)
        } catch {
            throw Self.resealFailure(error, id)
        }
    }

    /// Why document `id`'s header or record could not be sealed again: nothing was changed.
    static func resealFailure(_ error: any Error, _ id: DocumentID) -> VaultError {
        var e = VaultError.from(error).context("document \(id)")
        e.nothingChanged = true
        e.remedy = .verifyThenRemoveOrRestore
        return e
    }
}

extension Vault {
    /// Captured document `id`'s record sealed again under `keys` (a capture-only station's
    /// password change): the metadata file's first bytes before and after, of the same length.
    private func resealedCapturedRecord(_ id: DocumentID, to keys: EpochKeys) throws -> PasswordJournal.Entry {
        do {
            let (record, _, old) = try capturedMetadata(id)
            let new = CapturedDocument.metadataFile(
                sealedRecord: try sealCapturedRecord(record, keys: keys), metadata: [])
            precondition(old.count == new.count, "internal error: a re-sealed captured record changed size")
            return .init(id: id, old: old, new: new)
        } catch {
            throw Self.resealFailure(error, id)
        }
    }
}

extension VaultStore {
    var passwordJournalPath: String { path(.passwordJournal) }

    /// The file whose first bytes a password change re-seals for document `id`: its envelope,
    /// or for a captured pair (``CapturedDocument``: on a capture-only station, or received by an
    /// office) the metadata file that holds its record.
    func resealedPath(_ id: DocumentID) -> String {
        FileSystem.kind(of: capturedMetadataPath(id), following: false) != .missing
            ? capturedMetadataPath(id) : objectPath(id)
    }

    /// Finishes or undoes a password change that a crash interrupted (nothing when there is
    /// none). Needs no password: if `vault.json` is already the new one, the change committed and
    /// every header is brought forward; if it is still the old one, every header goes back. A
    /// journal that names neither is refused. Waits
    /// for a password change still running (the writer lock).
    package func recoverPasswordChange() throws {
        guard FileSystem.kind(of: passwordJournalPath) != .missing else { return }
        try withWriterLock { _ in
            guard FileSystem.kind(of: passwordJournalPath) != .missing else { return }  // it finished meanwhile
            let journal = try PasswordJournal.decode(try FileSystem.readFile(passwordJournalPath, limit: 1 << 30))
            // The journal needs no password, so it is held to what a real one can be: vault.json
            // is never written from it (replacing vault.json is the change's atomic commit, so it
            // is either the journal's new one or still its old one), and a header is rewritten
            // only where the object still has one of the journal's two versions. A planted
            // journal cannot put an older vault.json back (undoing a key rotation).
            let current = try? FileSystem.readFile(configPath, limit: 1 << 20)
            let forward = current == journal.newConfig
            guard forward || current == journal.oldConfig else {
                throw VaultError(
                    .vaultDamaged,
                    """
                        \(passwordJournalPath) (an interrupted password change) names neither the vault.json there \
                        nor the one it would write: it was not written for this vault as it is, and is not acted on
                        """,
                    hint: "if no password change was interrupted here, delete passwd.journal")
            }
            // A captured pair's entry is its record, in its metadata file.
            for e in journal.entries where FileSystem.kind(of: resealedPath(e.id)) == .file {
                let file = try OpenFile.openExisting(resealedPath(e.id))
                defer { file.close() }
                let header = try file.read(upTo: e.old.count)
                guard header == e.old || header == e.new else { continue }
                try file.write(forward ? e.new : e.old, at: 0)
                try file.sync()
            }
            // Sealed bytes: a planted journal could only put a list there that the new key
            // does not open (refused when read), never one the vault would follow.
            // Each name is one ResealedFiles allows (a state file or an upload journal), never a
            // path elsewhere.
            if forward { for file in journal.resealed { try AtomicFile.write(file.bytes, to: root + "/" + file.name) } }
            try FileSystem.remove(passwordJournalPath)
            try FileSystem.syncDirectory(root)
        }
    }
}
