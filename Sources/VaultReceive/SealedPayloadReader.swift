import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Reads a sealed JSON payload as it arrives (docs/EXPORT.md, "Sealed payloads"):
/// `{"Sealed":"age-encryption.org/v1","Files":[{"Id":"…","Metadata":"…","Data":"…"},…]}`, each
/// `Metadata` and `Data` an age file in base64 that the receiver's identities open. It gives the
/// same events as ``PayloadReader``: the metadata is opened and checked first (its id is the
/// entry's, its JSON the canonical one, padded with spaces), then the data's plaintext is handed
/// out chunk by chunk as each authenticates, and its size and SHA-256 must be the metadata's.
///
/// Bounded: a metadata file of at most ``maxMetadataBytes`` of base64, then one age chunk.
package struct SealedPayloadReader {
    /// The most base64 a `Metadata` value may take (its age header grows with the recipients).
    package static let maxMetadataBytes = 2 << 20

    private let identities: [AgeIdentity]
    private let maxDocuments: Int
    private static let prologue = Array(#"{"Sealed":"age-encryption.org/v1","Files":["#.utf8)
    private static let idOpen = Array(#"{"Id":""#.utf8)
    private static let metadataOpen = Array(#"","Metadata":""#.utf8)
    private static let dataOpen = Array(#"","Data":""#.utf8)
    private static let entryClose = Array(#""}"#.utf8)

    private enum Step {
        case prologue, between, idOpen, id, metadataOpen, metadata, dataOpen, data, entryClose, complete
    }
    private var step = Step.prologue
    private var matched = 0
    private var token: [UInt8] = []
    private var base64 = CanonicalBase64()
    private var opener: AgeOpener?
    private var header = PayloadReader.Header()
    private var size: UInt64 = 0
    private var digest = SHA256()
    /// Whether this reader hashes each document (see ``PayloadReader``'s): off, `.end` carries
    /// the SHA-256 the document's metadata names, for the consumer that hashes to check.
    private let digests: Bool
    private var ids = Set<DocumentID>()
    private var ending = false
    /// Bytes read so far.
    package private(set) var offset: UInt64 = 0
    /// Documents whose end was read.
    package private(set) var documents = 0
    /// The file keys of the documents' data files, in order (the sealed answer's key).
    package private(set) var fileKeys: [SecretBytes] = []

    /// A reader opening the payload's files with `identities`.
    package init(identities: [AgeIdentity], maxDocuments: Int, digests: Bool = true) {
        self.digests = digests
        self.identities = identities
        self.maxDocuments = maxDocuments
    }

    /// Reads the next piece of the body, calling `handle` for what it completes.
    /// - Throws: `header-malformed` for bytes that are not the layout or an age file that does
    ///   not open (`wrong-password` when no identity opens it), `chunk-authentication-failed`,
    ///   `digest-mismatch` for data that is not what its metadata says, `trailing-data` after the
    ///   end; and whatever `handle` throws.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws {
        let bytes = piece.bindMemory(to: UInt8.self)
        var i = 0
        while i < bytes.count {
            switch step {
            case .prologue: i = try literal(Self.prologue, bytes, i, next: .between)
            case .between:
                let b = bytes[i]
                if ending {
                    guard b == 0x7D else { throw refusal("}", at: i) }
                    step = .complete
                } else if b == 0x5D {
                    ending = true
                } else {
                    if documents > 0 { guard b == 0x2C else { throw refusal(", or ]", at: i) } }
                    guard documents < maxDocuments else {
                        throw VaultError(.tooManyDocuments, "the payload holds more than \(maxDocuments) documents")
                    }
                    step = .idOpen
                    if documents == 0 { continue }
                }
                i += 1
            case .idOpen: i = try literal(Self.idOpen, bytes, i, next: .id)
            case .id:
                while i < bytes.count && token.count < 32 {
                    guard (0x30...0x39).contains(bytes[i]) || (0x61...0x66).contains(bytes[i]) else {
                        throw refusal("lower-case hex", at: i)
                    }
                    token.append(bytes[i])
                    i += 1
                }
                if token.count == 32 {
                    guard let id = DocumentID(hex: String(decoding: token, as: UTF8.self)), ids.insert(id).inserted
                    else {
                        throw VaultError(.headerMalformed, "the payload names a document twice")
                    }
                    header = PayloadReader.Header(id: id)
                    token = []
                    step = .metadataOpen
                }
            case .metadataOpen: i = try literal(Self.metadataOpen, bytes, i, next: .metadata)
            case .metadata:
                while i < bytes.count && bytes[i] != 0x22 {
                    guard token.count < Self.maxMetadataBytes else {
                        throw refusal("metadata of at most \(Self.maxMetadataBytes) bytes", at: i)
                    }
                    token.append(bytes[i])
                    i += 1
                }
                if i < bytes.count {
                    try openMetadata(at: i)
                    token = []
                    step = .dataOpen
                }
            case .dataOpen:
                i = try literal(Self.dataOpen, bytes, i, next: .data)
                if step == .data {
                    opener = AgeOpener(identities: identities, header: header.dataHeader)
                    base64 = CanonicalBase64()
                    size = 0
                    digest = SHA256()
                    try handle(.begin(index: documents, header: header))
                }
            case .data:
                var end = i
                while end < bytes.count && bytes[end] != 0x22 { end += 1 }
                try decodeData(UnsafeBufferPointer(rebasing: bytes[i..<end]), at: i, handle)
                i = end
                if i < bytes.count { try endDocument(handle, at: i) }
            case .entryClose: i = try literal(Self.entryClose, bytes, i, next: .between)
            case .complete:
                throw VaultError(.trailingData, "the payload goes on after its end, at byte \(offset + UInt64(i))")
            }
        }
        offset += UInt64(bytes.count)
    }

    /// Checks that the payload ended where it should.
    package func finish() throws {
        guard step == .complete else {
            throw VaultError(
                .truncated, "the payload ends after \(offset) bytes, before its end (\(documents) documents read)")
        }
    }

    private mutating func literal(
        _ expected: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, next: Step
    )
        throws -> Int
    {
        var i = start
        while i < bytes.count && matched < expected.count {
            guard bytes[i] == expected[matched] else {
                throw refusal(String(decoding: expected[matched...], as: UTF8.self), at: i)
            }
            matched += 1
            i += 1
        }
        if matched == expected.count {
            matched = 0
            step = next
        }
        return i
    }

    /// Opens the entry's metadata: its id must be the entry's, its JSON canonical and padded.
    private mutating func openMetadata(at i: Int) throws {
        var decoder = CanonicalBase64()
        var sealed: [UInt8] = []
        guard (try? token.withUnsafeBufferPointer({ try decoder.decode($0, into: &sealed) })) != nil,
            (try? decoder.finish()) != nil
        else { throw refusal("canonical base64", at: i) }
        let plain: [UInt8]
        do {
            let reader = try AgeReader(input: BytesSource(sealed), identities: identities)
            var out: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 16 << 10)
            while true {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { break }
                out += buffer[..<n]
                guard out.count <= 64 << 10 else { throw VaultError(.headerMalformed, "metadata over 64 KiB") }
            }
            plain = out
        } catch let f as AgeFailure {
            throw f.vaultError("document \(documents + 1)'s metadata")
        }
        struct Metadata: Decodable {
            var Id: String, Name: String, ContentType: String, Size: UInt64, SHA256: String
            var Tags: [String]?
            var Proof: String?, DataHeader: String?
        }
        var json = plain[...]
        while json.last == 0x20 { json = json.dropLast() }
        guard let m = try? JSONDecoder().decode(Metadata.self, from: Data(json)),
            let id = DocumentID(hex: m.Id), id == header.id, let sha = Hex.decode(m.SHA256), sha.count == 32,
            let proof = Self.proof(m.Proof, m.DataHeader),
            PayloadSealing.padded(
                PayloadSealing.metadataJSON(
                    id: id, name: m.Name, contentType: m.ContentType, size: m.Size, sha256: sha, tags: m.Tags ?? [],
                    proof: proof.batch.map { ($0, proof.dataHeader ?? []) }))
                == plain
        else {
            throw VaultError(.headerMalformed, "document \(documents + 1)'s metadata is not vault's (docs/EXPORT.md)")
        }
        try PayloadReader.validate(
            name: m.Name, contentType: m.ContentType, tags: m.Tags ?? [], document: documents + 1)
        (header.name, header.contentType, header.size, header.sha256) = (m.Name, m.ContentType, m.Size, sha)
        header.tags = m.Tags ?? []
        (header.proof, header.dataHeader) = proof
        header.sealed = true
    }

    /// A metadata's proof and data header digest: both 32 bytes of hex, or neither (nil when
    /// only one is there, or either is not).
    static func proof(_ proof: String?, _ dataHeader: String?) -> (batch: [UInt8]?, dataHeader: [UInt8]?)? {
        switch (proof.flatMap(Hex.decode), dataHeader.flatMap(Hex.decode)) {
        case (nil, nil) where proof == nil && dataHeader == nil: return (nil, nil)
        case (let p?, let d?) where p.count == 32 && d.count == 32: return (p, d)
        default: return nil
        }
    }

    /// Base64 of the data's age file, opened as it decodes.
    private mutating func decodeData(
        _ text: UnsafeBufferPointer<UInt8>, at i: Int, _ handle: (PayloadReader.Event) throws -> Void
    ) throws {
        var sealed: [UInt8] = []
        do { try base64.decode(text, into: &sealed) } catch { throw refusal("canonical base64", at: i) }
        try sealed.withUnsafeBytes { try feed($0, handle) }
    }

    private mutating func feed(_ sealed: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws
    {
        var o = opener!
        opener = nil
        defer { opener = o }
        do {
            try o.feed(sealed) { try plaintext($0, handle) }
        } catch let f as AgeFailure {
            throw f.vaultError("document \(documents + 1)")
        }
    }

    private mutating func plaintext(
        _ bytes: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void
    )
        throws
    {
        size += UInt64(bytes.count)
        if let expected = header.size, size > expected {
            throw VaultError(
                .digestMismatch, "document \(documents + 1): its data is longer than the \(expected) bytes it names")
        }
        if digests { digest.update(bufferPointer: bytes) }
        try handle(.data(bytes))
    }

    private mutating func endDocument(_ handle: (PayloadReader.Event) throws -> Void, at i: Int) throws {
        do { try base64.finish() } catch { throw refusal("canonical base64", at: i) }
        var o = opener!
        opener = nil
        do {
            try o.finish { try plaintext($0, handle) }
        } catch let f as AgeFailure {
            throw f.vaultError("document \(documents + 1)")
        }
        if let k = o.fileKey { fileKeys.append(k) }
        let sha = digests ? Array(digest.finalize()) : header.sha256 ?? []
        guard size == header.size, sha == header.sha256 else {
            throw VaultError(
                .digestMismatch, "document \(documents + 1): its data is not the size and SHA-256 its metadata names")
        }
        try handle(.end(index: documents, size: size, sha256: sha))
        documents += 1
        step = .entryClose
    }

    private func refusal(_ expected: String, at i: Int) -> VaultError {
        VaultError(
            .headerMalformed,
            "the sealed payload is not vault's layout at byte \(offset + UInt64(i)) (document \(documents + 1)): "
                + "expected \(expected.prefix(40))")
    }
}

/// Standard padded base64, decoded as it arrives and refused unless canonical (groups of 4, `=`
/// only at the end, unused bits zero).
struct CanonicalBase64 {
    struct Invalid: Error {}
    private var quantum: [UInt8] = []
    private var padded = 0
    private var done = false
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        return t
    }()

    /// Decodes `text`, appending what it decodes to `out`.
    mutating func decode(_ text: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) throws {
        for c in text {
            guard !done else { throw Invalid() }
            if c == 0x3D {
                guard quantum.count >= 2 else { throw Invalid() }
                padded += 1
                quantum.append(0)
            } else {
                guard padded == 0 else { throw Invalid() }
                let v = Self.table[Int(c)]
                guard v != 0xFF else { throw Invalid() }
                quantum.append(v)
            }
            if quantum.count == 4 {
                let n =
                    UInt32(quantum[0]) << 18 | UInt32(quantum[1]) << 12 | UInt32(quantum[2]) << 6 | UInt32(quantum[3])
                guard (padded == 2 ? n & 0xFFFF : padded == 1 ? n & 0xFF : 0) == 0 else { throw Invalid() }
                out.append(UInt8(n >> 16))
                if padded < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
                if padded < 1 { out.append(UInt8(n & 0xFF)) }
                quantum.removeAll(keepingCapacity: true)
                if padded > 0 { done = true }
            }
        }
    }

    /// The text ended: it must end with a whole group.
    func finish() throws { guard quantum.isEmpty else { throw Invalid() } }
}
