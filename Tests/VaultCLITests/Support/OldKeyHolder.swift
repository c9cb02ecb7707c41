import Foundation
@testable import VaultCore

/// Someone who kept a copy of a vault's folder (its old `vault.json`) and knows the password it
/// had then: what they can seal with the keys of that epoch, as the hostile review did.
struct OldKeyHolder {
    let vault: VaultCore.Vault

    /// Unlocks the copy at `folder` with `password`.
    init(folder: String, password: String) throws {
        let pw = try Array(password.utf8).withUnsafeBytes { try SecretBytes(copying: $0) }
        vault = try VaultStore(root: folder).unlock(password: pw)
    }

    /// A `remove.pending` naming `documents`, sealed in the current format under this epoch's key.
    func pendingRemoval(_ documents: [(id: String, name: String)]) throws -> [UInt8] {
        let body = Array(
            try JSONEncoder().encode(
                documents.map {
                    HistoryRecord.Document(id: DocumentID(hex: $0.id)!, name: $0.name, sha256: "", size: 0)
                }))
        return try vault.sealState(body, purpose: .pendingRemoval, role: "remove.pending")
    }

    /// A `remove.pending` in the format of versions before sealed state (`VAULTRMP` ‖ nonce ‖
    /// seal under the log key), which those versions acted on.
    func legacyPendingRemoval(_ documents: [(id: String, name: String)]) throws -> [UInt8] {
        let key = try SubkeyDerivation.derive(
            from: vault.vaultKey, id: HistoryFormat.subkeyID, context: HistoryFormat.subkeyContext)
        let body = Array(
            try JSONEncoder().encode(
                documents.map {
                    HistoryRecord.Document(id: DocumentID(hex: $0.id)!, name: $0.name, sha256: "", size: 0)
                }))
        let nonce = SystemRandom().bytes(24)
        return Array("VAULTRMP".utf8) + nonce
            + XChaCha20Poly1305.seal(body, ad: Array("VAULTRMP".utf8) + Array(vault.id.utf8), nonce: nonce, key: key)
    }

    /// A tombstone for `id`, in the current format, under this epoch's key.
    func tombstone(_ id: String) throws -> [UInt8] {
        try vault.sealTombstone(HistoryRecord.Document(id: DocumentID(hex: id)!, name: "", sha256: "", size: 0))
    }

    /// A tombstone in the format before sealed state (`VTMB1`), under this epoch's key.
    func legacyTombstone(_ id: String) throws -> [UInt8] {
        let stone = Tombstone(id: DocumentID(hex: id)!, name: "", sha256: "", size: 0, time: 0, host: "attacker")
        let key = try SubkeyDerivation.derive(from: vault.vaultKey, id: Tombstone.subkeyID, context: Tombstone.context)
        let nonce = SystemRandom().bytes(24)
        return Tombstone.magic + nonce
            + XChaCha20Poly1305.seal(
                Array(try JSONEncoder().encode(stone)), ad: Tombstone.ad(vaultID: vault.id, id: id),
                nonce: nonce, key: key)
    }

    /// Appends to the log of the vault in `folder` a record sealed under this (old) epoch's log
    /// key, in the next place after the log's last record: what someone who knew an old
    /// password can write into a log. Only `log.vlt` changes (its heads are the owner's).
    func appendForgedRecord(
        _ operation: HistoryRecord.Operation, documents: [(id: String, name: String)], destinations: [String],
        toLogIn folder: String
    ) throws {
        let log = try HistoryLog(vault: vault)
        let path = folder + "/log.vlt"
        let file = try OpenFile.openForReading(path)
        defer { file.close() }
        var findings: [AuditFinding] = []
        let framed = try log.frames(of: file, to: Int(try file.size()), findings: &findings)
        guard let last = framed.last else { throw VaultError(.internal, "the log has no record to follow") }
        let record = HistoryRecord(
            operation,
            documents: documents.map {
                HistoryRecord.Document(id: DocumentID(hex: $0.id)!, name: $0.name, sha256: "", size: 0)
            },
            destinations: destinations, detail: "forged")
        let position = framed.count + 1
        let nonce = SystemRandom().bytes(HistoryFormat.nonceSize)
        let sealed = XChaCha20Poly1305.seal(
            record.json(), ad: log.associatedData(position: position, previousTag: last.tag),
            nonce: nonce, key: log.key)
        var frame = [UInt8]()
        frame.appendBigEndian(UInt32(8 + nonce.count + sealed.count))
        frame.appendBigEndian(UInt64(position))
        frame += nonce + sealed
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data(frame))
        try h.close()
    }
}
