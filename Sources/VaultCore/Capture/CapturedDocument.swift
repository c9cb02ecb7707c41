import Crypto
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A document of a capture-only station (``Vault/captureRecipients``): sealed to the office's
/// age recipients as it is read, into two age v1 files that age itself opens — its data, and its
/// metadata (the sealed payload's `{"Id":…,"Name":…,"ContentType":…,"Size":…,"SHA256":…}`,
/// docs/EXPORT.md) — whose file keys are never written anywhere. Once sealed, nothing the
/// station holds opens either.
///
/// What the station keeps of it, under its own password (its ``DocumentRecord``): the id, the
/// time added, the name (or ``sealedName``), the type ``contentType``, and the size and digest of
/// the sealed pair (``digest(metadata:data:)``), which is what it delivers and what receipts prove.
package enum CapturedDocument {
    /// The content type a station's record gives a captured document (its own is sealed).
    package static let contentType = "application/age-encryption"
    /// The name a station's record gives a document captured with its name sealed.
    package static let sealedName = "(sealed)"

    /// The metadata file beside `<id>.vlt` in `objects/`.
    package static func metadataFileName(_ id: DocumentID) -> String { "\(id.hex).meta.vlt" }

    /// The first bytes of a metadata file.
    static let magic = Array("VAULTCAP".utf8)
    static let version: UInt8 = 1
    /// The most bytes a metadata file may have (a record and a metadata age file to at most 20
    /// hybrid recipients are far less).
    static let maxFileSize = 1 << 20
    /// The most bytes a metadata age file may have (what a receiver takes of one): half a
    /// metadata file's, so that the record and its framing always fit beside it.
    package static let maxMetadataFileBytes = maxFileSize / 2

    /// A metadata file: ``magic``, ``version``, the length of the station's record (4 bytes,
    /// big-endian), the record sealed under the vault key (what makes the captured document the
    /// station's: it authenticates, as an envelope's header does), then the metadata age file.
    static func metadataFile(sealedRecord: [UInt8], metadata: [UInt8]) -> [UInt8] {
        var out = magic + [version]
        let n = UInt32(sealedRecord.count)
        out += (0..<4).map { UInt8(truncatingIfNeeded: n >> (24 - 8 * UInt32($0))) }
        return out + sealedRecord + metadata
    }

    /// The sealed record and the metadata age file of a metadata file; nil when it is not one.
    static func parts(of file: [UInt8]) -> (sealedRecord: [UInt8], metadata: [UInt8])? {
        let fixed = magic.count + 1 + 4
        guard file.count > fixed, Array(file[0..<magic.count]) == magic, file[magic.count] == version else {
            return nil
        }
        let n = file[(magic.count + 1)..<fixed].reduce(0) { $0 << 8 | Int($1) }
        guard n > 0, fixed + n < file.count else { return nil }
        return (Array(file[fixed..<(fixed + n)]), Array(file[(fixed + n)...]))
    }

    /// The refusal of anything that needs a captured document's contents on the station.
    package static func refusal(
        _ what: String = "its documents cannot be opened here",
        hint: String = "the office opens them with its identity once they are delivered"
    ) -> VaultError {
        VaultError(
            .usage,
            "this is a capture-only station: \(what) (each document is sealed to the office's recipients as it is "
                + "added, and nothing this vault holds opens it)",
            hint: hint)
    }

    /// The refusal of an office's command that would open document `id` without the identity:
    /// it came captured, sealed to the office's recipients, and is kept so.
    package static func sealedAtOffice(_ id: DocumentID) -> VaultError {
        VaultError(
            .usage,
            "it came sealed to the office's recipients (from a capture-only station, or taken without the "
                + "identity) and is kept sealed: it opens with the office's identity",
            remedy: .openWithIdentity)
    }

    /// The digest a station keeps and a receiver signs for: SHA-256 of the data file, the
    /// metadata file and the metadata file's length (8 bytes, big-endian), given the digest of
    /// the data file so far. The length makes the boundary part of what is hashed, so no byte can
    /// move from one file to the other unseen; it comes last so that the data, sealed first, is
    /// hashed as it is written.
    package static func digest(data: SHA256, metadata: [UInt8]) -> [UInt8] {
        var hash = data
        hash.update(data: metadata)
        hash.update(data: (0..<8).map { UInt8(truncatingIfNeeded: UInt64(metadata.count) >> (56 - 8 * $0)) })
        return Array(hash.finalize())
    }

    /// What sealing one document gives: the record the station keeps, and the two staged files.
    package struct Sealed {
        package let record: DocumentRecord
        package let data: AtomicFile
        package let metadata: AtomicFile
    }

    /// Seals everything `input` yields for the recipients of `keyings`, streaming (memory flat
    /// whatever its size; the size need not be known: one batch is read ahead to find the final
    /// chunk).
    /// - Parameters:
    ///   - contentType: the document's type, or nil to detect it from its first bytes and name.
    ///   - keepName: false keeps ``sealedName`` in the station's record (names sealed too).
    static func seal(
        _ input: any ByteSource, name: String, contentType: String?, tags: [String], keepName: Bool, now: Date,
        workspace: Workspace, sealRecord: (DocumentRecord) throws -> [UInt8], progress: ((UInt64) -> Void)?
    ) throws -> Sealed {
        let name = DocumentName.normalized(name)
        let staged = try workspace.staged.next()
        let id = staged.id
        let sealing = PayloadSealing(recipients: workspace.recipients, keyings: workspace.keyings)
        let data = try sealData(
            input, keying: sealing.keying(.data(id)), through: workspace.buffers, into: staged.data.file, name: name,
            contentType: contentType, progress: progress)
        // What the office will read is checked as any document's metadata is, before it is sealed.
        try DocumentMetadata(
            name: name, contentType: data.type, size: data.size, sha256: data.sha256, addedAtMillis: 0, tags: tags
        ).validate()
        let metadata = sealing.sealWhole(
            PayloadSealing.padded(
                PayloadSealing.metadataJSON(
                    id: id, name: name, contentType: data.type, size: data.size, sha256: data.sha256, tags: tags)),
            slot: .metadata(id))
        let record = DocumentRecord(
            id: id,
            metadata: DocumentMetadata(
                name: keepName ? name : sealedName, contentType: Self.contentType,
                size: UInt64(metadata.count) + data.sealedSize,
                sha256: digest(data: data.sealedDigest, metadata: metadata),
                addedAtMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), tags: []))
        try record.metadata.validate()
        try staged.metadata.file.write(Self.metadataFile(sealedRecord: try sealRecord(record), metadata: metadata))
        return Sealed(record: record, data: staged.data, metadata: staged.metadata)
    }

    /// What sealing a document's bytes came to.
    private struct SealedData {
        /// Its content type (given, or detected from its first bytes and name).
        var type: String
        /// Its size and SHA-256.
        var size: UInt64
        var sha256: [UInt8]
        /// The data file's length, and the digest of its bytes so far (``digest(data:metadata:)``).
        var sealedSize: UInt64
        var sealedDigest: SHA256
    }

    /// Seals `input` into `file` as an age file under `keying`, 16 chunks at a time on every core,
    /// hashing the bytes read and the bytes written as they go: while a batch's chunks are sealed
    /// (one job each, on every core), its plaintext is hashed, the batch before's sealed bytes
    /// hashed and written, and the batch after next read, so the two digests, the disk and the
    /// input cost the cores' spare time.
    private static func sealData(
        _ input: any ByteSource, keying: AgeFileKeying, through space: Buffers, into file: OpenFile, name: String,
        contentType: String?, progress: ((UInt64) -> Void)?
    ) throws -> SealedData {
        let cipher = AgeChunkCipher(
            payloadKey: try AgeFileKeying.payloadKey(fileKey: keying.fileKey, nonce: keying.nonce),
            threads: Parallelism.allCores)
        let batch = space.batch
        defer { space.wipe() }
        let (buffers, outs) = (space.plain, space.sealed)
        var current = 0
        var count = try input.readFully(into: buffers[0])
        // A full batch may be the last: only the next read tells.
        var following = count == batch ? try input.readFully(into: buffers[1]) : 0
        (space.used[0], space.used[1]) = (count, following)
        let type =
            contentType
            ?? ContentType.detect(UnsafeRawBufferPointer(rebasing: buffers[0][0..<count]), name: name)
        var plainDigest = SHA256(), sealedDigest = SHA256()
        sealedDigest.update(data: keying.prefix)
        // Written back as it grows, as an envelope is (``SequentialFileOutput``): the closing
        // fsync then has little left to do.
        let output = SequentialFileOutput(file: file)
        try keying.prefix.withUnsafeBytes { try output.append($0) }
        var sealedSize = UInt64(keying.prefix.count), chunk: UInt64 = 0, plain: UInt64 = 0
        // The sealed bytes of the batch before (in `outs[1 - side]`), still to hash and write.
        var pending = 0, side = 0
        var failure: (any Error)?
        while true {
            let piece = UnsafeRawBufferPointer(rebasing: buffers[current][0..<count])
            let chunks = max(1, (count + AgeFormat.chunkSize - 1) / AgeFormat.chunkSize)
            let out = outs[side], before = UnsafeRawBufferPointer(rebasing: outs[1 - side][0..<pending])
            let final = following == 0, first = chunk
            let ahead = buffers[(current + 2) % 3], readsAhead = following == batch
            var read = 0
            let job = { (j: Int) in
                switch j {
                case 0: plainDigest.update(bufferPointer: piece)
                case 1:
                    guard !before.isEmpty else { return }
                    sealedDigest.update(bufferPointer: before)
                    do { try output.append(before) } catch { failure = error }
                case 2:
                    guard readsAhead else { return }
                    do { read = try input.readFully(into: ahead) } catch { failure = error }
                default:
                    let i = j - 3, cs = AgeFormat.chunkSize, ss = cs + AgeFormat.tagSize
                    let p = UnsafeRawBufferPointer(rebasing: piece[(i * cs)..<min((i + 1) * cs, count)])
                    let into = UnsafeMutableRawBufferPointer(
                        rebasing: out[(i * ss)..<(i * ss + p.count + AgeFormat.tagSize)])
                    cipher.seal(p, index: first + UInt64(i), last: final && i == chunks - 1, into: into)
                }
            }
            if chunks == 1 && before.isEmpty && !readsAhead {
                // A small document whole: waking other threads would cost more than the work.
                for j in 0..<4 { job(j) }
            } else {
                withoutActuallyEscaping(job) { job in
                    let work = UncheckedSendable(job)
                    DispatchQueue.concurrentPerform(iterations: 3 + chunks) { work.value($0) }
                }
            }
            if let failure { throw failure }
            space.used[(current + 2) % 3] = max(space.used[(current + 2) % 3], read)
            pending = count + chunks * AgeFormat.tagSize
            sealedSize += UInt64(pending)
            plain += UInt64(count)
            progress?(plain)
            chunk += UInt64(chunks)
            if final { break }
            (current, count, following, side) = ((current + 1) % 3, following, read, 1 - side)
        }
        let last = UnsafeRawBufferPointer(rebasing: outs[side][0..<pending])
        sealedDigest.update(bufferPointer: last)
        try output.append(last)
        return SealedData(
            type: type, size: plain, sha256: Array(plainDigest.finalize()), sealedSize: sealedSize,
            sealedDigest: sealedDigest)
    }
}

extension Vault {
    /// `record` sealed under the vault key for its captured document's metadata file.
    func sealCapturedRecord(_ record: DocumentRecord) throws -> [UInt8] {
        try sealCapturedRecord(record, keys: keys)
    }

    /// `record` sealed under `keys` (a password change's new ones) for its metadata file.
    func sealCapturedRecord(_ record: DocumentRecord, keys: EpochKeys) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return try SealedState.seal(
            Array(try e.encode(record)), purpose: .capturedRecord,
            role: "objects/" + CapturedDocument.metadataFileName(record.id), keys: keys, vaultID: config.id,
            random: random)
    }

    /// Whether document `id` is kept as a captured pair (a capture-only station's every document;
    /// at an office, one that came from such a station): its metadata file is there. Such a file
    /// authenticates under the vault key for its id only, so nobody without the password makes
    /// an envelope look captured.
    package func holdsCaptured(_ id: DocumentID) -> Bool {
        if capturesOnly { return true }
        if let source = store.source { return source.holdsCaptured(id) }
        return FileSystem.kind(of: store.capturedMetadataPath(id), following: false) != .missing
    }

    /// What the vault knows of document `id` from its object alone, authenticated under the
    /// vault key: an envelope's header, or a captured document's sealed record.
    func storedRecord(_ id: DocumentID) throws -> DocumentRecord {
        guard holdsCaptured(id) else {
            let reader = try openEnvelope(id, threads: 1, batching: ChunkBatching(chunks: 1), readAhead: false)
            return DocumentRecord(id: id, metadata: reader.metadata)
        }
        return try capturedMetadata(id).record
    }

    /// Captured document `id`'s metadata file, read once: the record it holds (authenticated
    /// under the vault key), its metadata age file, and the bytes before that (the sealed record
    /// with its framing, which a password change rewrites).
    func capturedMetadata(_ id: DocumentID) throws -> (record: DocumentRecord, metadata: [UInt8], head: [UInt8]) {
        let what = "objects/" + CapturedDocument.metadataFileName(id)
        let bytes: [UInt8]
        do {
            bytes =
                try store.source?.capturedMetadata(id, limit: CapturedDocument.maxFileSize)
                ?? FileSystem.readFile(store.capturedMetadataPath(id), limit: CapturedDocument.maxFileSize)
        } catch let e as VaultError where e.code == .notFound {
            throw VaultError(.notFound, "its metadata file \(what) is missing")
        }
        guard let parts = CapturedDocument.parts(of: bytes) else {
            throw VaultError(.vaultDamaged, "\(what) is not a captured document's metadata file")
        }
        let plain = try openState(parts.sealedRecord, purpose: .capturedRecord, role: what, what: what)
        guard let record = try? JSONDecoder().decode(DocumentRecord.self, from: Data(plain)), record.id == id else {
            throw VaultError(.vaultDamaged, "\(what) holds another document's record")
        }
        return (record, parts.metadata, Array(bytes.prefix(bytes.count - parts.metadata.count)))
    }
}

extension CapturedDocument {
    /// The stanza types an age file of a sealed document may have: X25519 and the hybrid.
    static let stanzaTypes: Set<String> = ["X25519", "mlkem768x25519"]

    /// What an age file's header says without a key, from the file's first bytes: its length
    /// and its stanzas' types, in order; nil when `bytes` ends inside the header and
    /// `complete` is false (read more and ask again).
    /// - Throws: ``VaultError/Code/vaultDamaged`` (naming `what`) for a header that is not
    ///   age's, or holds a stanza of another type than a sealed document's (``stanzaTypes``).
    package static func headerStanzas(
        _ bytes: UnsafeRawBufferPointer, complete: Bool, what: String
    ) throws -> (length: Int, types: [String])? {
        let header: AgeHeader?
        do { header = try AgeHeader.parse(bytes, complete: complete) } catch {
            throw VaultError(.vaultDamaged, "\(what) is not an age file: \(error)")
        }
        guard let header else {
            if complete { throw VaultError(.vaultDamaged, "\(what) ends inside its age header") }
            return nil
        }
        let types = header.stanzas.map(\.type)
        guard !types.isEmpty, types.allSatisfy(stanzaTypes.contains) else {
            throw VaultError(.vaultDamaged, "\(what) is not sealed to age recipients vault seals to")
        }
        return (header.length, types)
    }

    /// The stanza types a file sealed to `recipients` has, in order.
    static func stanzaTypes(of recipients: [AgeRecipient]) -> [String] {
        recipients.map { r -> String in
            switch r {
            case .x25519: "X25519"
            case .hybrid: "mlkem768x25519"
            }
        }
    }

    /// Checks what an age file's header says without a key: its grammar, and one stanza for each
    /// of `recipients`, of its type (`X25519`, `mlkem768x25519`), in order; with no recipients
    /// (the office's, unknown to a receiver without its identity), stanzas of those types.
    /// - Returns: the header's length.
    static func checkHeader(_ file: UnsafeRawBufferPointer, recipients: [AgeRecipient]?, what: String) throws -> Int {
        let header = try headerStanzas(file, complete: true, what: what)!
        if let recipients, header.types != stanzaTypes(of: recipients) {
            throw VaultError(
                .vaultDamaged, "\(what) is not sealed to this station's recipients (its header's stanzas differ)")
        }
        return header.length
    }
}

extension Vault {
    /// Checks captured document `id` as far as a capture-only station can: its record
    /// authenticates under the vault key; both files are age files whose headers name the
    /// station's recipients; their sizes and digest (``CapturedDocument/digest(data:metadata:)``)
    /// are the record's. Reads the data file once, in 1 MiB pieces.
    /// - Returns: the record.
    package func checkCaptured(_ id: DocumentID, progress: ((UInt64) -> Void)? = nil) throws -> DocumentRecord {
        let recipients = captureRecipients
        let (record, metadata, _) = try capturedMetadata(id)
        let metadataName = "objects/" + CapturedDocument.metadataFileName(id)
        _ = try metadata.withUnsafeBytes {
            try CapturedDocument.checkHeader($0, recipients: recipients, what: metadataName + "'s metadata")
        }
        let file = try CapturedDataFile(vault: self, id: id)
        defer { file.close() }
        try Self.checkCapturedData(
            file, record: record, metadata: metadata, recipients: recipients, what: "objects/\(id.hex).vlt",
            progress: progress)
        return record
    }

    /// Reads the data file of captured document `record` from `file` once, in 1 MiB pieces: an age
    /// file whose header names `recipients` (any recipients vault seals to, when nil), and with
    /// `metadata` the pair the record names.
    static func checkCapturedData(
        _ file: some ByteSource, record: DocumentRecord, metadata: [UInt8], recipients: [AgeRecipient]?, what: String,
        progress: ((UInt64) -> Void)? = nil
    ) throws {
        let id = record.id
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        var digest = SHA256()
        var size: UInt64 = 0
        while true {
            let n = try file.read(into: buffer)
            if n == 0 { break }
            let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            if size == 0 { _ = try CapturedDocument.checkHeader(piece, recipients: recipients, what: what) }
            digest.update(bufferPointer: piece)
            size += UInt64(n)
            progress?(size)
        }
        guard size + UInt64(metadata.count) == record.metadata.size,
              CapturedDocument.digest(data: digest, metadata: metadata) == record.metadata.sha256
        else {
            throw VaultError(
                .vaultDamaged, "\(id.hex): its sealed files are not those captured (their size or SHA-256 differs)")
        }
    }
}

extension Vault {
    /// Removes the metadata files whose data file is not there (an add killed between the two
    /// renames, or a file someone put there): they name nothing, and may hold a name. Called
    /// holding the writer lock, under which an add renames both.
    func sweepLoneCapturedMetadata() {
        guard let names = try? FileSystem.list(store.objectsPath) else { return }
        for name in names where name.hasSuffix(".meta.vlt") {
            guard let id = DocumentID(hex: String(name.dropLast(".meta.vlt".count))),
                FileSystem.kind(of: store.objectPath(id), following: false) == .missing
            else { continue }
            try? FileSystem.remove(store.capturedMetadataPath(id))
        }
    }
}

/// A captured document's data file, read front to back: a file in `objects/`, or the store's
/// object read in place (``ObjectSource``).
final class CapturedDataFile: ByteSource {
    private let input: any EnvelopeInput
    private let file: OpenFile?

    /// Document `id`'s data file, opened.
    /// - Throws: ``VaultError/Code/notFound`` when it is not there.
    init(vault: Vault, id: DocumentID) throws {
        if let source = vault.store.source {
            input = try source.input(for: id, sequential: true)
            file = nil
            return
        }
        do {
            let f = try OpenFile.openStored(vault.store.objectPath(id))
            (input, file) = (f, f)
        } catch let e as VaultError where e.code == .notFound {
            throw VaultError(.notFound, "document \(id.hex): its data file objects/\(id.hex).vlt is missing")
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try input.read(into: buffer) }

    /// Goes back to byte `offset`.
    func seek(to offset: UInt64) throws { try input.seek(to: offset) }

    func close() { file?.close() }
}
