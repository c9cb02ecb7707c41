#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The index of the versions before `index.db` (`index.vlt`): every document's record in one
/// sealed blob. Only read, once, when `index.db` is made, so that its records need not be read
/// again from the envelopes (``Vault/rebuildIndex(_:known:)``); then deleted.
///
/// A sealed state file (purpose index, role `index.vlt`) whose body is the JSON array of the
/// records. The format before sealed state (`VAULTIDX` ‖ nonce ‖ seal under the vault key
/// itself) is read too, in key epoch 0.
struct VaultIndex {
    private static let legacyMagic = Array("VAULTIDX".utf8)
    static let role = "index.vlt"
    var records: [DocumentID: DocumentRecord]

    /// Opens a sealed index. Throws ``VaultError/Code/vaultDamaged`` if it does not authenticate.
    static func open(_ bytes: [UInt8], keys: EpochKeys, vaultID: String) throws -> VaultIndex {
        let json: [UInt8]
        if keys.epoch == 0, bytes.starts(with: legacyMagic) {
            json = try openLegacy(bytes, vaultKey: keys.current, vaultID: vaultID)
        } else {
            json = try SealedState.open(
                bytes, purpose: .index, role: role, keys: keys, vaultID: vaultID, what: "the index")
        }
        guard let list = try? JSONDecoder().decode([DocumentRecord].self, from: Data(json)) else {
            throw VaultError(.vaultDamaged, "the index is malformed")
        }
        return VaultIndex(records: Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }))
    }

    private static func openLegacy(_ bytes: [UInt8], vaultKey: SecretBytes, vaultID: String) throws -> [UInt8] {
        let head = legacyMagic.count + EnvelopeFormat.nonceSize
        guard bytes.count >= head + EnvelopeFormat.tagSize,
            let json = XChaCha20Poly1305.open(
                Array(bytes[head...]), ad: legacyMagic + Array(vaultID.utf8),
                nonce: Array(bytes[legacyMagic.count..<head]), key: vaultKey)
        else {
            throw VaultError(.vaultDamaged, "the index failed authentication")
        }
        return json
    }
}
