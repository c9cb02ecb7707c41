import Crypto

/// The payload a capture-only station sends (docs/EXPORT.md, "Captured payloads"): each
/// document's two age files as they were sealed at capture, never opened or sealed again, with
/// the size and SHA-256 of the pair (``CapturedDocument/digest(data:metadata:)``) outside the
/// encryption, which is what the receiver checks and signs for:
///
/// `{"Captured":"age-encryption.org/v1","Files":[{"Id":…,"Size":n,"SHA256":…,"Metadata":…,"Data":…},…]}`
///
/// Every byte follows from the records and the metadata files' lengths (read once, when the
/// format is made), so a batch's length is known before its first byte, as for any payload.
package struct CapturedFiles: Sendable {
    /// The length of each document's metadata age file.
    package let metadataLengths: [DocumentID: Int]
    /// The framing the files go in raw (a form), or nil for the captured JSON payload.
    package private(set) var framing: (any RawFraming)?

    /// The lengths of `records`' metadata files, each read and its record authenticated. A file
    /// that does not read is left out: its document fails when the producer reaches it, with the
    /// reason, as a damaged envelope does (and an upload that skips damaged documents goes on
    /// without it).
    package init(vault: Vault, records: [DocumentRecord]) {
        var lengths: [DocumentID: Int] = [:]
        for r in records {
            if let n = try? vault.capturedMetadata(r.id).metadata.count { lengths[r.id] = n }
        }
        metadataLengths = lengths
    }

    /// The length of `record`'s data file: the pair's, less its metadata file's.
    func dataFileLength(_ record: DocumentRecord) -> UInt64 {
        record.metadata.size - UInt64(metadataLengths[record.id] ?? 0)
    }

    /// The framing of the entries.
    static let open = Array("{\"Captured\":\"\(PayloadSealing.format)\",\"Files\":[".utf8)
    static func idPrefix(_ record: DocumentRecord) -> [UInt8] {
        Array(
            ("{\"Id\":\"\(record.id.hex)\",\"Size\":\(record.metadata.size),"
                + "\"SHA256\":\"\(Hex.encode(record.metadata.sha256))\",\"Metadata\":\"").utf8)
    }

    /// The same files, sent raw in `framing` (nil: in the captured JSON payload).
    package func framed(_ framing: (any RawFraming)?) -> CapturedFiles {
        var c = self
        c.framing = framing
        return c
    }

    /// A document's head, given its metadata age file (in JSON, the separator first, but for
    /// the first).
    func head(_ record: DocumentRecord, metadata: [UInt8], first: Bool) -> [UInt8] {
        if let framing { return framing.capturedHead(record, metadata: metadata) }
        return (first ? [] : [PayloadFraming.separator]) + Self.idPrefix(record) + Base64.encode(metadata)
            + SealedEntry.dataPrefix
    }

    func headLength(_ record: DocumentRecord, first: Bool) -> Int {
        let metadata = metadataLengths[record.id] ?? 0
        if let framing { return framing.capturedHead(record, metadata: []).count + metadata }
        return (first ? 0 : 1) + Self.idPrefix(record).count + Int(Base64.encodedLength(UInt64(metadata)))
            + SealedEntry.dataPrefix.count
    }
}

/// The bytes of a captured document's data file, batch by batch, for a payload: read as they
/// are (nothing is opened) and hashed, so that when the file ends its length and the digest of
/// the pair are checked against the station's record before the document is counted as sent.
/// A file changed since it was sealed is a ``VaultError/Code/vaultDamaged`` failure of that
/// document, and a receiver, which checks the same digest, refuses the batch that carried it.
final class CapturedDataReader: PayloadDocumentReader {
    private let file: CapturedDataFile
    private let record: DocumentRecord
    private let metadata: [UInt8]
    private let buffer: UnsafeMutableRawBufferPointer
    private var digest = SHA256()
    private var size: UInt64 = 0
    private let expected: UInt64
    private var finished = false
    private(set) var openedChunks: UInt64 = 0
    /// Never called: nothing is sealed from a captured file.
    var onChunk: ((Int, UnsafeRawBufferPointer) -> Void)?

    /// A reader of `record`'s data file from byte `start` (a multiple of `batchBytes`; the bytes
    /// before are hashed, not handed out), in pieces of `batchBytes`. Its last piece is handed out
    /// only once the pair checked; with `verifyFirst`, the whole file is read and checked through
    /// the same descriptor before the first piece (a reader that must not hand out a byte of a
    /// file put in the document's place: an operator's download).
    init(
        vault: Vault, record: DocumentRecord, metadata: [UInt8], start: UInt64, batchBytes: Int,
        verifyFirst: Bool = false
    ) throws {
        self.record = record
        self.metadata = metadata
        expected = record.metadata.size - UInt64(metadata.count)
        file = try CapturedDataFile(vault: vault, id: record.id)
        buffer = .allocate(byteCount: batchBytes, alignment: 64)
        if verifyFirst {
            var whole = SHA256(), length: UInt64 = 0
            while true {
                let n = try file.read(into: buffer)
                if n == 0 { break }
                whole.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                length += UInt64(n)
            }
            guard length == expected, CapturedDocument.digest(data: whole, metadata: metadata) == record.metadata.sha256
            else { throw changed() }
            try file.seek(to: 0)
        }
        while size < start {
            let want = Int(min(UInt64(batchBytes), start - size))
            let n = try file.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            guard n == want else { throw changed() }
            digest.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            size += UInt64(n)
        }
    }

    deinit {
        file.close()
        buffer.deallocate()
    }

    private func changed() -> VaultError {
        VaultError(
            .vaultDamaged,
            "document \(record.id): its sealed files are not those captured (their size or SHA-256 differs)")
    }

    func next() throws -> UnsafeRawBufferPointer? {
        guard !finished else { return nil }
        let n = try file.readFully(into: buffer)
        size += UInt64(n)
        guard size <= expected else { throw changed() }
        if n == 0 {
            finished = true
            guard size == expected, checked || pairMatches else { throw changed() }
            return nil
        }
        let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
        digest.update(bufferPointer: piece)
        openedChunks += 1
        // The last piece goes out only once the pair is the record's: a consumer that declared
        // the length (a response, a payload) then ends short of it.
        if size == expected {
            guard pairMatches else { throw changed() }
            checked = true
        }
        return piece
    }

    /// Whether the bytes read so far and the metadata file are the pair the record names.
    private var pairMatches: Bool {
        CapturedDocument.digest(data: digest, metadata: metadata) == record.metadata.sha256
    }
    private var checked = false
}

/// What a payload producer reads a document's bytes from: an envelope (decrypted as each chunk
/// authenticates) or a captured document's data file (as it is).
protocol PayloadDocumentReader: AnyObject {
    /// The next batch of the document's bytes (valid until the next call), or nil at its end.
    func next() throws -> UnsafeRawBufferPointer?
    /// Chunks (or batches) read so far.
    var openedChunks: UInt64 { get }
    /// A job run on each chunk as it authenticates (sealing it where it is decrypted).
    var onChunk: ((Int, UnsafeRawBufferPointer) -> Void)? { get set }
}

extension EnvelopeReader: PayloadDocumentReader {}

extension Vault {
    /// Captured document `id`'s data file as it is kept, to hand on sealed (an operator's `.age`
    /// download): its length, and its bytes piece by piece, the last call checking the pair
    /// against the vault's record (a file put in its place fails there, after its bytes: a
    /// caller streams into a response whose length it declared, which then ends short).
    package func capturedData(_ id: DocumentID) throws -> (length: UInt64, next: () throws -> UnsafeRawBufferPointer?) {
        let stored = try capturedMetadata(id)
        let reader = try CapturedDataReader(
            vault: self, record: stored.record, metadata: stored.metadata, start: 0, batchBytes: 1 << 20,
            verifyFirst: true)
        return (stored.record.metadata.size - UInt64(stored.metadata.count), reader.next)
    }
}

extension Vault {
    /// Captured document `id`'s metadata age file as it came (an operator's `.meta.age`
    /// download), once the pair was checked against the vault's record (its data file read and
    /// hashed): a file put in its place is refused, not handed out.
    package func capturedMetadataFile(_ id: DocumentID) throws -> [UInt8] {
        let stored = try capturedMetadata(id)
        let reader = try CapturedDataReader(
            vault: self, record: stored.record, metadata: stored.metadata, start: 0, batchBytes: 1 << 20)
        while try reader.next() != nil {}
        return stored.metadata
    }
}

extension Vault {
    /// The length of captured document `id`'s data file, as its record and metadata file say.
    package func capturedDataLength(_ id: DocumentID) throws -> UInt64 {
        let stored = try capturedMetadata(id)
        return stored.record.metadata.size - UInt64(stored.metadata.count)
    }
}
