import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The index (`index.db`): an SQLite database of one sealed row per document, so that adding,
/// finding and listing cost what they touch, not what the vault holds (docs/FORMAT.md "Index").
///
/// Nothing about a document is in the clear but its id (already the object's file name) and the
/// time it was added (the order of `list`; the object's own timestamps show it too). Each row's
/// metadata is a sealed state record (purpose index record, role `index.db/documents/<id>`), and
/// lookups by name, SHA-256 and tag go through keyed hashes under a subkey of the vault key.
/// The documents removed according to the history are kept too (`removed`), so export and
/// upload refuse a resurrected document without replaying the history.
///
/// A sealed state row (`meta`, role `index.db/state`) holds what the rows must agree with: how
/// many there are, the stamp of `objects/` (inode, modification and change times) when the
/// index last matched it, and how far into the history the index has applied. A row deleted,
/// a stamp that differs (an object added or removed by anything else than a vault writer, or
/// by one a crash stopped) or an index of another key epoch is found when the index is opened,
/// and the index is reconciled with the objects — the objects stay the truth.
///
/// Writers hold the vault's lock; readers read a consistent snapshot (write-ahead log).
final class DocumentIndex {
    /// `PRAGMA user_version` of the schema below.
    static let schemaVersion: Int32 = 4
    /// The ``Vault/keyedDigest(purpose:_:)`` subkey id of lookup hashes.
    static let lookupPurpose: UInt64 = 2
    /// The subkey id of the row hashes the commitment sums.
    static let commitmentPurpose: UInt64 = 3

    /// What the sealed state row says.
    struct State: Codable, Equatable {
        /// Rows in `documents` and in `removed`.
        var documents: Int
        var removed: Int
        /// The stamp of `objects/` when the rows last matched it ("" for a store read in place).
        var objects: String
        /// The history applied so far: records, the offset after the last, its tag (hex).
        var logCount: Int
        var logEnd: Int
        var logTag: String
        /// The key epoch the last applied record authenticated in: the floor for the next (nil:
        /// not known, the next catch-up reads the whole log).
        var logEpoch: UInt32?
        /// The commitment to every row (``RowCommitment``, hex): a row deleted, added, copied,
        /// retyped or swapped since the last write changes the sum of what is there.
        var commitment: String?
        /// The destinations the history names (its `destination` records), nil when none did.
        var destinations: DestinationList?
        /// The most records the index ever applied (never lowered, but by an `accept`): a
        /// history shorter than this was put back from an older copy.
        var logHigh: Int?
    }

    let db: SQLiteDatabase
    let epoch: UInt32
    private let vaultID: String
    private let random: any RandomSource
    private let sealKey: SecretBytes
    private let stateKey: SecretBytes
    private let lookupKey: SecretBytes
    private let commitmentKey: SecretBytes
    /// The sum of the rows' hashes as the rows are now, kept by every write (loaded from the
    /// state row when a write begins, stored with it).
    private var commitment = RowCommitment()

    /// The schema: STRICT tables (a value of another type, such as an id stored as TEXT, is
    /// refused by SQLite itself), checked object by object against a fresh copy whenever the
    /// file is opened (``ObjectsMismatch``), so no trigger, view or index of anyone else's runs.
    static let schema = """
        CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) STRICT, WITHOUT ROWID;
        CREATE TABLE documents (added INTEGER NOT NULL, id BLOB NOT NULL, name BLOB NOT NULL,
            digest BLOB NOT NULL, logged INTEGER NOT NULL, record BLOB NOT NULL, \
        PRIMARY KEY (added, id)) STRICT, WITHOUT ROWID;
        CREATE UNIQUE INDEX documents_id ON documents(id);
        CREATE INDEX documents_name ON documents(name);
        CREATE INDEX documents_digest ON documents(digest);
        CREATE INDEX documents_unlogged ON documents(id) WHERE logged = 0;
        CREATE TABLE tags (tag BLOB NOT NULL, id BLOB NOT NULL, PRIMARY KEY (tag, id)) STRICT, WITHOUT ROWID;
        CREATE INDEX tags_id ON tags(id);
        CREATE TABLE removed (id BLOB PRIMARY KEY, record BLOB NOT NULL) STRICT, WITHOUT ROWID;
        CREATE TABLE unreadable (id BLOB PRIMARY KEY, record BLOB NOT NULL) STRICT, WITHOUT ROWID;
        CREATE TABLE deliveries (destination BLOB NOT NULL, id BLOB NOT NULL, record BLOB NOT NULL,
            PRIMARY KEY (destination, id)) STRICT, WITHOUT ROWID;
        CREATE INDEX deliveries_id ON deliveries(id);
        """

    /// What an `index.db` that vault does not take as its own is: never read, but replaced by a
    /// new file the objects and the history fill (``Vault/withIndex(known:full:_:)``).
    struct Rejected: Error {
        let why: String
        /// An index of an earlier version of vault (made anew without a word); otherwise
        /// someone else's file, said in a warning.
        var earlierVersion = false
    }

    /// The schema's objects as SQLite lists them (`sqlite_master`), from an empty database in
    /// memory: what every opened file must list, exactly.
    private static let referenceObjects: [String] = {
        guard let db = try? SQLiteDatabase(path: ":memory:", create: false),
            (try? db.execute(schema)) != nil,
            let objects = try? objects(of: db)
        else { preconditionFailure("internal error: the index schema does not load") }
        return objects
    }()

    private static func objects(of db: SQLiteDatabase) throws -> [String] {
        let s = try db.statement(
            "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
        var out: [String] = []
        defer { s.reset() }
        while try s.step() { out.append([s.text(0), s.text(1), s.text(2), s.text(3)].joined(separator: "\u{1}")) }
        return out
    }

    /// Opens (creating when missing) the index of `vault`.
    /// - Throws: ``Rejected`` when `index.db` (or its `-wal` or `-shm`) is not a regular file,
    ///   or is a database of another layout or version, or holds anything the schema does not
    ///   (a trigger, a view, an index); ``VaultError/Code/vaultDamaged`` when it is not a
    ///   database SQLite can read.
    init(vault: Vault) throws {
        let path = vault.store.path(.index)
        for suffix in ["", "-wal", "-shm"] {
            let kind = FileSystem.kind(of: path + suffix, following: false)
            if kind != .missing && kind != .file { throw Rejected(why: "index.db\(suffix) is not a regular file") }
        }
        db = try SQLiteDatabase(path: path, create: true)
        epoch = vault.keys.epoch
        vaultID = vault.config.id
        random = vault.random
        sealKey = try SealedState.subkey(vault.keys.current, purpose: .indexRecord)
        stateKey = try SealedState.subkey(vault.keys.current, purpose: .indexState)
        lookupKey = try SubkeyDerivation.derive(
            from: vault.keys.current, id: Self.lookupPurpose, context: Vault.keyedDigestContext)
        commitmentKey = try SubkeyDerivation.derive(
            from: vault.keys.current, id: Self.commitmentPurpose, context: Vault.keyedDigestContext)
        // No trigger or view of the file's runs before its objects are checked: none is read yet.
        try db.execute("PRAGMA trusted_schema=OFF")
        let objects = try Self.objects(of: db)
        let current = try db.statement("PRAGMA user_version").first { $0.int64(0) } ?? 0
        if objects.isEmpty && current == 0 {
            // A new file: it is a cache, filled from the objects and the history.
            try db.execute("PRAGMA journal_mode=WAL")
            try db.transaction { try db.execute(Self.schema + "; PRAGMA user_version = \(Self.schemaVersion)") }
        } else if current != Int64(Self.schemaVersion) {
            // Another version's layout: made anew in a new file (earlier versions kept rows
            // this one checks otherwise), filled from the objects and the history.
            throw Rejected(
                why: "index.db is of another version (\(current))", earlierVersion: current == 2 || current == 3)
        } else if objects != Self.referenceObjects {
            throw Rejected(why: "index.db holds other tables, indexes, triggers or views than vault's")
        }
        // FULL: a commit is on disk when it returns (the history and the objects are fsynced too).
        try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF")
    }

    // MARK: The state row

    /// What the state row is: it opens under this epoch's key, it is sealed in another key
    /// epoch (never read), or it does not authenticate (damaged or forged).
    enum StateRow {
        case current(State)
        case otherEpoch(UInt32)
        case unauthentic
    }

    /// Reads and opens the state row: nil when there is none (a new index).
    func readState() throws -> StateRow? {
        guard let bytes = try db.statement("SELECT value FROM meta WHERE name = 'state'").first({ $0.blob(0) }) else {
            return nil
        }
        guard
            let plain = SealedState.open(
                bytes, purpose: .indexState, role: "index.db/state", epoch: epoch, subkey: stateKey, vaultID: vaultID),
            let state = try? JSONDecoder().decode(State.self, from: Data(plain))
        else {
            if let p = SealedState.prefix(of: bytes), p.epoch != epoch { return .otherEpoch(p.epoch) }
            return .unauthentic
        }
        return .current(state)
    }

    /// Writes the state row (inside the caller's transaction), with the commitment to the rows
    /// as they are now.
    func writeState(_ state: State) throws {
        var state = state
        state.commitment = commitment.hex
        state.logHigh = max(state.logHigh ?? 0, state.logCount)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let sealed = SealedState.seal(
            Array(try encoder.encode(state)), purpose: .indexState, role: "index.db/state", epoch: epoch,
            subkey: stateKey, vaultID: vaultID, random: random)
        try db.statement("INSERT OR REPLACE INTO meta (name, value) VALUES ('state', ?)").bind(sealed).run()
    }

    /// The state row when it opens, else an empty state (for writers that set it anew).
    func stateOrEmpty() throws -> State {
        if case .current(let s)? = try readState() { return s }
        return State(
            documents: 0, removed: 0, objects: "", logCount: 0, logEnd: 0, logTag: "", logEpoch: nil, commitment: nil,
            destinations: nil, logHigh: nil)
    }

    /// The rows as counted now (each table's smallest index is walked).
    func counts() throws -> (documents: Int, removed: Int) {
        let c = try counts(documents: true)
        return (c.documents ?? 0, c.removed)
    }

    /// The rows of removed documents, and with `documents` the document rows, as counted now.
    func counts(documents countDocuments: Bool) throws -> (documents: Int?, removed: Int) {
        let documents =
            countDocuments ? try db.statement("SELECT count(*) FROM documents").first { Int($0.int64(0)) } ?? 0 : nil
        let removed = try db.statement("SELECT count(*) FROM removed").first { Int($0.int64(0)) } ?? 0
        return (documents, removed)
    }

    /// Empties every table (a rebuild).
    func clear() throws {
        try db.execute(
            """
                DELETE FROM documents; DELETE FROM tags; DELETE FROM removed; DELETE FROM unreadable; DELETE FROM \
                meta; DELETE FROM deliveries
                """
        )
        delta = 0
        commitment = RowCommitment()
    }

    /// Deletes what the index keeps from the history (removals and the ledger) and marks every
    /// document as not yet named by it (a derivation of the history begins).
    func clearHistoryRows() throws {
        try db.execute("UPDATE documents SET logged = 0")
        try db.statement("DELETE FROM removed RETURNING id, record").forEach {
            commitment.remove(rowHash(.removed, [$0.blob(0), $0.blob(1)]))
        }
        try db.statement("DELETE FROM deliveries RETURNING destination, id, record").forEach {
            commitment.remove(rowHash(.deliveries, [$0.blob(0), $0.blob(1), $0.blob(2)]))
        }
    }

    // MARK: The commitment to the rows

    /// The tables the commitment covers (the state row aside).
    enum Table: UInt8 { case documents = 1, tags, removed, deliveries, unreadable }

    /// A row's keyed hash: its table and each of its columns (length-prefixed), under a subkey
    /// of the vault key, so nobody without the password can compute one.
    private func rowHash(_ table: Table, _ columns: [[UInt8]]) -> [UInt8] {
        var message = [table.rawValue]
        for c in columns { message.appendBigEndian(UInt32(c.count)); message += c }
        return KeyedHash.digest(message, key: commitmentKey)
    }

    private func documentColumns(
        id: [UInt8], added: Int64, name: [UInt8], digest: [UInt8], record: [UInt8]
    ) -> [[UInt8]] {
        var a = [UInt8](); a.appendBigEndian(UInt64(bitPattern: added))
        return [id, a, name, digest, record]
    }

    /// Reads every row, opening each sealed one in its place, and sums their hashes: true when
    /// every row opens and the sum is the commitment the state row was written with. What the
    /// commands that act on every document check before they read (O(rows), the same order as
    /// reading them).
    func verifyRows(against state: State) throws -> Bool {
        guard let expected = state.commitment else { return false }
        var sum = RowCommitment()
        do {
            try db.reading {
                try db.statement("SELECT id, added, name, digest, record FROM documents").forEach { s in
                    let id = s.blob(0), record = s.blob(4)
                    _ = try open(id: id, sealed: record)
                    sum.add(
                        rowHash(
                            .documents,
                            documentColumns(
                                id: id, added: s.int64(1), name: s.blob(2), digest: s.blob(3), record: record)))
                }
                try db.statement("SELECT tag, id FROM tags").forEach {
                    sum.add(rowHash(.tags, [$0.blob(0), $0.blob(1)]))
                }
                try db.statement("SELECT id, record FROM removed").forEach { s in
                    let id = s.blob(0), record = s.blob(1)
                    guard id.count == EnvelopeFormat.documentIDSize else {
                        throw Rejected(why: "a removal row has no id")
                    }
                    _ = try openRemoved(DocumentID(bytes: id), record)
                    sum.add(rowHash(.removed, [id, record]))
                }
                try db.statement("SELECT destination, id, record FROM deliveries").forEach { s in
                    let key = s.blob(0), id = s.blob(1), record = s.blob(2)
                    guard id.count == EnvelopeFormat.documentIDSize else {
                        throw Rejected(why: "a ledger row has no id")
                    }
                    _ = try openDelivery(key, DocumentID(bytes: id), record)
                    sum.add(rowHash(.deliveries, [key, id, record]))
                }
                try db.statement("SELECT id, record FROM unreadable").forEach { s in
                    let id = s.blob(0), record = s.blob(1)
                    guard id.count == EnvelopeFormat.documentIDSize else {
                        throw Rejected(why: "an unreadable row has no id")
                    }
                    _ = try openUnreadable(DocumentID(bytes: id), record)
                    sum.add(rowHash(.unreadable, [id, record]))
                }
            }
        } catch is Rejected {
            return false
        } catch is LedgerRowDamaged {
            return false
        } catch is RowDamaged {
            return false
        }
        return sum.hex == expected
    }

    // MARK: Keys of rows

    func lookup(_ kind: UInt8, _ value: [UInt8]) -> [UInt8] {
        Array(KeyedHash.digest([kind] + value, key: lookupKey).prefix(16))
    }
    func nameKey(_ name: String) -> [UInt8] { lookup(0x6e, Array(name.utf8)) }
    func digestKey(_ sha256: [UInt8]) -> [UInt8] { lookup(0x64, sha256) }
    func tagKey(_ tag: String) -> [UInt8] { lookup(0x74, Array(tag.utf8)) }
    func destinationKey(_ identity: String) -> [UInt8] { lookup(0x72, Array(identity.utf8)) }

    private func seal(_ record: DocumentRecord) -> [UInt8] {
        SealedState.seal(
            record.metadata.encoded(), purpose: .indexRecord, role: "index.db/documents/\(record.id.hex)", epoch: epoch,
            subkey: sealKey, vaultID: vaultID, random: random)
    }

    /// The associated data of a document row after its 14-byte prefix, but for the id's hex digits.
    private lazy var rowADBase: [UInt8] = Array(vaultID.utf8) + [0] + Array("index.db/documents/".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The record of a row; a row that does not authenticate in its place is damage. What
    /// ``SealedState/open(_:purpose:role:epoch:subkey:vaultID:)`` does, without building
    /// strings: `list` opens 100,000 rows a second.
    private func open(id: [UInt8], sealed: [UInt8]) throws -> DocumentRecord {
        let header = SealedState.headerSize, prefix = SealedState.prefixSize
        guard id.count == EnvelopeFormat.documentIDSize,
              sealed.count >= header + EnvelopeFormat.tagSize,
              sealed.starts(with: SealedState.magic),
              sealed[8] == SealedState.version,
              sealed[9] == SealedState.Purpose.indexRecord.rawValue,
              UInt32(bigEndianBytes: sealed[10..<14]) == epoch else {
            throw RowDamaged(
                what:
                    """
                        index.db's row for \(id.count == 16 ? DocumentID(bytes: id).hex : "?") is not a sealed record \
                        of this epoch
                        """
            )
        }
        var ad = [UInt8]()
        ad.reserveCapacity(prefix + rowADBase.count + 32)
        ad.append(contentsOf: sealed[0..<prefix])
        ad.append(contentsOf: rowADBase)
        for b in id { ad.append(Self.hexDigits[Int(b >> 4)]); ad.append(Self.hexDigits[Int(b & 15)]) }
        var plain = [UInt8](repeating: 0, count: sealed.count - header - EnvelopeFormat.tagSize)
        let ok = plain.withUnsafeMutableBytes { out in
            sealed.withUnsafeBytes { s in
                ad.withUnsafeBytes { a in
                    sealKey.withUnsafeBytes { k in
                        XChaCha20Poly1305.open(
                            UnsafeRawBufferPointer(rebasing: s[header...]), into: out, ad: a,
                            nonce: UnsafeRawBufferPointer(rebasing: s[prefix..<header]), key: k)
                    }
                }
            }
        }
        guard ok,
              let metadata = try? DocumentMetadata.decode(plain) else {
            throw RowDamaged(what: "index.db's row for \(DocumentID(bytes: id).hex) fails authentication")
        }
        return DocumentRecord(id: DocumentID(bytes: id), metadata: metadata)
    }

    // MARK: Writing (the caller holds the vault's lock, inside a transaction)

    /// Document rows inserted less rows deleted since the last ``takeDelta()``: writers keep the
    /// state row's count without counting the rows.
    private var delta = 0

    /// Runs `body` in a write transaction; `lock` is the vault's writer lock the caller holds.
    func write<R>(_ lock: WriterLock, _ body: () throws -> R) throws -> R {
        delta = 0
        return try db.transaction {
            // The sum as the last write left it; a state row that does not open starts it
            // afresh (the writer then rebuilds the rows, or the next full check does).
            if case .current(let state)? = try readState(), let c = state.commitment.flatMap(RowCommitment.init(hex:)) {
                commitment = c
            } else {
                commitment = RowCommitment()
            }
            return try body()
        }
    }

    /// The change in document rows since the last call.
    func takeDelta() -> Int {
        defer { delta = 0 }
        return delta
    }

    /// Inserts or replaces a document's row.
    func put(_ record: DocumentRecord, logged: Bool) throws {
        try delete(record.id)
        delta += 1
        let name = nameKey(record.metadata.name), digest = digestKey(record.metadata.sha256), sealed = seal(record)
        try db.statement("INSERT INTO documents (id, added, name, digest, logged, record) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(record.id.bytes, record.metadata.addedAtMillis, name, digest, logged ? 1 : 0, sealed).run()
        commitment.add(
            rowHash(
                .documents,
                documentColumns(
                    id: record.id.bytes, added: record.metadata.addedAtMillis, name: name,
                    digest: digest, record: sealed)))
        for tag in Set(record.metadata.tags) {
            let key = tagKey(tag)
            try db.statement("INSERT OR IGNORE INTO tags (tag, id) VALUES (?, ?)").bind(key, record.id.bytes).run()
            if db.changes == 1 { commitment.add(rowHash(.tags, [key, record.id.bytes])) }
        }
    }

    /// Deletes a document's row and its tags (nothing when there is none).
    func delete(_ id: DocumentID) throws {
        try db.statement("DELETE FROM documents WHERE id = ? RETURNING id, added, name, digest, record").bind(id.bytes)
            .forEach { s in
                delta -= 1
                commitment.remove(
                    rowHash(
                        .documents,
                        documentColumns(
                            id: s.blob(0), added: s.int64(1), name: s.blob(2), digest: s.blob(3),
                            record: s.blob(4))))
            }
        try db.statement("DELETE FROM tags WHERE id = ? RETURNING tag, id").bind(id.bytes).forEach {
            commitment.remove(rowHash(.tags, [$0.blob(0), $0.blob(1)]))
        }
    }

    /// Marks documents as named by the history.
    func markLogged(_ ids: [DocumentID]) throws {
        for id in ids { try db.statement("UPDATE documents SET logged = 1 WHERE id = ?").bind(id.bytes).run() }
    }

    /// Records a document as removed according to the history.
    func addRemoved(_ document: HistoryRecord.Document, position: Int) throws {
        let id = document.id
        let sealed = SealedState.seal(
            Array(try JSONEncoder().encode(Removed(document: document, record: position))), purpose: .indexRecord,
            role: "index.db/removed/\(id.hex)",
            epoch: epoch, subkey: sealKey, vaultID: vaultID, random: random)
        try db.statement("DELETE FROM removed WHERE id = ? RETURNING id, record").bind(id.bytes).forEach {
            commitment.remove(rowHash(.removed, [$0.blob(0), $0.blob(1)]))
        }
        try db.statement("INSERT INTO removed (id, record) VALUES (?, ?)").bind(id.bytes, sealed).run()
        commitment.add(rowHash(.removed, [id.bytes, sealed]))
    }

    /// What an unreadable row holds (sealed: `list` shows it as vault's own words).
    private struct Unreadable: Codable { var code: String; var message: String }

    private static func unreadableRole(_ id: DocumentID) -> String { "index.db/unreadable/\(id.hex)" }

    /// Notes an object whose envelope could not be read (so `list` keeps reporting it), or
    /// forgets it (nil).
    func setUnreadable(_ id: DocumentID, _ error: VaultError?) throws {
        try db.statement("DELETE FROM unreadable WHERE id = ? RETURNING id, record").bind(id.bytes).forEach {
            commitment.remove(rowHash(.unreadable, [$0.blob(0), $0.blob(1)]))
        }
        guard let error else { return }
        let sealed = SealedState.seal(
            Array(try JSONEncoder().encode(Unreadable(code: error.code.rawValue, message: error.message))),
            purpose: .indexRecord, role: Self.unreadableRole(id), epoch: epoch, subkey: sealKey, vaultID: vaultID,
            random: random)
        try db.statement("INSERT INTO unreadable (id, record) VALUES (?, ?)").bind(id.bytes, sealed).run()
        commitment.add(rowHash(.unreadable, [id.bytes, sealed]))
    }

    private func openUnreadable(_ id: DocumentID, _ sealed: [UInt8]) throws -> VaultError {
        guard
            let plain = SealedState.open(
                sealed, purpose: .indexRecord, role: Self.unreadableRole(id), epoch: epoch, subkey: sealKey,
                vaultID: vaultID),
            let u = try? JSONDecoder().decode(Unreadable.self, from: Data(plain))
        else {
            throw RowDamaged(what: "index.db's unreadable row for \(id.hex) fails authentication")
        }
        return VaultError(VaultError.Code(rawValue: u.code), u.message)
    }

    // MARK: Reading

    /// The objects noted as unreadable, by id (a row that does not open in its place is
    /// damage: the index is rebuilt, and nobody else's words are shown as vault's).
    func unreadable() throws -> [(DocumentID, VaultError)] {
        let s = try db.statement("SELECT id, record FROM unreadable ORDER BY id")
        var out: [(DocumentID, VaultError)] = []
        defer { s.reset() }
        while try s.step() {
            let b = s.blob(0)
            guard b.count == EnvelopeFormat.documentIDSize else { continue }
            let id = DocumentID(bytes: b)
            out.append((id, try openUnreadable(id, s.blob(1))))
        }
        return out
    }

    /// The ids noted unreadable, without opening their rows.
    func unreadableIDs() throws -> Set<DocumentID> { try idSet("SELECT id FROM unreadable") }

    /// The row of `id`, if any.
    func record(_ id: DocumentID) throws -> DocumentRecord? {
        try db.statement("SELECT record FROM documents WHERE id = ?").bind(id.bytes).first {
            try open(id: id.bytes, sealed: $0.blob(0))
        }
    }

    /// The documents named exactly `name`, in stable order.
    func records(named name: String) throws -> [DocumentRecord] {
        let s = try db.statement("SELECT id, record FROM documents WHERE name = ? ORDER BY added, id").bind(
            nameKey(name))
        var out: [DocumentRecord] = []
        defer { s.reset() }
        while try s.step() {
            let r = try open(id: s.blob(0), sealed: s.blob(1))
            if r.metadata.name == name { out.append(r) }  // a keyed-hash collision is not a match
        }
        return out
    }

    /// The documents whose id starts with the hex digits `prefix` (lower case), in stable order.
    func records(idPrefix prefix: String) throws -> [DocumentRecord] {
        var low = [UInt8](), digits = Array(prefix.utf8)
        if digits.count % 2 == 1 { digits.append(UInt8(ascii: "0")) }
        var i = 0
        while i + 1 < digits.count, let b = UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16) {
            low.append(b); i += 2
        }
        var out: [DocumentRecord] = []
        let s = try db.statement("SELECT id, record FROM documents WHERE id >= ? ORDER BY id")
            .bind(low)
        defer { s.reset() }
        while try s.step() {
            let id = s.blob(0)
            guard Hex.encode(id).hasPrefix(prefix) else { break }
            out.append(try open(id: id, sealed: s.blob(1)))
        }
        return out.stableOrder()
    }

    /// The documents whose SHA-256 is `sha256`, oldest first.
    func records(withDigest sha256: [UInt8]) throws -> [DocumentRecord] {
        let s = try db.statement("SELECT id, record FROM documents WHERE digest = ? ORDER BY added, id").bind(
            digestKey(sha256))
        var out: [DocumentRecord] = []
        defer { s.reset() }
        while try s.step() {
            let r = try open(id: s.blob(0), sealed: s.blob(1))
            if r.metadata.sha256 == sha256 { out.append(r) }
        }
        return out
    }

    /// The documents with tag `tag`, in stable order.
    func records(tagged tag: String) throws -> [DocumentRecord] {
        var out: [DocumentRecord] = []
        try forEach(tagged: tag) { out.append($0) }
        return out
    }

    /// Calls `body` with each document with tag `tag`, in stable order, one row at a time.
    func forEach(tagged tag: String, _ body: (DocumentRecord) throws -> Void) throws {
        let s = try db.statement(
            """
            SELECT d.id, d.record FROM tags t JOIN documents d ON d.id = t.id WHERE t.tag = ? ORDER BY d.added, d.id
            """
        ).bind(tagKey(tag))
        defer { s.reset() }
        while try s.step() {
            let r = try open(id: s.blob(0), sealed: s.blob(1))
            if r.metadata.tags.contains(tag) { try body(r) }  // a keyed-hash collision is not a match
        }
    }

    /// Calls `body` with every document in stable order (oldest first), one row at a time.
    func forEach(_ body: (DocumentRecord) throws -> Void) throws {
        let s = try db.statement("SELECT id, record FROM documents ORDER BY added, id")
        defer { s.reset() }
        while try s.step() { try body(try open(id: s.blob(0), sealed: s.blob(1))) }
    }

    /// The ids of every row.
    func ids() throws -> Set<DocumentID> { try idSet("SELECT id FROM documents") }

    /// The document ids `sql` selects (its first column; anything not an id is left out).
    private func idSet(_ sql: String) throws -> Set<DocumentID> {
        let s = try db.statement(sql)
        var out = Set<DocumentID>()
        defer { s.reset() }
        while try s.step() {
            let b = s.blob(0)
            if b.count == EnvelopeFormat.documentIDSize { out.insert(DocumentID(bytes: b)) }
        }
        return out
    }

    /// The documents no history record names yet.
    func unlogged() throws -> [DocumentID] {
        let s = try db.statement("SELECT id FROM documents WHERE logged = 0")
        var out: [DocumentID] = []
        defer { s.reset() }
        while try s.step() {
            let b = s.blob(0)
            if b.count == EnvelopeFormat.documentIDSize { out.append(DocumentID(bytes: b)) }
        }
        return out.sorted()
    }

    /// True when the history removed `id`.
    func isRemoved(_ id: DocumentID) throws -> Bool {
        try db.statement("SELECT 1 FROM removed WHERE id = ?").bind(id.bytes).first { _ in true } ?? false
    }

    /// A removal row: the document and the position of the history record that removed it.
    struct Removed: Codable {
        var document: HistoryRecord.Document
        var record: Int
    }

    /// The position of the history record that removed `id`, if one did.
    func removal(of id: DocumentID) throws -> Int? {
        guard
            let sealed = try db.statement("SELECT record FROM removed WHERE id = ?").bind(id.bytes).first({ $0.blob(0) }
            )
        else { return nil }
        return try openRemoved(id, sealed).record
    }

    private func openRemoved(_ id: DocumentID, _ sealed: [UInt8]) throws -> Removed {
        guard
            let plain = SealedState.open(
                sealed, purpose: .indexRecord, role: "index.db/removed/\(id.hex)", epoch: epoch,
                subkey: sealKey, vaultID: vaultID),
            let r = try? JSONDecoder().decode(Removed.self, from: Data(plain)), r.document.id == id
        else {
            throw RowDamaged(what: "index.db's removal row for \(id.hex) fails authentication")
        }
        return r
    }

    /// The documents the history removed.
    func removedDocuments() throws -> [DocumentID: HistoryRecord.Document] {
        let s = try db.statement("SELECT id, record FROM removed")
        var out: [DocumentID: HistoryRecord.Document] = [:]
        defer { s.reset() }
        while try s.step() {
            let b = s.blob(0)
            guard b.count == EnvelopeFormat.documentIDSize else { continue }
            let id = DocumentID(bytes: b)
            out[id] = try openRemoved(id, s.blob(1)).document
        }
        return out
    }

    // MARK: Deliveries

    /// A ledger row's role: its place (destination key and document) is bound to it, so a row
    /// moved to another document or destination does not open.
    private static func deliveryRole(_ key: [UInt8], _ id: DocumentID) -> String {
        "index.db/deliveries/\(Hex.encode(key))/\(id.hex)"
    }

    /// Records `destination`'s confirmation of `id`; the first one is kept (inside a write).
    func addDelivery(_ id: DocumentID, _ delivery: Delivery) throws {
        let key = destinationKey(delivery.destination)
        let sealed = SealedState.seal(
            Array(try JSONEncoder().encode(delivery)), purpose: .indexRecord, role: Self.deliveryRole(key, id),
            epoch: epoch, subkey: sealKey, vaultID: vaultID, random: random)
        try db.statement("INSERT OR IGNORE INTO deliveries (destination, id, record) VALUES (?, ?, ?)").bind(
            key, id.bytes, sealed
        ).run()
        if db.changes == 1 { commitment.add(rowHash(.deliveries, [key, id.bytes, sealed])) }
    }

    private func openDelivery(_ key: [UInt8], _ id: DocumentID, _ sealed: [UInt8]) throws -> Delivery {
        guard
            let plain = SealedState.open(
                sealed, purpose: .indexRecord, role: Self.deliveryRole(key, id), epoch: epoch, subkey: sealKey,
                vaultID: vaultID),
            let d = try? JSONDecoder().decode(Delivery.self, from: Data(plain)), destinationKey(d.destination) == key
        else {
            throw LedgerRowDamaged(id: id)
        }
        return d
    }

    /// The delivery of `id` at the destination `identity`, if the ledger has one.
    func delivery(of id: DocumentID, to identity: String) throws -> Delivery? {
        let key = destinationKey(identity)
        guard
            let sealed = try db.statement("SELECT record FROM deliveries WHERE destination = ? AND id = ?").bind(
                key, id.bytes
            )
            .first({ $0.blob(0) })
        else { return nil }
        return try openDelivery(key, id, sealed)
    }

    /// Every delivery of `id`.
    func deliveries(of id: DocumentID) throws -> [Delivery] {
        let s = try db.statement("SELECT destination, record FROM deliveries WHERE id = ?").bind(id.bytes)
        var out: [Delivery] = []
        defer { s.reset() }
        while try s.step() { out.append(try openDelivery(s.blob(0), id, s.blob(1))) }
        return out
    }

    /// Calls `body` with every ledger row.
    func forEachDelivery(_ body: (DocumentID, Delivery) throws -> Void) throws {
        let s = try db.statement("SELECT destination, id, record FROM deliveries")
        defer { s.reset() }
        while try s.step() {
            let b = s.blob(1)
            guard b.count == EnvelopeFormat.documentIDSize else { continue }
            let id = DocumentID(bytes: b)
            try body(id, try openDelivery(s.blob(0), id, s.blob(2)))
        }
    }

    /// A row that does not open in its place (edited, moved, forged, damaged): the index is
    /// rebuilt from the history and the objects and the lookup made again
    /// (``Vault/withIndex(known:full:ownChanges:_:)``); never a failure of the command.
    struct RowDamaged: Error {
        let what: String
    }

    /// A ledger row that does not open in its place (moved, edited, forged): the ledger is
    /// derived from the history again (``Vault/withLedger(_:)``).
    struct LedgerRowDamaged: Error {
        let id: DocumentID
    }

    /// The rows of the ledger.
    func deliveryCount() throws -> Int {
        try db.statement("SELECT count(*) FROM deliveries").first { Int($0.int64(0)) } ?? 0
    }
}

/// The index as a projection of the history: what a record does to it (inside the caller's
/// write transaction). The documents a record names are marked as named by the history, those
/// it removes are kept as removed (so a document put back is refused), and confirmations become
/// ledger rows.
struct IndexProjection: HistoryProjection {
    let index: DocumentIndex

    func present(_ documents: [HistoryRecord.Document], at position: Int) throws {
        try index.markLogged(documents.map(\.id))
    }

    func reset(to documents: [HistoryRecord.Document], at position: Int) throws {
        try present(documents, at: position)
    }

    func removed(_ documents: [HistoryRecord.Document], at position: Int) throws {
        for d in documents { try index.addRemoved(d, position: position) }
    }

    func delivered(_ documents: [HistoryRecord.Document], _ delivery: Delivery) throws {
        for d in documents { try index.addDelivery(d.id, delivery) }
    }

    /// A row's tags are its envelope's with the history's changes made.
    func retagged(_ documents: [HistoryRecord.Document], _ change: TagChange) throws {
        for d in documents {
            guard let row = try index.record(d.id) else { continue }
            try index.put(DocumentRecord(id: d.id, metadata: row.metadata.retagged(change)), logged: true)
        }
    }

    /// The destination list is kept in the sealed state row.
    func destination(_ change: DestinationChange) throws {
        var state = try index.stateOrEmpty()
        state.destinations = change.applied(to: state.destinations ?? DestinationList())
        try index.writeState(state)
    }
}

/// A commitment to a multiset of rows: the sum, modulo 2²⁵⁶, of each row's keyed hash. A row
/// added adds its hash and one deleted subtracts it, so a writer keeps the sum in O(1) per row
/// and a reader that sums what it reads learns whether the rows are exactly those the last write
/// left, whatever their order (a multiset hash; forging one needs the key).
struct RowCommitment: Equatable {
    /// Four 64-bit limbs, least significant first.
    private var limbs: [UInt64] = [0, 0, 0, 0]

    init() {}

    init?(hex: String) {
        guard let bytes = Hex.decode(hex),
              bytes.count == 32 else { return nil }
        limbs = (0..<4).map { i in UInt64(bigEndianBytes: bytes[(24 - 8 * i)..<(32 - 8 * i)]) }
    }

    /// Big-endian hex of the sum.
    var hex: String {
        var out = [UInt8]()
        for limb in limbs.reversed() { out.appendBigEndian(limb) }
        return Hex.encode(out)
    }

    private static func limbs(_ hash: [UInt8]) -> [UInt64] {
        (0..<4).map { i in UInt64(bigEndianBytes: hash[(24 - 8 * i)..<(32 - 8 * i)]) }
    }

    mutating func add(_ hash: [UInt8]) {
        var carry: UInt64 = 0
        for (i, x) in Self.limbs(hash).enumerated() {
            let (a, o1) = limbs[i].addingReportingOverflow(x)
            let (b, o2) = a.addingReportingOverflow(carry)
            limbs[i] = b
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
    }

    mutating func remove(_ hash: [UInt8]) {
        var borrow: UInt64 = 0
        for (i, x) in Self.limbs(hash).enumerated() {
            let (a, o1) = limbs[i].subtractingReportingOverflow(x)
            let (b, o2) = a.subtractingReportingOverflow(borrow)
            limbs[i] = b
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
    }
}
