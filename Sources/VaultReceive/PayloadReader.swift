import Crypto
import VaultCore

/// Reads a batch payload as it arrives, in bounded memory: `{"Files":[…]}` in either shape
/// (docs/EXPORT.md), exactly as vault writes it — the keys in their order, no whitespace, strings
/// escaped canonically, standard padded base64. Anything else is refused where it starts, so
/// a receiver never holds more than one piece of the body and a few hundred bytes of header.
///
/// Each document is given to the caller as it is decoded: ``Event/begin(index:header:)`` with
/// what the entry says about it (nothing for the `strings` shape), then its bytes in pieces
/// (``Event/data(_:)``), then ``Event/end(index:size:sha256:)`` with what was actually received;
/// the reader has checked by then that the size and SHA-256 are those the entry named.
///
/// Written by hand: the receiver must not hold a 400 MB base64 string, which a JSON library
/// would, and the payload's one canonical layout makes the reader a short state machine whose
/// every refusal names the byte where it happened.
package struct PayloadReader {
    /// What an entry says about its document before its data (all nil in the `strings` shape).
    package struct Header: Sendable, Equatable {
        /// `Id`.
        package var id: DocumentID?
        /// `Name`.
        package var name: String?
        /// `ContentType`.
        package var contentType: String?
        /// `Size`: the decoded length the data must have.
        package var size: UInt64?
        /// `SHA256`: the digest the decoded data must have.
        package var sha256: [UInt8]?
        /// `Tags`, in the station's order (the key is left out when there are none).
        package var tags: [String] = []
        /// A sealed batch's proof (`Proof` in each document's sealed metadata, `proof` in a
        /// sealed form's manifest): the same in every document of the batch.
        package var proof: [UInt8]?
        /// The SHA-256 of the header of the document's sealed data file, named beside the proof.
        package var dataHeader: [UInt8]?
        /// Whether the document comes sealed (an age file to the receiver's identities).
        package var sealed = false
        /// A captured document's metadata age file (``CapturedPayloadReader``): its data comes as
        /// it was sealed at capture, and is kept so.
        package var captured: [UInt8]?
    }

    /// What the reader found, in order.
    package enum Event {
        /// An entry's header was read (`index` counts from 0).
        case begin(index: Int, header: Header)
        /// Decoded bytes of the current document (valid only during the call).
        case data(UnsafeRawBufferPointer)
        /// The current document ended, with what it actually was.
        case end(index: Int, size: UInt64, sha256: [UInt8])
    }

    /// The most bytes a `Name` or `ContentType` may take as sent (escaped, with its quotes).
    package static let maxStringBytes = 8 << 10

    /// The layout read.
    package let shape: PayloadShape
    /// The most documents a payload may hold.
    package let maxDocuments: Int
    /// Bytes read so far.
    package private(set) var offset: UInt64 = 0
    /// Documents whose end was read.
    package private(set) var documents = 0
    /// True once the closing `]}` was read.
    package private(set) var isComplete = false

    private enum Step {
        case literal([UInt8])
        case hex(count: Int, field: Field)
        case string(Field)
        case digits(Field)
        /// `"Tags":[…],` when the document has tags, then `"Data":"`.
        case tagsThenData
        case data
    }

    /// Where the reader is in ``Step/tagsThenData``.
    private enum TagsStep {
        /// The key's first byte: `T` (tags follow) or `D` (no tags).
        case key
        /// The rest of `Tags":[` (then a tag), or of `Data":"` or `],"Data":"` (then the data),
        /// in ``tagsLiteral``.
        case literal(thenTag: Bool)
        /// A tag's string (its opening quote first).
        case tag
        /// After a tag: `,` and another, or `]`.
        case afterTag
    }

    private enum Field { case id, name, contentType, size, sha256 }

    private var steps: [Step]
    private var step = 0
    private var matched = 0  // bytes of the current literal matched so far
    private var token: [UInt8] = []  // the current hex, string or digits, as sent
    private var escaped = false
    private var tagsStep = TagsStep.key
    private var tagsLiteral: [UInt8] = []
    private var header = Header()
    private var quantum: [UInt8] = []  // base64 characters not yet decoded (0-3)
    private var padded = 0  // `=` seen in the final quantum
    private var decodedSize: UInt64 = 0
    private var digest = SHA256()
    /// Whether this reader hashes each document (the SHA-256 its `.end` event carries, checked
    /// against what the batch declares). A consumer that hashes what it is given anyway (the
    /// receiver's envelope writer) turns it off: each byte is then hashed once, and `.end`
    /// carries the declared SHA-256 (empty when none was), for the consumer to check.
    private let digests: Bool
    private var out: [UInt8]
    private var ids = Set<DocumentID>()
    private var started = false
    private var between = true  // before an entry: `]` ends the list; after the first, `,` comes first
    private var ending = false  // `]` read, `}` expected

    private static let prologue = Array(#"{"Files":["#.utf8)
    private static let decode: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        return t
    }()

    /// A reader of one payload of `shape`, refusing more than `maxDocuments` documents.
    package init(shape: PayloadShape, maxDocuments: Int = BatchLimits().documents, digests: Bool = true) {
        self.digests = digests
        self.shape = shape
        self.maxDocuments = maxDocuments
        out = []
        out.reserveCapacity(48 << 10)
        switch shape {
        case .objects:
            steps = [
                .literal(Array(#"{"Id":""#.utf8)), .hex(count: 32, field: .id),
                .literal(Array(#"","Name":"#.utf8)), .string(.name),
                .literal(Array(#","ContentType":"#.utf8)), .string(.contentType),
                .literal(Array(#","Size":"#.utf8)), .digits(.size),
                .literal(Array(#","SHA256":""#.utf8)), .hex(count: 64, field: .sha256),
                .literal(Array(#"",""#.utf8)), .tagsThenData, .data, .literal(Array(#""}"#.utf8))
            ]
        case .strings:
            steps = [.literal([0x22]), .data, .literal([0x22])]
        }
    }

    /// Reads the next piece of the body, calling `handle` for what it completes.
    /// - Throws: ``VaultCore/VaultError/Code/headerMalformed`` for bytes that are not the
    ///   canonical layout (naming the byte and document), `digest-mismatch` for a document whose
    ///   size or SHA-256 is not the one its entry named, `trailing-data` for bytes after the end;
    ///   and whatever `handle` throws.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) throws {
        let bytes = piece.bindMemory(to: UInt8.self)
        var i = 0
        while i < bytes.count {
            if isComplete {
                throw VaultError(.trailingData, "the payload goes on after its end, at byte \(offset + UInt64(i))")
            }
            if !started {
                let b = bytes[i]
                guard b == Self.prologue[matched] else { throw refusal("{\"Files\":[", at: i) }
                matched += 1
                i += 1
                if matched == Self.prologue.count {
                    started = true
                    matched = 0
                }
                continue
            }
            i = between ? try entryOrEnd(bytes, at: i) : try advance(bytes, from: i, handle)
        }
        offset += UInt64(bytes.count)
    }

    /// Checks that the payload ended where it should.
    /// - Throws: ``VaultCore/VaultError/Code/truncated`` when it stopped before `]}`.
    package func finish() throws {
        guard isComplete else {
            throw VaultError(
                .truncated, "the payload ends after \(offset) bytes, before its end (\(documents) documents read)")
        }
    }

    // MARK: Steps

    /// Consumes bytes of the current step from `i`; returns where the next step starts.
    private mutating func advance(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        var i = start
        switch steps[step] {
        case .literal(let expected):
            while i < bytes.count && matched < expected.count {
                guard bytes[i] == expected[matched] else {
                    throw refusal(String(decoding: expected[matched...], as: UTF8.self), at: i)
                }
                matched += 1
                i += 1
            }
            if matched == expected.count { try done(handle) }
        case .hex(let count, let field):
            while i < bytes.count && token.count < count {
                let b = bytes[i]
                guard (0x30...0x39).contains(b) || (0x61...0x66).contains(b) else {
                    throw refusal("lower-case hex", at: i)
                }
                token.append(b)
                i += 1
            }
            if token.count == count {
                let hex = String(decoding: token, as: UTF8.self)
                switch field {
                case .id: header.id = DocumentID(hex: hex)
                default: header.sha256 = Hex.decode(hex)
                }
                token = []
                try done(handle)
            }
        case .string(let field):
            if try scanString(bytes, at: &i) {
                let text = try closeString(at: i - 1)
                if field == .name { header.name = text } else { header.contentType = text }
                try done(handle)
            }
        case .tagsThenData:
            i = try tagsThenData(bytes, from: i, handle)
        case .digits(let field):
            while i < bytes.count {
                let b = bytes[i]
                guard (0x30...0x39).contains(b) else { break }
                guard token.count < 20,
                    !(token == [0x30])
                else { throw refusal("a canonical size", at: i) }
                token.append(b)
                i += 1
            }
            if i < bytes.count {
                guard !token.isEmpty,
                    let n = UInt64(String(decoding: token, as: UTF8.self))
                else {
                    throw refusal("a size", at: i)
                }
                if field == .size { header.size = n }
                token = []
                try done(handle)
            }
        case .data:
            i = try data(bytes, from: i, handle)
        }
        return i
    }

    /// Between entries: `]}` ends the payload, else an entry starts (after a `,` but the first).
    private mutating func entryOrEnd(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) throws -> Int {
        var i = start
        let b = bytes[i]
        if ending {
            guard b == 0x7D else { throw refusal("}", at: i) }
            isComplete = true
            return i + 1
        }
        if b == 0x5D {
            ending = true
            return i + 1
        }
        if documents > 0 {
            guard b == 0x2C else { throw refusal(", or ]", at: i) }
            i += 1
        }
        guard documents < maxDocuments else {
            throw VaultError(
                .tooManyDocuments,
                "the payload holds more than \(maxDocuments) documents (at byte \(offset + UInt64(i)))")
        }
        between = false
        step = 0
        matched = 0
        return i
    }

    /// The step is complete: the next one starts (a header complete is announced first).
    private mutating func done(_ handle: (Event) throws -> Void) throws {
        matched = 0
        step += 1
        if step == steps.count {
            between = true
            return
        }
        if case .data = steps[step] {
            if shape == .objects {
                try Self.validate(
                    name: header.name ?? "", contentType: header.contentType ?? "", document: documents + 1)
                guard let id = header.id, ids.insert(id).inserted else {
                    throw VaultError(.headerMalformed, "the payload names document \(header.id?.hex ?? "?") twice")
                }
            }
            decodedSize = 0
            digest = SHA256()
            quantum = []
            padded = 0
            try handle(.begin(index: documents, header: header))
        }
    }

    /// Reads a string's bytes (from its opening quote) into `token`, from `i` on; true once its
    /// closing quote was read (`i` is then just past it).
    private mutating func scanString(_ bytes: UnsafeBufferPointer<UInt8>, at i: inout Int) throws -> Bool {
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            token.append(b)
            guard token.count <= Self.maxStringBytes else {
                throw refusal("a string of at most \(Self.maxStringBytes) bytes", at: i - 1)
            }
            if token.count == 1 {
                guard b == 0x22 else { throw refusal("\"", at: i - 1) }
                continue
            }
            if escaped {
                // Only the escapes the canonical layout uses (each checked whole at the end).
                guard [0x22, 0x5C, 0x62, 0x66, 0x6E, 0x72, 0x74, 0x75].contains(b) else {
                    throw refusal("a canonical escape", at: i - 1)
                }
                escaped = false
            } else if b < 0x20 {
                throw refusal("a control character escaped", at: i - 1)
            } else if b == 0x5C {
                escaped = true
            } else if b == 0x22 {
                return true
            }
        }
        return false
    }

    /// The optional `"Tags":["…",…],` (after `"SHA256":"…",`) and the `"Data":"` that follows:
    /// tags are there only when the document has some, so a payload of untagged documents is
    /// byte for byte what vault wrote before tags crossed the wire.
    private mutating func tagsThenData(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        var i = start
        while i < bytes.count {
            switch tagsStep {
            case .key:
                switch bytes[i] {
                case 0x54:  // T
                    tagsLiteral = Array(#"ags":["#.utf8)
                    tagsStep = .literal(thenTag: true)
                case 0x44:  // D
                    tagsLiteral = Array(#"ata":""#.utf8)
                    tagsStep = .literal(thenTag: false)
                default: throw refusal(#""Tags" or "Data""#, at: i)
                }
                matched = 0
                i += 1
            case .literal(let thenTag):
                guard bytes[i] == tagsLiteral[matched] else {
                    throw refusal(String(decoding: tagsLiteral[matched...], as: UTF8.self), at: i)
                }
                matched += 1
                i += 1
                if matched == tagsLiteral.count {
                    matched = 0
                    guard thenTag else {
                        tagsStep = .key
                        try done(handle)
                        return i
                    }
                    tagsStep = .tag
                }
            case .tag:
                guard try scanString(bytes, at: &i) else { return i }
                let tag = try closeString(at: i - 1)
                guard !tag.isEmpty, tag.utf8.count <= DocumentMetadata.maxTagBytes,
                    header.tags.count < DocumentMetadata.maxTags
                else {
                    throw refusal(
                        "at most \(DocumentMetadata.maxTags) tags of 1 to \(DocumentMetadata.maxTagBytes) bytes",
                        at: i - 1)
                }
                header.tags.append(tag)
                tagsStep = .afterTag
            case .afterTag:
                switch bytes[i] {
                case 0x2C: tagsStep = .tag  // ,
                case 0x5D:  // ]
                    tagsLiteral = Array(#","Data":""#.utf8)
                    tagsStep = .literal(thenTag: false)
                    matched = 0
                default: throw refusal(", or ]", at: i)
                }
                i += 1
            }
        }
        return i
    }

    /// The string in `token` (as sent, with its quotes), decoded and checked canonical.
    private mutating func closeString(at i: Int) throws -> String {
        var text: [UInt8] = []
        var j = 1
        while j < token.count - 1 {
            let b = token[j]
            j += 1
            guard b == 0x5C else {
                text.append(b)
                continue
            }
            let e = token[j]
            j += 1
            switch e {
            case 0x22, 0x5C: text.append(e)
            case 0x62: text.append(0x08)
            case 0x66: text.append(0x0C)
            case 0x6E: text.append(0x0A)
            case 0x72: text.append(0x0D)
            case 0x74: text.append(0x09)
            case 0x75:
                guard j + 4 <= token.count - 1,
                    let v = UInt8(String(decoding: token[j..<j + 4], as: UTF8.self), radix: 16)
                else { throw refusal("a canonical escape", at: i) }
                text.append(v)
                j += 4
            default: throw refusal("a canonical escape", at: i)
            }
        }
        guard let s = String(validating: text, as: UTF8.self),
            JSONString.quoted(s) == token
        else {
            throw refusal("a canonically escaped UTF-8 string", at: i)
        }
        token = []
        return s
    }

    /// Decodes base64 up to the closing quote; returns where decoding stopped.
    private mutating func data(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        var i = start
        out.removeAll(keepingCapacity: true)
        while i < bytes.count {
            let c = bytes[i]
            if c == 0x22 {
                try flush(handle)
                guard quantum.isEmpty else { throw refusal("base64 in groups of 4", at: i) }
                try endDocument(handle)
                try done(handle)  // the closing literal starts here
                return i
            }
            guard padded == 0 || c == 0x3D else { throw refusal("the end of the base64 after `=`", at: i) }
            if c == 0x3D {
                guard quantum.count >= 2 else { throw refusal("base64", at: i) }
                padded += 1
                quantum.append(0)
            } else {
                let v = Self.decode[Int(c)]
                guard v != 0xFF else { throw refusal("base64", at: i) }
                quantum.append(v)
            }
            i += 1
            if quantum.count == 4 {
                let n =
                    (UInt32(quantum[0]) << 18) | (UInt32(quantum[1]) << 12) | (UInt32(quantum[2]) << 6)
                    | UInt32(quantum[3])
                let keep = 3 - padded
                // Canonical: the bits a padded group leaves unused are zero.
                let unused = padded == 2 ? n & 0xFFFF : padded == 1 ? n & 0xFF : 0
                guard unused == 0 else { throw refusal("canonical base64 padding", at: i - 1) }
                out.append(UInt8(n >> 16))
                if keep > 1 { out.append(UInt8((n >> 8) & 0xFF)) }
                if keep > 2 { out.append(UInt8(n & 0xFF)) }
                quantum.removeAll(keepingCapacity: true)
                if padded > 0 { padded = 3 }  // nothing but the closing quote may follow
                if out.count >= 32 << 10 { try flush(handle) }
            }
        }
        try flush(handle)
        return i
    }

    /// Hands the decoded bytes so far to the caller.
    private mutating func flush(_ handle: (Event) throws -> Void) throws {
        guard !out.isEmpty else { return }
        decodedSize += UInt64(out.count)
        if let size = header.size, decodedSize > size {
            throw VaultError(
                .digestMismatch,
                "document \(documents + 1)\(named): its data is longer than the \(size) bytes its entry says")
        }
        if digests { digest.update(data: out) }
        try out.withUnsafeBytes { try handle(.data($0)) }
        out.removeAll(keepingCapacity: true)
    }

    private mutating func endDocument(_ handle: (Event) throws -> Void) throws {
        let sha = digests ? Array(digest.finalize()) : header.sha256 ?? []
        if let size = header.size, decodedSize != size {
            throw VaultError(
                .digestMismatch,
                "document \(documents + 1)\(named): its data is \(decodedSize) bytes, its entry says \(size)")
        }
        if digests, let expected = header.sha256, expected != sha {
            throw VaultError(
                .digestMismatch, "document \(documents + 1)\(named): its data does not have the SHA-256 its entry says")
        }
        try handle(.end(index: documents, size: decodedSize, sha256: sha))
        documents += 1
        header = Header()
    }

    /// Fails unless a document of `name`, `contentType` and `tags` is one the vault can keep (what
    /// ``VaultCore/DocumentMetadata`` allows), naming the `document` (from 1).
    package static func validate(name: String, contentType: String, tags: [String] = [], document: Int) throws {
        let metadata = DocumentMetadata(
            name: name, contentType: contentType, size: 0, sha256: [UInt8](repeating: 0, count: 32), addedAtMillis: 0,
            tags: tags)
        do {
            try metadata.validate()
        } catch let e as VaultError {
            throw VaultError(.headerMalformed, "document \(document): \(e.message)")
        }
    }

    /// ` (<id>)` for messages, when the entry named one.
    private var named: String { header.id.map { " (\($0))" } ?? "" }

    private func refusal(_ expected: String, at i: Int) -> VaultError {
        VaultError(
            .headerMalformed,
            "the payload is not vault's layout at byte \(offset + UInt64(i)) (document \(documents + 1)): "
                + "expected \(expected.prefix(40))")
    }
}
