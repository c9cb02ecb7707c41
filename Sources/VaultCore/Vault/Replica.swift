#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A sealed tombstone: the record that a document was removed, for other replicas of the vault
/// (`PREFIX/removed/<id>` on a remote store, docs/FORMAT.md "Remote layout").
///
/// Sealed under a subkey of the vault key with the vault id and the document id as associated
/// data: nobody without the password can forge one (so nobody can make replicas delete a
/// document), and one cannot be moved to another id or vault.
package struct Tombstone: Codable, Sendable, Equatable {
    /// The removed document (32 hex digits in the file).
    package var id: DocumentID
    /// Its name, SHA-256 (hex) and size, as the removing replica knew them ("" and 0 if not).
    package var name: String
    package var sha256: String
    package var size: UInt64
    /// When the removing replica wrote the tombstone, in milliseconds since 1970.
    package var time: Int64
    /// The host that wrote it.
    package var host: String

    static let magic = Array("VTMB1".utf8)
    static let subkeyID: UInt64 = 3
    static let context = "vaultrmv"
    static func ad(vaultID: String, id: String) -> [UInt8] { Array("vault tombstone v1 \(vaultID) \(id)".utf8) }
    /// Its role in the sealed state format: its key under the store's prefix.
    static func role(_ id: DocumentID) -> String { "removed/\(id.hex)" }
    /// A tombstone is small: a larger object under `removed/` is not one (read no more).
    package static let maxSize = 64 << 10

    /// The document as a history record names it.
    var document: HistoryRecord.Document { HistoryRecord.Document(id: id, name: name, sha256: sha256, size: size) }
}

extension Vault {
    // MARK: Replication (remote vaults; the network side is VaultRemote's)

    /// `vault.json`'s bytes as they are on disk: what a remote store holds beside the objects.
    package func configBytes() throws -> [UInt8] { try FileSystem.readFile(store.configPath, limit: 1 << 20) }

    /// The same vault (same keys and cache folder) reading its envelopes from `source`.
    package func reading(from source: any ObjectSource) -> Vault {
        Vault(
            store: VaultStore(root: store.root, source: source), config: config, keyring: keyring, keys: keys,
            random: random)
    }

    /// True when `bytes` is a `vault.json` of this vault under the same password and key epoch
    /// (a `vault/1` file and its `vault/2` upgrade hold the same keys).
    package func holdsSameKeys(asConfig bytes: [UInt8]) -> Bool {
        guard let other = try? VaultConfig.decode(bytes, path: "vault.json") else { return false }
        return config.sameKeys(as: other)
    }

    /// How a store's `vault.json` stands to this vault's keys.
    package enum ConfigRelation: Sendable, Equatable {
        /// This vault's keys (the same epoch and password).
        case same
        /// An epoch this vault retired: the password was changed here since.
        case earlier(epoch: UInt32)
        /// A later epoch of this vault: the password was changed at another station.
        case later
        /// Not this vault, or keys this vault never had.
        case other
    }

    /// How `bytes` (a store's `vault.json`) stands to this vault's keys: nothing here is
    /// trusted but what this vault's own keyring says of its earlier epochs.
    package func relation(ofConfig bytes: [UInt8]) -> ConfigRelation {
        guard let other = try? VaultConfig.decode(bytes, path: "vault.json"), other.id == config.id else {
            return .other
        }
        if config.sameKeys(as: other) { return .same }
        if other.keyEpoch > keys.epoch { return .later }
        let retired = keyring.earlier.contains {
            $0.epoch == other.keyEpoch && $0.salt.base64 == other.salt && $0.kdf == other.parameters
        }
        return retired ? .earlier(epoch: other.keyEpoch) : .other
    }

    /// The ids of the objects on disk.
    package func objectIDs() throws -> Set<DocumentID> { try store.objectIDs() }

    /// The objects the sealed index does not name yet (all of them when it is missing or does
    /// not open): what a rebuild of the index will have to read the headers of.
    package func unindexedObjects() throws -> [DocumentID] {
        let ids = try store.objectIDs()
        return ids.subtracting(indexedIDs()).sorted()
    }

    /// The path of a document's envelope (to send it as it is).
    package func objectPath(_ id: DocumentID) -> String { store.objectPath(id) }

    /// The documents this vault's history says were removed (and not added again).
    package func removedDocuments() throws -> [DocumentID: HistoryRecord.Document] {
        try withIndex { index in try index.removedDocuments() }
    }

    /// Seals a tombstone for `document`: a sealed state file (purpose tombstone, role
    /// `removed/<id>`) under the current key epoch.
    package func sealTombstone(_ document: HistoryRecord.Document, now: Date = Date()) throws -> [UInt8] {
        let stone = Tombstone(
            id: document.id, name: document.name, sha256: document.sha256, size: document.size,
            time: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), host: Platform.hostName)
        return try SealedState.seal(
            Array(try JSONEncoder().encode(stone)), purpose: .tombstone, role: Tombstone.role(document.id),
            keys: keys, vaultID: config.id, random: random)
    }

    /// Opens a tombstone said to be for `id`.
    /// - Throws: ``VaultError/Code/vaultDamaged`` when it does not authenticate under this
    ///   vault's current key for that id (forged, damaged, moved, from another vault, or sealed
    ///   under a key a password change retired). The format before sealed state (`VTMB1`) is
    ///   read in key epoch 0.
    package func openTombstone(_ bytes: [UInt8], id: DocumentID) throws -> Tombstone {
        let json: [UInt8]
        let head = Tombstone.magic.count + EnvelopeFormat.nonceSize
        if bytes.starts(with: Tombstone.magic) {
            let key = try SubkeyDerivation.derive(from: vaultKey, id: Tombstone.subkeyID, context: Tombstone.context)
            guard keys.epoch == 0,
                bytes.count >= head + EnvelopeFormat.tagSize,
                let plain = XChaCha20Poly1305.open(
                    Array(bytes[head...]), ad: Tombstone.ad(vaultID: config.id, id: id.hex),
                    nonce: Array(bytes[Tombstone.magic.count..<head]), key: key)
            else {
                throw VaultError(
                    .vaultDamaged,
                    """
                        the tombstone of document \(id) fails authentication (forged, damaged, from another vault, or \
                        sealed under a retired key)
                        """
                )
            }
            json = plain
        } else {
            json = try SealedState.open(
                bytes, purpose: .tombstone, role: Tombstone.role(id), keys: keys, vaultID: config.id,
                what: "the tombstone of document \(id)")
        }
        guard let stone = try? JSONDecoder().decode(Tombstone.self, from: Data(json)),
              stone.id == id else {
            throw VaultError(.vaultDamaged, "the tombstone of document \(id) is malformed")
        }
        return stone
    }

    /// Where a document fetched from a remote store is written before it is checked: a
    /// temporary file in `objects/`, which ``acceptFetched(_:from:)`` moves into place and which
    /// the next writer sweeps away if the fetching process dies.
    package func stagingFile(for id: DocumentID) throws -> AtomicFile {
        try AtomicFile(destination: store.objectPath(id), staging: try store.staging(), random: random)
    }

    /// Takes a fetched envelope into `objects/` after authenticating every chunk and the digest
    /// and checking that it holds document `id` under this vault's key: it is synced and linked
    /// into place (never over an existing object). A damaged or foreign envelope is discarded
    /// and the error thrown. ``recordFetched(_:from:)`` then names the documents in the index
    /// and the history; if the process dies before that, the next command does both (the index
    /// is rebuilt from the objects, and the history adopts what authenticates).
    package func acceptFetched(_ staged: AtomicFile, id: DocumentID) throws -> DocumentRecord {
        let metadata: DocumentMetadata
        do {
            let input = try OpenFile.openForReading(staged.temporaryPath)
            let reader = try EnvelopeReader(input: input, keyring: keyring, expectedID: id, verifyDigest: true)
            while try reader.next() != nil {}
            metadata = reader.metadata
        } catch {
            throw Self.notTaken(staged, id: id, error)
        }
        try staged.commit(replace: false)
        return DocumentRecord(id: id, metadata: metadata)
    }

    /// Whether a store at `location` holding this vault under an epoch it retired may be brought
    /// to the current one (a push carrying the password change): only when, by this vault's
    /// history, the store has not seen the current epoch — the last password change was made
    /// here, not taken from that store, and no push to it came after (a push after a change
    /// carries it). A pull from a store still behind does not count: it saw the old epoch.
    /// Otherwise its `vault.json` was put back (by someone who knew the old password), and what
    /// it holds under that epoch is not taken in.
    package func mayCarryPasswordChange(to location: String) throws -> Bool {
        let records = try history().records.map(\.record)
        guard let last = records.lastIndex(where: { $0.operation == .passwd }) else { return false }
        if records[last].destinations.contains(location) { return false }
        return !records[(last + 1)...].contains {
            $0.operation == .push && $0.outcome == .ok && $0.destinations.contains(location)
        }
    }

    /// Takes in an envelope fetched from a store that still holds this vault under `epoch`, an
    /// epoch this vault retired (its password was changed here, and a push is carrying the change
    /// there): an envelope of that epoch, and of no other earlier one, is authenticated under it
    /// (as a pull made before the change would have taken it), its header sealed again under the
    /// current key, and then taken in as ``acceptFetched(_:id:)`` takes one.
    package func acceptFetched(
        _ staged: AtomicFile, id: DocumentID, retiredEpoch epoch: UInt32
    ) throws -> DocumentRecord {
        do {
            let input = try OpenFile.openForReading(staged.temporaryPath)
            defer { input.close() }
            let accepting = keyring.accepting(epoch: epoch)
            let reader = try EnvelopeReader(input: input, keyring: accepting, expectedID: id, verifyDigest: true)
            while try reader.next() != nil {}
            let kek = try accepting.kek(for: reader.header)
            guard
                let documentKey = try XChaCha20Poly1305.openKey(
                    reader.header.wrappedKey, ad: reader.header.keyWrapAD, nonce: reader.header.wrapNonce, key: kek)
            else {
                throw VaultError(.headerAuthenticationFailed, "the wrapped document key failed authentication")
            }
            let header = try EnvelopeWriter.sealHeader(
                documentKey: documentKey, keyring: keyring, documentID: id, metadata: reader.metadata, random: random)
            let old = reader.header.serialized(), new = header.serialized()
            guard old.count == new.count else { throw VaultError(.internal, "a re-sealed header changed size") }
            let out = try OpenFile.openExisting(staged.temporaryPath)
            defer { out.close() }
            try out.write(new, at: 0)
            try out.sync()
        } catch {
            throw Self.notTaken(staged, id: id, error)
        }
        return try acceptFetched(staged, id: id)
    }

    /// A fetched envelope that is not taken: discarded, and why, naming the document.
    private static func notTaken(_ staged: AtomicFile, id: DocumentID, _ error: any Error) -> VaultError {
        staged.discard()
        var e = VaultError.from(error)
        if e.code == .wrongPassword {
            // The vault is unlocked: an envelope this key does not open belongs to another vault.
            e = VaultError(
                .headerAuthenticationFailed, "it is not sealed under this vault's key (another vault's envelope?)")
        }
        return e.context("document \(id)")
    }

    /// Names fetched documents in the index and records them in the history (`pull`, with
    /// where they came from: no credentials), once for a whole pull.
    /// - Parameter anomalies: what was wrong on the store, sealed into the record (audits report it).
    package func recordFetched(
        _ records: [DocumentRecord], from source: String, anomalies: [HistoryRecord.Anomaly] = []
    ) throws {
        guard !records.isEmpty || !anomalies.isEmpty else { return }
        try store.withWriterLock { lock in
            let known = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            try withIndex(lock, known: known) { index in
                try index.write(lock) {
                    for r in records where try index.record(r.id) == nil { try index.put(r, logged: false) }
                    try commitIndexState(index, lock)
                }
            }
            var r = HistoryRecord(
                .pull, documents: records.stableOrder().map(HistoryRecord.Document.init), destinations: [source])
            r.anomalies = anomalies
            try appendToHistory(r, lock, pending: Set(known.keys))
        }
    }

    /// Applies tombstones fetched from a remote store: the documents go as with a removal here
    /// (recorded in the history), the ones already gone are recorded as removed too, so this
    /// replica's next push carries the tombstones on.
    package func applyTombstones(_ stones: [Tombstone]) throws {
        guard !stones.isEmpty else { return }
        try store.withWriterLock { lock in
            let documents = try withIndex(lock) { index in
                try stones.map { stone in
                    try index.record(stone.id).map(HistoryRecord.Document.init)
                        ?? stone.document
                }
            }
            try remove(documents, lock)
        }
    }

    /// Records a push to `destination` (the documents sent, and how it ended).
    /// - Parameter anomalies: what was wrong on the store (objects under `removed/` that are not
    ///   this vault's tombstones), sealed into the record so that audits report it.
    package func recordPush(
        _ documents: [DocumentRecord], to destination: String, outcome: HistoryRecord.Outcome,
        detail: String? = nil, anomalies: [HistoryRecord.Anomaly] = []
    ) throws {
        var r = HistoryRecord(
            .push, outcome: outcome, documents: documents.map(HistoryRecord.Document.init),
            destinations: [destination], detail: detail)
        r.anomalies = anomalies
        try appendToHistory(r)
    }
}

extension VaultStore {
    /// Creates a replica of a vault from its `vault.json` (fetched from a remote store): the
    /// folder, the config, an empty index and a history that starts with the clone; the password
    /// is checked first (one Argon2id run), and nothing is left behind when it is wrong.
    /// - Parameter source: where the vault came from, for the history (no credentials).
    package func createReplica(
        configBytes: [UInt8], password: SecretBytes, source: String,
        random: any RandomSource = SystemRandom()
    ) throws -> Vault {
        let config = try VaultConfig.decode(configBytes, path: "\(source)/vault.json")
        try checkCanCreate()
        // The password first, against the fetched parameters: nothing is created when it is wrong.
        let block = try config.passwordBlock(path: "\(source)/vault.json")
        let keyring = try Keyring.unlock(
            password: password, kdf: config.parameters, salt: block.salt, keyCheck: block.keyCheck)
        var vault = try VaultStore.open(
            self, config: config, keyring: keyring, path: "\(source)/vault.json", random: random)
        // A clone's history is its own, begun by its `clone` record: where the source's history
        // stood when its epochs were retired (the keyring's anchors) says nothing of it, and read
        // against it would be a false rollback. Its own password changes anchor its own history.
        var bytes = configBytes
        if let own = try vault.configWithoutAnchors() {
            bytes = own.encoded()
            vault = try VaultStore.open(
                self, config: own, keyring: keyring, path: "\(source)/vault.json", random: random)
        }
        try establish(vault, first: HistoryRecord(.clone, destinations: [source]), config: bytes, random: random)
        return vault
    }
}
