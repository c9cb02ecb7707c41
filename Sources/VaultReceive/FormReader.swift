import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Reads a batch sent as `multipart/form-data` and gives the same document events as the JSON
/// payload's reader (``PayloadReader/Event``), so a receiver treats both alike.
///
/// - As vault's form upload sends it (docs/UPLOAD.md): text fields, a `manifest` part naming
///   each document (id, name, content type, size, SHA-256), then one file part per document in
///   the manifest's order. Each file part must have the size and SHA-256 its manifest entry
///   names; the manifest's names are the documents' names (file names are percent-encoded).
/// - As a browser or `curl` sends it, without a manifest: each file part is a document named by
///   its file name, its content type as given; its size and SHA-256 are what arrived.
///
/// - Sealed (docs/UPLOAD.md, "Sealed delivery"): the manifest part is `manifest.json.age` and
///   each file part `<id>.age`, age files that the receiver's identities open; each part's
///   plaintext is handed out chunk by chunk as it authenticates, and must match its entry.
///
/// - Captured (docs/UPLOAD.md, "From a capture-only station"): the manifest names each
///   document's id with the size and SHA-256 of its sealed pair, and each document comes as two
///   file parts, `<id>.meta.age` then `<id>.age`, the age files sealed at capture, kept as they
///   came and checked as far as they can be without a key (``CapturedPairCheck``).
///
/// Text fields are kept (``fields``), bounded. A file part before the manifest, a manifest that
/// is not vault's, and file parts that do not match it are refused.
package struct FormReader {
    /// The most bytes a manifest may take (20 documents take a few KiB).
    package static let maxManifestBytes = 1 << 20
    /// The most bytes a text field may take.
    package static let maxFieldBytes = 8 << 10

    /// The text fields read so far (name, value).
    package private(set) var fields: [(name: String, value: String)] = []

    private var parts: MultipartReader
    private let fileField: String?
    private let maxDocuments: Int
    private var manifest: [PayloadReader.Header]?
    private var documents = 0
    private let identities: [AgeIdentity]
    private let requireSealed: Bool
    /// True when the manifest came sealed: every document part must come sealed too.
    private(set) var sealed = false
    /// The current sealed part's opener.
    private var opener: AgeOpener?
    /// The file keys of the sealed document parts, in order (the sealed answer's key).
    package private(set) var fileKeys: [SecretBytes] = []
    /// True when the manifest is a capture-only station's: its documents are kept as they came.
    package private(set) var captured = false
    /// The current captured document's check, from its metadata part on.
    private var pair: CapturedPairCheck?
    private enum Current { case none, field(String), manifest, capturedMetadata, file(PayloadReader.Header) }
    /// The manifest's or the current field's bytes so far (kept apart from `current`, so an
    /// append never copies them).
    private var buffer: [UInt8] = []
    private var ids = Set<DocumentID>()
    private var current = Current.none
    private var size: UInt64 = 0
    private var digest = SHA256()
    /// Whether this reader hashes each document (the SHA-256 its `.end` event carries, checked
    /// against what the batch declares). A consumer that hashes what it is given anyway (the
    /// receiver's envelope writer) turns it off: each byte is then hashed once, and `.end`
    /// carries the declared SHA-256 (empty when none was), for the consumer to check.
    private let digests: Bool

    /// A reader of a form whose boundary is `boundary`, taking at most `maxDocuments` documents;
    /// with `fileField`, only parts of that name are documents (otherwise every part with a file
    /// name is).
    package init(
        boundary: String, fileField: String? = nil, maxDocuments: Int = BatchLimits().documents,
        identities: [AgeIdentity] = [], requireSealed: Bool = false, digests: Bool = true
    ) {
        self.digests = digests
        self.identities = identities
        self.requireSealed = requireSealed
        // The documents (two parts each when captured), a manifest and the 32 fields a form may have.
        parts = MultipartReader(boundary: boundary, maxParts: 2 * maxDocuments + 33)
        self.fileField = fileField
        self.maxDocuments = maxDocuments
    }

    /// Reads the next piece of the body, calling `handle` for what it completes.
    /// - Throws: what ``MultipartReader/read(_:_:)`` throws, `header-malformed` for a manifest
    ///   that is not vault's or file parts that do not match it, `digest-mismatch` for a file
    ///   whose size or SHA-256 is not its entry's; and whatever `handle` throws.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws {
        // The multipart reader is taken out while it calls back into this reader.
        // Swapped out, not copied: a copy would share its buffers, and the next append would copy
        // them.
        var reader = MultipartReader(boundary: "-")
        swap(&reader, &parts)
        defer { swap(&reader, &parts) }
        try reader.read(piece) { event in
            if case .data(let bytes) = event {
                try data(bytes, handle)
            } else {
                try self.handle(event, handle)
            }
        }
    }

    /// Checks that the form ended whole and held every document its manifest named.
    package func finish() throws {
        try parts.finish()
        if let manifest, documents != manifest.count {
            throw VaultError(
                .headerMalformed, "the form's manifest names \(manifest.count) documents and it holds \(documents)")
        }
    }

    // MARK: Parts

    private mutating func handle(_ event: MultipartReader.Event, _ handle: (PayloadReader.Event) throws -> Void) throws
    {
        switch event {
        case .part(let part):
            if part.name == "manifest" && (part.filename == nil || part.filename == "manifest.json.age") {
                guard manifest == nil,
                    documents == 0
                else {
                    throw VaultError(.headerMalformed, "the form's manifest comes after a document, or twice")
                }
                if part.filename != nil {
                    guard !identities.isEmpty else {
                        throw VaultError(
                            .usage,
                            "a sealed form's manifest opens only with the receiver's identity, and this receiver "
                                + "holds none: send sealed batches to it by json or tus (it keeps them sealed)")
                    }
                    sealed = true
                }
                current = .manifest
                buffer = []
            } else if part.filename != nil && (fileField == nil || part.name == fileField) {
                try begin(part, handle)
            } else {
                current = .field(part.name)
                buffer = []
            }
        case .end:
            switch current {
            case .manifest:
                if sealed { buffer = try openManifest(buffer) }
                let headers: [PayloadReader.Header]
                if !sealed, let c = try Self.capturedManifest(buffer, max: maxDocuments) {
                    (headers, captured) = (c, true)
                } else {
                    headers = try Self.manifest(buffer, max: maxDocuments, sealed: sealed)
                }
                guard Set(headers.compactMap(\.id)).count == headers.count else {
                    throw VaultError(.headerMalformed, "the form's manifest names a document twice")
                }
                manifest = headers
            case .field(let name):
                guard fields.count < 32 else { throw VaultError(.headerMalformed, "the form has more than 32 fields") }
                fields.append((name, String(decoding: buffer, as: UTF8.self)))
            case .capturedMetadata:
                pair = CapturedPairCheck(header: manifest![documents], document: documents + 1)
                try pair!.metadata(buffer)
            case .file(let header): try end(header, handle)
            case .none: break
            }
            current = .none
            buffer = []
        case .data:
            break
        }
    }

    private mutating func data(_ bytes: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws {
        switch current {
        case .manifest:
            guard buffer.count + bytes.count <= Self.maxManifestBytes else {
                throw VaultError(.headerMalformed, "the form's manifest is longer than \(Self.maxManifestBytes) bytes")
            }
            buffer += bytes
        case .field(let name):
            guard buffer.count + bytes.count <= Self.maxFieldBytes else {
                throw VaultError(
                    .headerMalformed, "the form's field '\(name.prefix(64))' is longer than \(Self.maxFieldBytes) bytes"
                )
            }
            buffer += bytes
        case .capturedMetadata:
            guard buffer.count + bytes.count <= CapturedDocument.maxMetadataFileBytes else {
                throw VaultError(
                    .headerMalformed,
                    "document \(documents + 1)'s metadata is over \(CapturedDocument.maxMetadataFileBytes) bytes")
            }
            buffer += bytes
        case .file where captured:
            try pair!.data(bytes)
            try handle(.data(bytes))
        case .file where sealed:
            var o = opener!
            opener = nil
            defer { opener = o }
            do {
                try o.feed(bytes) { try plaintext($0, handle) }
            } catch let f as AgeFailure {
                throw f.vaultError("document \(documents + 1)")
            }
        case .file:
            try plaintext(bytes, handle)
        case .none:
            break
        }
    }

    /// A document's plaintext: counted, hashed and handed out.
    private mutating func plaintext(
        _ bytes: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void
    )
        throws
    {
        switch current {
        case .file(let header):
            size += UInt64(bytes.count)
            if let expected = header.size, size > expected {
                throw VaultError(
                    .digestMismatch,
                    "document \(documents + 1): its part is longer than the \(expected) bytes its entry says")
            }
            if digests { digest.update(bufferPointer: bytes) }
            try handle(.data(bytes))
        default:
            break
        }
    }

    /// The sealed manifest's plaintext, without its padding.
    private func openManifest(_ sealedBytes: [UInt8]) throws -> [UInt8] {
        do {
            let reader = try AgeReader(input: BytesSource(sealedBytes), identities: identities)
            var out: [UInt8] = [], piece = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let n = try piece.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { break }
                out += piece[..<n]
            }
            guard out.count % PayloadSealing.metadataPadding == 0 else {
                throw VaultError(.headerMalformed, "the form's sealed manifest is not padded as vault pads it")
            }
            while out.last == 0x20 { out.removeLast() }
            return out
        } catch let f as AgeFailure {
            throw f.vaultError("the form's manifest")
        }
    }

    private mutating func begin(_ part: MultipartReader.Part, _ handle: (PayloadReader.Event) throws -> Void) throws {
        guard documents < maxDocuments else {
            throw VaultError(.tooManyDocuments, "the form holds more than \(maxDocuments) documents")
        }
        guard sealed || captured || !requireSealed else { throw BatchReader.notSealed }
        var header: PayloadReader.Header
        if captured {
            try beginCaptured(part, handle)
            return
        }
        if let manifest {
            guard documents < manifest.count else {
                throw VaultError(.headerMalformed, "the form holds more documents than its manifest names")
            }
            header = manifest[documents]
            if sealed {
                guard part.filename == "\(header.id!.hex).age" else {
                    throw VaultError(
                        .headerMalformed, "document \(documents + 1)'s part is not the sealed file its manifest names")
                }
                opener = AgeOpener(identities: identities, header: header.dataHeader)
                header.sealed = true
            }
        } else {
            header = PayloadReader.Header()
            // The file name as the document's name, the type without its parameters; both as the
            // vault can keep them (a part the vault could not store is refused here).
            header.name = part.filename
            header.contentType = part.contentType.map {
                String($0.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces()
            }
            try PayloadReader.validate(
                name: part.filename ?? "", contentType: header.contentType ?? "application/octet-stream",
                document: documents + 1)
        }
        size = 0
        digest = SHA256()
        current = .file(header)
        try handle(.begin(index: documents, header: header))
    }

    /// A captured document's part: its metadata file first, then its data file.
    private mutating func beginCaptured(
        _ part: MultipartReader.Part, _ handle: (PayloadReader.Event) throws -> Void
    ) throws {
        guard let manifest, documents < manifest.count else {
            throw VaultError(.headerMalformed, "the form holds more documents than its manifest names")
        }
        let id = manifest[documents].id!.hex
        if let pair {
            guard part.filename == "\(id).age" else {
                throw VaultError(
                    .headerMalformed, "document \(documents + 1)'s data part is not the file its manifest names")
            }
            current = .file(pair.header)
            try handle(.begin(index: documents, header: pair.header))
        } else {
            guard part.filename == "\(id).meta.age" else {
                throw VaultError(
                    .headerMalformed, "document \(documents + 1)'s metadata part is not the file its manifest names")
            }
            current = .capturedMetadata
            buffer = []
        }
    }

    private mutating func end(_ header: PayloadReader.Header, _ handle: (PayloadReader.Event) throws -> Void) throws {
        if let pair {
            let checked = try pair.finish()
            self.pair = nil
            try handle(.end(index: documents, size: checked.size, sha256: checked.sha256))
            documents += 1
            return
        }
        if sealed {
            var o = opener!
            opener = nil
            do {
                try o.finish { try plaintext($0, handle) }
            } catch let f as AgeFailure {
                throw f.vaultError("document \(documents + 1)")
            }
            if let k = o.fileKey { fileKeys.append(k) }
        }
        let sha = digests ? Array(digest.finalize()) : header.sha256 ?? []
        if let expected = header.size, expected != size {
            throw VaultError(
                .digestMismatch, "document \(documents + 1): its part is \(size) bytes, its entry says \(expected)")
        }
        if digests, let expected = header.sha256, expected != sha {
            throw VaultError(
                .digestMismatch, "document \(documents + 1): its part does not have the SHA-256 its entry says")
        }
        try handle(.end(index: documents, size: size, sha256: sha))
        documents += 1
    }

    // MARK: The manifest

    private struct CapturedManifest: Decodable {
        struct Entry: Decodable {
            var id: String
            var sha256: String
            var size: UInt64
        }
        var batch: Int
        var captured: String
        var documents: [Entry]
        var of: Int
    }

    /// The headers a captured manifest names (``FormManifest/captured(batch:of:documents:)``),
    /// or nil for a manifest that is not one.
    static func capturedManifest(_ bytes: [UInt8], max: Int) throws -> [PayloadReader.Header]? {
        guard let m = try? JSONDecoder().decode(CapturedManifest.self, from: Data(bytes)) else { return nil }
        guard 1 <= m.batch, m.batch <= m.of else {
            throw VaultError(.headerMalformed, "the form's manifest names batch \(m.batch) of \(m.of)")
        }
        guard m.documents.count <= max else {
            throw VaultError(.headerMalformed, "the form's manifest names more than \(max) documents")
        }
        var headers: [PayloadReader.Header] = []
        for (i, e) in m.documents.enumerated() {
            guard let id = DocumentID(hex: e.id), let sha = Hex.decode(e.sha256), sha.count == 32 else {
                throw VaultError(.headerMalformed, "the form's manifest names document \(i + 1) wrongly")
            }
            headers.append(PayloadReader.Header(id: id, size: e.size, sha256: sha, sealed: true))
        }
        let canonical = FormManifest.captured(
            batch: m.batch, of: m.of, documents: headers.map { ($0.id!, $0.size!, $0.sha256!) })
        guard m.captured == PayloadSealing.format, canonical == bytes else {
            throw VaultError(.headerMalformed, "the form's manifest is not written as vault writes it")
        }
        return headers
    }

    private struct Manifest: Decodable {
        struct Entry: Decodable {
            var contentType: String
            var id: String
            var name: String
            var sha256: String
            var size: UInt64
            var tags: [String]?
            var dataHeader: String?
        }
        var batch: Int
        var documents: [Entry]
        var of: Int
        var proof: String?
    }

    /// The headers a manifest names, when it is vault's manifest written canonically (a batch
    /// proof and data header digests only in a sealed one).
    static func manifest(_ bytes: [UInt8], max: Int, sealed: Bool = false) throws -> [PayloadReader.Header] {
        guard let m = try? JSONDecoder().decode(Manifest.self, from: Data(bytes)) else {
            throw VaultError(.headerMalformed, "the form's manifest is not vault's (docs/UPLOAD.md)")
        }
        guard 1 <= m.batch, m.batch <= m.of else {
            throw VaultError(.headerMalformed, "the form's manifest names batch \(m.batch) of \(m.of)")
        }
        guard m.documents.count <= max else {
            throw VaultError(.headerMalformed, "the form's manifest names more than \(max) documents")
        }
        var canonical = Array("{\"batch\":\(m.batch),\"documents\":[".utf8)
        var headers: [PayloadReader.Header] = []
        for (i, e) in m.documents.enumerated() {
            guard let id = DocumentID(hex: e.id),
                let sha = Hex.decode(e.sha256),
                sha.count == 32,
                let proof = SealedPayloadReader.proof(m.proof, e.dataHeader),
                sealed || proof.batch == nil
            else { throw VaultError(.headerMalformed, "the form's manifest names document \(i + 1) wrongly") }
            if i > 0 { canonical.append(0x2C) }
            let tags = e.tags ?? []
            canonical += FormManifest.entry(
                id: id, name: e.name, contentType: e.contentType, sha256: sha, size: e.size, tags: tags,
                dataHeader: proof.dataHeader)
            try PayloadReader.validate(name: e.name, contentType: e.contentType, tags: tags, document: i + 1)
            headers.append(
                .init(
                    id: id, name: e.name, contentType: e.contentType, size: e.size, sha256: sha, tags: tags,
                    proof: proof.batch, dataHeader: proof.dataHeader))
        }
        canonical += Array("],\"of\":\(m.of)".utf8)
        if let proof = m.proof { canonical += Array(",\"proof\":\"\(proof)\"".utf8) }
        canonical.append(0x7D)
        guard canonical == bytes else {
            throw VaultError(.headerMalformed, "the form's manifest is not written as vault writes it")
        }
        return headers
    }
}
