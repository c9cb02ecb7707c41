import VaultCore

/// Reads a capture-only station's payload as it arrives (docs/EXPORT.md, "Captured payloads"):
/// `{"Captured":"age-encryption.org/v1","Files":[{"Id":"…","Size":n,"SHA256":"…","Metadata":"…","Data":"…"},…]}`,
/// each `Metadata` and `Data` an age file in base64, sealed at capture to the office's recipients.
/// Nothing is opened, whether or not the receiver holds an identity: each pair is checked as
/// far as it can be without a key (``CapturedPairCheck``), which is what the receipt is signed for.
/// With ``sealedLayout``, a sealed payload (`{"Sealed":…,"Files":[{"Id":…,"Metadata":…,"Data":…},…]}`)
/// read by a receiver that holds no identity: each document is kept as such a pair.
///
/// Events: `.begin` (the header's `captured` is the metadata file, `size` and `sha256` the
/// pair's), `.data` with the data file's bytes as they decode, `.end` with the pair's size and
/// digest. Bounded: a metadata file of at most ``maxMetadataBytes`` of base64, and the data
/// file's header (``CapturedPairCheck/maxHeaderBytes``).
package struct CapturedPayloadReader {
    /// The most base64 a `Metadata` value may take (``CapturedDocument/maxMetadataFileBytes``).
    package static let maxMetadataBytes = (CapturedDocument.maxMetadataFileBytes + 2) / 3 * 4
    private let maxDocuments: Int
    /// The sealed payload's layout (docs/EXPORT.md, "Sealed payloads"), taken by a receiver
    /// without the identity: no declared size or SHA-256, the pair is what arrives.
    package let sealedLayout: Bool
    private static let prologue = Array(#"{"Captured":"age-encryption.org/v1","Files":["#.utf8)
    private static let sealedPrologue = Array(#"{"Sealed":"age-encryption.org/v1","Files":["#.utf8)
    private static let idOpen = Array(#"{"Id":""#.utf8)
    private static let sizeOpen = Array(#"","Size":"#.utf8)
    private static let shaOpen = Array(#","SHA256":""#.utf8)
    private static let metadataOpen = Array(#"","Metadata":""#.utf8)
    private static let dataOpen = Array(#"","Data":""#.utf8)
    private static let entryClose = Array(#""}"#.utf8)

    private enum Step: Equatable {
        case prologue, between, idOpen, id, sizeOpen, size, shaOpen, sha, metadataOpen, metadata, dataOpen, data
        case entryClose, complete
    }
    private var step = Step.prologue
    private var matched = 0
    private var token: [UInt8] = []
    private var base64 = CanonicalBase64()
    private var header = PayloadReader.Header()
    /// The current document's check, from its metadata file on.
    private var check: CapturedPairCheck?
    private var ids = Set<DocumentID>()
    private var ending = false
    private var decoded: [UInt8] = []
    /// Bytes read so far.
    package private(set) var offset: UInt64 = 0
    /// Documents whose end was read.
    package private(set) var documents = 0

    /// A reader of at most `maxDocuments` documents; with `sealedLayout`, of a sealed payload.
    package init(maxDocuments: Int, sealedLayout: Bool = false) {
        self.maxDocuments = maxDocuments
        self.sealedLayout = sealedLayout
    }

    /// Reads the next piece of the body, calling `handle` for what it completes.
    /// - Throws: `header-malformed` for bytes that are not the layout or a file that is not an
    ///   age file vault seals, `digest-mismatch` for a pair that is not the size and SHA-256 its
    ///   entry declares, `trailing-data` after the end; and whatever `handle` throws.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws {
        let bytes = piece.bindMemory(to: UInt8.self)
        var i = 0
        while i < bytes.count {
            switch step {
            case .prologue:
                i = try literal(sealedLayout ? Self.sealedPrologue : Self.prologue, bytes, i, next: .between)
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
                i = try field(bytes, i, upTo: 0x22, max: 32, what: "32 hex digits")
                if step == .id, i < bytes.count { try takeID(at: i) }
            case .sizeOpen: i = try literal(Self.sizeOpen, bytes, i, next: .size)
            case .size:
                i = try field(bytes, i, upTo: 0x2C, max: 20, what: "a size")
                if i < bytes.count { try takeSize(at: i) }
            case .shaOpen: i = try literal(Self.shaOpen, bytes, i, next: .sha)
            case .sha:
                i = try field(bytes, i, upTo: 0x22, max: 64, what: "64 hex digits")
                if i < bytes.count { try takeSHA(at: i) }
            case .metadataOpen: i = try literal(Self.metadataOpen, bytes, i, next: .metadata)
            case .metadata:
                i = try field(
                    bytes, i, upTo: 0x22, max: Self.maxMetadataBytes,
                    what: "metadata of at most \(Self.maxMetadataBytes) bytes of base64")
                if i < bytes.count { try takeMetadata(at: i) }
            case .dataOpen:
                i = try literal(Self.dataOpen, bytes, i, next: .data)
                if step == .data {
                    base64 = CanonicalBase64()
                    try handle(.begin(index: documents, header: check!.header))
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
    ) throws -> Int {
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

    /// Takes bytes into ``token`` up to `end` (not taken), at most `max` of them.
    private mutating func field(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, upTo end: UInt8, max: Int, what: String
    ) throws -> Int {
        var i = start
        while i < bytes.count && bytes[i] != end {
            guard token.count < max else { throw refusal(what, at: i) }
            token.append(bytes[i])
            i += 1
        }
        return i
    }

    private mutating func takeID(at i: Int) throws {
        guard token.count == 32, token.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            let id = DocumentID(hex: String(decoding: token, as: UTF8.self))
        else { throw refusal("32 lower-case hex digits", at: i) }
        guard ids.insert(id).inserted else { throw VaultError(.headerMalformed, "the payload names a document twice") }
        header = PayloadReader.Header(id: id)
        header.sealed = true
        token = []
        step = sealedLayout ? .metadataOpen : .sizeOpen
    }

    private mutating func takeSize(at i: Int) throws {
        guard !token.isEmpty, token.allSatisfy({ (0x30...0x39).contains($0) }), token.first != 0x30 || token.count == 1,
            let n = UInt64(String(decoding: token, as: UTF8.self))
        else { throw refusal("a size in decimal", at: i) }
        header.size = n
        token = []
        step = .shaOpen
    }

    private mutating func takeSHA(at i: Int) throws {
        guard token.count == 64, token.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            let sha = Hex.decode(String(decoding: token, as: UTF8.self))
        else { throw refusal("64 lower-case hex digits", at: i) }
        header.sha256 = sha
        token = []
        step = .metadataOpen
    }

    /// The metadata file: canonical base64 of an age file vault seals, no longer than the pair.
    private mutating func takeMetadata(at i: Int) throws {
        var decoder = CanonicalBase64()
        var file: [UInt8] = []
        guard (try? token.withUnsafeBufferPointer({ try decoder.decode($0, into: &file) })) != nil,
            (try? decoder.finish()) != nil
        else { throw refusal("canonical base64", at: i) }
        check = CapturedPairCheck(header: header, document: documents + 1)
        try check!.metadata(file)
        token = []
        step = .dataOpen
    }

    /// Base64 of the data's age file, checked and handed out as it decodes.
    private mutating func decodeData(
        _ text: UnsafeBufferPointer<UInt8>, at i: Int, _ handle: (PayloadReader.Event) throws -> Void
    ) throws {
        decoded.removeAll(keepingCapacity: true)
        do { try base64.decode(text, into: &decoded) } catch { throw refusal("canonical base64", at: i) }
        guard !decoded.isEmpty else { return }
        try decoded.withUnsafeBytes {
            try check!.data($0)
            try handle(.data($0))
        }
    }

    private mutating func endDocument(_ handle: (PayloadReader.Event) throws -> Void, at i: Int) throws {
        do { try base64.finish() } catch { throw refusal("canonical base64", at: i) }
        let pair = try check!.finish()
        try handle(.end(index: documents, size: pair.size, sha256: pair.sha256))
        check = nil
        documents += 1
        step = .entryClose
    }

    private func refusal(_ expected: String, at i: Int) -> VaultError {
        VaultError(
            .headerMalformed,
            "the \(sealedLayout ? "sealed" : "captured") payload is not vault's layout at byte \(offset + UInt64(i)) "
                + "(document \(documents + 1)): expected \(expected.prefix(40))")
    }
}

extension CapturedPayloadReader: PieceReader {}
