#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension HistoryLog {
    // MARK: Removals in progress

    /// Writes `remove.pending`: the documents a removal is about to unlink, sealed (so nobody
    /// without the password can make vault record a removal it did not do).
    func writePendingRemoval(_ documents: [HistoryRecord.Document]) throws {
        try writeState(documents, as: .pendingRemoval)
    }

    /// What `remove.pending` holds: nothing when there is none, the documents of an interrupted
    /// removal when it authenticates under the current key, or why it was refused (a forged or
    /// damaged file, or one sealed under a superseded key, is never acted on; the audit reports it).
    func pendingRemovalState() -> (documents: [HistoryRecord.Document]?, refused: VaultError?) {
        guard FileSystem.kind(of: pendingRemovalPath) != .missing else { return (nil, nil) }
        do {
            let bytes = try FileSystem.readFile(pendingRemovalPath, limit: 64 << 20)
            let plain: [UInt8]
            let legacy = Array("VAULTRMP".utf8)
            if epoch == 0, bytes.starts(with: legacy), bytes.count > 8 + HistoryFormat.nonceSize,
                let p = XChaCha20Poly1305.open(
                    Array(bytes[(8 + HistoryFormat.nonceSize)...]), ad: legacy + Array(vaultID.utf8),
                    nonce: Array(bytes[8..<8 + HistoryFormat.nonceSize]), key: key)
            {
                plain = p
            } else {
                plain = try SealedState.open(
                    bytes, purpose: .pendingRemoval, role: VaultFile.pendingRemoval.name, keys: epochKeys,
                    vaultID: vaultID,
                    what: "remove.pending")
            }
            guard let documents = try? JSONDecoder().decode([HistoryRecord.Document].self, from: Data(plain)) else {
                return (nil, VaultError(.vaultDamaged, "remove.pending is malformed"))
            }
            return (documents, nil)
        } catch {
            return (nil, VaultError.from(error))
        }
    }

    /// The documents of a removal that was interrupted, if `remove.pending` authenticates.
    func pendingRemoval() -> [HistoryRecord.Document]? { pendingRemovalState().documents }
}
