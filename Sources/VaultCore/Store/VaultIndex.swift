import Foundation

/// The encrypted index (`index.vlt`): every document's record, so `list` need not open every
/// envelope. A cache: the objects are the truth, and the index is rebuilt from them when it is
/// missing, damaged or names a different set of documents.
struct VaultIndex {
    private static let magic = Array("VAULTIDX".utf8)
    var records: [DocumentID: DocumentRecord]

    private static func ad(vaultID: String) -> [UInt8] { magic + Array(vaultID.utf8) }

    /// The sealed file contents: magic ‖ nonce ‖ XChaCha20-Poly1305(JSON of the records).
    func sealed(vaultKey: SecretBytes, vaultID: String, random: any RandomSource) -> [UInt8] {
        let list = Array(records.values).stableOrder()
        let json = Array(try! JSONEncoder().encode(list))
        let nonce = random.bytes(EnvelopeFormat.nonceSize)
        return Self.magic + nonce + XChaCha20Poly1305.seal(json, ad: Self.ad(vaultID: vaultID), nonce: nonce, key: vaultKey)
    }

    /// Opens a sealed index. Throws ``VaultError/Code/vaultDamaged`` if it does not authenticate.
    static func open(_ bytes: [UInt8], vaultKey: SecretBytes, vaultID: String) throws -> VaultIndex {
        let head = magic.count + EnvelopeFormat.nonceSize
        guard bytes.count >= head + EnvelopeFormat.tagSize, bytes.starts(with: magic) else {
            throw VaultError(.vaultDamaged, "the index is malformed")
        }
        let nonce = Array(bytes[magic.count..<head])
        guard let json = XChaCha20Poly1305.open(Array(bytes[head...]), ad: ad(vaultID: vaultID), nonce: nonce, key: vaultKey),
              let list = try? JSONDecoder().decode([DocumentRecord].self, from: Data(json)) else {
            throw VaultError(.vaultDamaged, "the index failed authentication")
        }
        return VaultIndex(records: Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }))
    }
}
