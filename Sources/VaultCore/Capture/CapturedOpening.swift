import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A captured document opened with the office's identity (at an office, to get or export it):
/// its metadata as the station captured it (name, type, size, SHA-256, tags), and
/// its plaintext, released as each age chunk authenticates.
///
/// What makes it the document the vault holds, and not one someone who knows the office's
/// recipients sealed and put in its place: the vault's record of it (sealed under the vault key,
/// ``Vault/capturedMetadata(_:)``) names the size and SHA-256 of the pair of files, and every
/// byte read of the data file is hashed; when the data ends, the pair must be the record's and
/// the plaintext the metadata's, or the read fails (``VaultError/Code/digestMismatch``). A
/// caller writes into a temporary file and keeps it only when the read ended without error.
package final class CapturedOpening {
    /// The vault's record of the document (its name `(sealed)` at an office).
    package let record: DocumentRecord
    /// The document as the station captured it: name, content type, size, SHA-256 and tags
    /// from its metadata file; the time is the vault's record's.
    package let metadata: DocumentMetadata
    private let reader: AgeReader
    private let source: HashingSource
    private let metadataFile: [UInt8]
    private var plainDigest = SHA256()
    private var plainSize: UInt64 = 0
    private let buffer: UnsafeMutableRawBufferPointer

    /// The metadata JSON of a captured document (docs/EXPORT.md, "Sealed payloads"; no proof).
    private struct Captured: Decodable {
        var Id: String, Name: String, ContentType: String, Size: UInt64, SHA256: String
        var Tags: [String]?
    }

    /// Chunks (pieces) read so far.
    private(set) var openedChunks: UInt64 = 0
    /// Never called: a captured document is not sealed again.
    var onChunk: ((Int, UnsafeRawBufferPointer) -> Void)?

    /// An age failure of a captured document as the vault's error: with no identity given that
    /// opens it, a remedy that names the identity to give.
    static func failure(_ f: AgeFailure, _ what: String) -> VaultError {
        var e = f.vaultError(what)
        if f.kind == .noMatch { e.remedy = .otherIdentity }
        return e
    }

    /// Captured document `id`'s record and metadata file, and the metadata the station sealed in
    /// it, opened with `identities` (nothing of the data file is read).
    static func metadata(
        vault: Vault, id: DocumentID, identities: [AgeIdentity]
    ) throws -> (stored: (record: DocumentRecord, metadata: [UInt8], head: [UInt8]), metadata: DocumentMetadata) {
        let stored = try vault.capturedMetadata(id)
        let plain: [UInt8]
        do {
            let r = try AgeReader(input: BytesSource(stored.metadata), identities: identities)
            var out = [UInt8](repeating: 0, count: CapturedDocument.maxFileSize)
            let n = try out.withUnsafeMutableBytes { try r.readFully(into: $0) }
            guard n < out.count else { throw VaultError(.vaultDamaged, "document \(id.hex)'s metadata is over 1 MiB") }
            plain = Array(out[..<n])
        } catch let f as AgeFailure {
            throw Self.failure(f, "document \(id.hex)'s metadata")
        }
        var json = plain[...]
        while json.last == 0x20 { json = json.dropLast() }
        guard let m = try? JSONDecoder().decode(Captured.self, from: Data(json)), let sha = Hex.decode(m.SHA256),
            sha.count == 32, DocumentID(hex: m.Id) != nil
        else { throw VaultError(.vaultDamaged, "document \(id.hex)'s metadata is not a captured document's") }
        let metadata = DocumentMetadata(
            name: m.Name, contentType: m.ContentType, size: m.Size, sha256: sha,
            addedAtMillis: stored.record.metadata.addedAtMillis, tags: m.Tags ?? [])
        do { try metadata.validate() } catch {
            // What the station sealed is not a document vault keeps (no receiver could check it).
            throw VaultError(
                .vaultDamaged,
                "document \(id.hex): the metadata the station sealed is not a document's: "
                    + VaultError.from(error).message)
        }
        return (stored, metadata)
    }

    /// - Parameter batchBytes: the plaintext handed out per call (the last may be less): a
    ///   multiple of 3 for a producer that encodes base64 in parallel.
    init(vault: Vault, id: DocumentID, identities: [AgeIdentity], batchBytes: Int = 3 << 18) throws {
        let (stored, metadata) = try Self.metadata(vault: vault, id: id, identities: identities)
        record = stored.record
        metadataFile = stored.metadata
        self.metadata = metadata
        let file = try CapturedDataFile(vault: vault, id: id)
        // The pair is checked whole before any plaintext is released, through this descriptor
        // (a file put in the document's place opens with the office's identity too: nothing of
        // it must reach a pipe); the read that follows is hashed and checked again at its end.
        do {
            var whole = SHA256(), length: UInt64 = 0
            var piece = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = try piece.withUnsafeMutableBytes { try file.read(into: $0) }
                if n == 0 { break }
                whole.update(data: piece[..<n])
                length += UInt64(n)
            }
            guard length + UInt64(stored.metadata.count) == stored.record.metadata.size,
                CapturedDocument.digest(data: whole, metadata: stored.metadata) == stored.record.metadata.sha256
            else {
                throw VaultError(
                    .digestMismatch,
                    "document \(id.hex): its sealed files are not those received (their size or SHA-256 differs)")
            }
            try file.seek(to: 0)
        } catch {
            file.close()
            throw error
        }
        source = HashingSource(file)
        do {
            reader = try AgeReader(input: source, identities: identities)
        } catch let f as AgeFailure {
            file.close()
            throw Self.failure(f, "document \(id.hex)")
        }
        buffer = .allocate(byteCount: batchBytes, alignment: 64)
    }

    deinit {
        source.file.close()
        Sodium.wipe(buffer)
        buffer.deallocate()
    }

    /// The next piece of plaintext (valid until the next call), or nil at the end, once the
    /// pair and the plaintext were found to be what the record and the metadata name.
    package func next() throws -> UnsafeRawBufferPointer? {
        let n: Int
        do { n = try reader.readFully(into: buffer) } catch let f as AgeFailure {
            throw Self.failure(f, "document \(record.id.hex)")
        }
        if n == 0 {
            guard source.count + UInt64(metadataFile.count) == record.metadata.size,
                CapturedDocument.digest(data: source.digest, metadata: metadataFile) == record.metadata.sha256
            else {
                throw VaultError(
                    .digestMismatch,
                    "document \(record.id.hex): its sealed files are not those received "
                        + "(their size or SHA-256 differs)")
            }
            guard plainSize == metadata.size, Array(plainDigest.finalize()) == metadata.sha256 else {
                throw VaultError(
                    .digestMismatch,
                    "document \(record.id.hex): its data is not the size and SHA-256 its metadata names")
            }
            return nil
        }
        let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
        plainDigest.update(bufferPointer: piece)
        plainSize += UInt64(n)
        openedChunks += 1
        return piece
    }
}

/// A file read through, every byte hashed.
private final class HashingSource: ByteSource {
    let file: CapturedDataFile
    private(set) var digest = SHA256()
    private(set) var count: UInt64 = 0

    init(_ file: CapturedDataFile) { self.file = file }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try file.read(into: buffer)
        digest.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        count += UInt64(n)
        return n
    }
}

extension CapturedOpening: PayloadDocumentReader {}

extension Vault {
    /// `record` as an export or a `get` names it: as it is, or — a document that came captured —
    /// with the metadata the station captured, opened with `identities`.
    /// - Throws: ``VaultError/Code/usage`` for a captured document without identities.
    package func exported(_ record: DocumentRecord, identities: [AgeIdentity]) throws -> DocumentRecord {
        guard holdsCaptured(record.id) else { return record }
        guard !identities.isEmpty else {
            let e = CapturedDocument.sealedAtOffice(record.id)
            throw VaultError(e.code, "document \(record.id.hex): " + e.message, remedy: e.remedy)
        }
        // Its metadata alone: the data file is read when the document is.
        return DocumentRecord(
            id: record.id,
            metadata: try CapturedOpening.metadata(vault: self, id: record.id, identities: identities).metadata)
    }

    /// Opens captured document `id` with `identities` (the office's): see ``CapturedOpening``.
    /// - Throws: ``VaultError/Code/usage`` for a document that is not captured;
    ///   ``VaultError/Code/wrongPassword`` when no identity opens it.
    package func openCaptured(_ id: DocumentID, identities: [AgeIdentity]) throws -> CapturedOpening {
        guard holdsCaptured(id) else {
            throw VaultError(
                .usage, "document \(id.hex) is not a captured one: it opens with the vault's password alone")
        }
        return try CapturedOpening(vault: self, id: id, identities: identities)
    }
}
