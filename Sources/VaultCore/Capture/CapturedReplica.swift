#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Captured documents between a vault and its store (docs/REMOTE.md): a pair goes as two
/// objects, `objects/<id>.meta.vlt` before `objects/<id>.vlt`, and comes back only once its
/// record authenticates under this vault's key and the pair is what the record names.
extension Vault {
    /// Where captured document `id`'s metadata file is (to send it to a store).
    package func capturedMetadataPath(_ id: DocumentID) -> String { store.capturedMetadataPath(id) }

    /// A temporary file in `objects/` for a fetched captured document's metadata file.
    package func stagingCapturedMetadata(for id: DocumentID) throws -> AtomicFile {
        try AtomicFile(destination: store.capturedMetadataPath(id), staging: try store.staging(), random: random)
    }

    /// Takes a fetched captured pair into `objects/`: its metadata file's record must
    /// authenticate for `id` under this vault's key (or, with `retiredEpoch`, under that retired
    /// epoch's, and is then sealed again under the current one), its files must be age files vault
    /// seals, and the pair the size and SHA-256 the record names. The metadata file is linked
    /// first (a lone one is swept by the next command), then the data file. A damaged or foreign
    /// pair is discarded and the error thrown.
    package func acceptFetchedCaptured(
        data: AtomicFile, metadata: AtomicFile, id: DocumentID, retiredEpoch: UInt32? = nil
    ) throws -> DocumentRecord {
        let record: DocumentRecord
        do {
            record = try checkFetchedCaptured(data: data, metadata: metadata, id: id, retiredEpoch: retiredEpoch)
        } catch {
            data.discard()
            metadata.discard()
            var e = VaultError.from(error)
            if e.code == .wrongPassword {
                e = VaultError(.headerAuthenticationFailed, "it is not sealed under this vault's key")
            }
            throw e.context("document \(id)")
        }
        try metadata.commit(replace: false)
        do {
            try data.commit(replace: false)
        } catch {
            try? FileSystem.remove(store.capturedMetadataPath(id))
            throw error
        }
        return record
    }

    private func checkFetchedCaptured(
        data: AtomicFile, metadata: AtomicFile, id: DocumentID, retiredEpoch: UInt32?
    ) throws -> DocumentRecord {
        let what = "objects/" + CapturedDocument.metadataFileName(id)
        let bytes = try FileSystem.readFile(metadata.temporaryPath, limit: CapturedDocument.maxFileSize)
        guard let parts = CapturedDocument.parts(of: bytes) else {
            throw VaultError(.vaultDamaged, "\(what) is not a captured document's metadata file")
        }
        let opened = try openStateOfAnyEpoch(parts.sealedRecord, purpose: .capturedRecord, role: what, what: what)
        guard let plain = opened.body, opened.epoch == keys.epoch || opened.epoch == retiredEpoch else {
            throw VaultError(.vaultDamaged, "\(what) is sealed under a key epoch this vault does not take it from")
        }
        guard let record = try? JSONDecoder().decode(DocumentRecord.self, from: Data(plain)), record.id == id else {
            throw VaultError(.vaultDamaged, "\(what) holds another document's record")
        }
        _ = try parts.metadata.withUnsafeBytes {
            try CapturedDocument.checkHeader($0, recipients: nil, what: what + "'s metadata")
        }
        let input = try OpenFile.openForReading(data.temporaryPath)
        defer { input.close() }
        try Self.checkCapturedData(
            input, record: record, metadata: parts.metadata, recipients: nil, what: "objects/\(id.hex).vlt")
        if opened.epoch != keys.epoch {
            let resealed = CapturedDocument.metadataFile(
                sealedRecord: try sealCapturedRecord(record), metadata: parts.metadata)
            guard resealed.count == bytes.count else { throw VaultError(.internal, "a re-sealed record changed size") }
            let out = try OpenFile.openExisting(metadata.temporaryPath)
            defer { out.close() }
            try out.write(resealed, at: 0)
            try out.sync()
        }
        return record
    }
}
