// Family `state`: the sealed state files and rows a vault reads back and acts on — the index
// rows in `index.db`, tombstones, the destination list, the remote list and upload journals
// with their change logs. The first byte picks the file; its low bit says whether the rest is
// written raw (a forger without the password) or sealed under the vault's key in the file's
// role (so the parser behind authentication sees it, as it would see a buggy writer's bytes).
// Whatever the bytes, reading them back only ever gives a VaultError or a value that names
// what it was asked for (a tombstone of the document asked for, a journal of the job asked for).
import CSQLite
import Foundation
import VaultCore
import VaultRemote
import VaultUpload

enum StateFamily {
    static let sandbox = ScratchVault()
    static let job = "fuzz-job"

    static func check(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let sealed = first & 1 == 1
        let body = Array(bytes.dropFirst())
        let (vault, dir) = sandbox.fresh()
        func file(_ purpose: SealedState.Purpose, _ role: String) -> [UInt8] {
            sealed ? try! vault.sealState(body, purpose: purpose, role: role) : body
        }
        let id = sandbox.records[0].id
        switch (first >> 1) % 7 {
        case 0:
            if let stone = onlyVaultErrors(
                "a tombstone", codes: [.vaultDamaged],
                { try vault.openTombstone(file(.tombstone, "removed/\(id.hex)"), id: id) })
            {
                expect(stone.id == id, "a tombstone opened for another document")
            }
        case 1:
            put(file(.destinations, DestinationList.role), at: DestinationList.path(vault.store))
            // The vault/2 file, as the upgrade to vault/3 reads it (under any epoch's key) and as
            // a vault/2 vault that could not be upgraded reads it.
            onlyVaultErrors("the destination list", codes: [.vaultDamaged]) { _ = try DestinationList.loadFile(vault) }
            onlyVaultErrors("the destination list", codes: [.vaultDamaged]) {
                _ = try DestinationList.loadFile(vault, anyEpoch: true)
            }
        case 2:
            put(file(.remotes, RemoteList.role), at: RemoteList.path(vault.store))
            onlyVaultErrors("the remote list", codes: [.vaultDamaged]) { _ = try RemoteList.load(vault) }
        case 3:
            put(file(.uploadJournal, UploadJournal.role(job: job)), at: UploadJournal.path(in: vault.store, job: job))
            journal(vault)
        case 4:
            // A journal and its change log: records sealed as the generation the journal names.
            let p = parts(body[...], limit: 8)
            put(
                try! vault.sealState(p[0], purpose: .uploadJournal, role: UploadJournal.role(job: job)),
                at: UploadJournal.path(in: vault.store, job: job))
            let generation = (try? JSONDecoder().decode(UploadJournal.self, from: Data(p[0])))?.generation ?? "g"
            var log: [UInt8] = []
            for (n, change) in p.dropFirst().enumerated() {
                let record =
                    sealed
                    ? try! vault.sealState(
                        change, purpose: .uploadJournal,
                        role: UploadJournal.logRole(job: job, generation: generation, n: n + 1)) : change
                log.appendBigEndian32(UInt32(record.count))
                log += record
            }
            put(log, at: UploadJournal.logPath(in: vault.store, job: job))
            journal(vault)
        case 5:
            row(dir, "UPDATE meta SET value = ? WHERE name = 'state'", file(.indexState, "index.db/state"))
            readIndex(vault)
        default:
            row(
                dir, "UPDATE documents SET record = ? WHERE id = X'\(id.hex)'",
                file(.indexRecord, "index.db/documents/\(id.hex)"))
            readIndex(vault)
        }
    }

    static func journal(_ vault: Vault) {
        if let j = onlyVaultErrors(
            "an upload journal", codes: [.vaultDamaged], { try UploadJournal.load(from: vault, job: job) }), let j
        {
            expect(j.job == job, "a journal opened for another job")
        }
        onlyVaultErrors("listing upload journals") { _ = try UploadJournals.list(in: vault) }
    }

    /// Reads the index the ways commands do: every record, one by name, the audit.
    static func readIndex(_ vault: Vault) {
        onlyVaultErrors("reading the index") { _ = try vault.records() }
        onlyVaultErrors("resolving a name") { _ = try vault.select(DocumentSelection(documents: [.name("doc 1.txt")])) }
        onlyVaultErrors("auditing") { _ = try vault.audit() }
    }

    /// Writes one blob into `index.db` with SQLite itself, as someone editing the file would.
    static func row(_ dir: String, _ sql: String, _ blob: [UInt8]) {
        var db: OpaquePointer?
        guard sqlite3_open(dir + "/index.db", &db) == SQLITE_OK else {
            preconditionFailure("the scratch index.db does not open")
        }
        defer { sqlite3_close(db) }
        var s: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK else {
            preconditionFailure("index.db's schema changed: \(sql)")
        }
        defer { sqlite3_finalize(s) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)  // SQLite copies the blob
        _ = blob.withUnsafeBytes {
            sqlite3_bind_blob(s, 1, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), transient)
        }
        expect(sqlite3_step(s) == SQLITE_DONE && sqlite3_changes(db) == 1, "the scratch row was not written")
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian32(_ v: UInt32) {
        append(contentsOf: [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)])
    }
}
