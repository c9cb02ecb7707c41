import Foundation

/// The encrypted index (`index.vlt`): every document's record, so `list` need not open every
/// envelope. A cache: the objects are the truth, and the index is rebuilt from them when it is
/// missing, damaged or names a different set of documents.
///
/// A sealed state file (purpose index, role `index.vlt`) whose body is the JSON array of the
/// records. The format before sealed state (`VAULTIDX` ‖ nonce ‖ seal under the vault key
/// itself) is still read in key epoch 0, so an index written by an earlier version is not
/// rebuilt needlessly; it is rewritten in the new format by the next change.
struct VaultIndex {
    private static let legacyMagic = Array("VAULTIDX".utf8)
    static let role = "index.vlt"
    var records: [DocumentID: DocumentRecord]

    /// The sealed file contents.
    func sealed(keys: EpochKeys, vaultID: String, random: any RandomSource) throws -> [UInt8] {
        let list = Array(records.values).stableOrder()
        let json = Array(try JSONEncoder().encode(list))
        return try SealedState.seal(json, purpose: .index, role: Self.role, keys: keys, vaultID: vaultID, random: random)
    }

    /// Opens a sealed index. Throws ``VaultError/Code/vaultDamaged`` if it does not authenticate.
    static func open(_ bytes: [UInt8], keys: EpochKeys, vaultID: String) throws -> VaultIndex {
        let json: [UInt8]
        if keys.epoch == 0, bytes.starts(with: legacyMagic) {
            json = try openLegacy(bytes, vaultKey: keys.current, vaultID: vaultID)
        } else {
            json = try SealedState.open(bytes, purpose: .index, role: role, keys: keys, vaultID: vaultID, what: "the index")
        }
        guard let list = try? JSONDecoder().decode([DocumentRecord].self, from: Data(json)) else {
            throw VaultError(.vaultDamaged, "the index is malformed")
        }
        return VaultIndex(records: Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }))
    }

    private static func openLegacy(_ bytes: [UInt8], vaultKey: SecretBytes, vaultID: String) throws -> [UInt8] {
        let head = legacyMagic.count + EnvelopeFormat.nonceSize
        guard bytes.count >= head + EnvelopeFormat.tagSize,
              let json = XChaCha20Poly1305.open(Array(bytes[head...]), ad: legacyMagic + Array(vaultID.utf8),
                                                nonce: Array(bytes[legacyMagic.count..<head]), key: vaultKey) else {
            throw VaultError(.vaultDamaged, "the index failed authentication")
        }
        return json
    }
}
