/// How a batch's documents are framed into one payload: the canonical JSON of docs/EXPORT.md
/// (base64 data), or raw document bytes in a framing a transport defines (VaultUpload's
/// `multipart/form-data` body). Either way every byte follows from the documents' metadata, so
/// the length is known before the first byte and a producer can start at any offset
/// (``PayloadLayout``).
package enum PayloadFormat: Sendable {
    /// `{"Files":[…]}` in a shape.
    case json(PayloadShape)
    /// Each document's raw bytes, framed by a transport's ``RawFraming`` (sealed when the
    /// framing has a sealing).
    case raw(any RawFraming)
    /// `{"Sealed":"age-encryption.org/v1","Files":[{"Id":…,"Metadata":…,"Data":…},…]}`: each
    /// document's metadata and data as age files (base64) to the sealing's recipients.
    case sealed(PayloadSealing)
    /// `{"Captured":"age-encryption.org/v1","Files":[{"Id":…,"Size":…,"SHA256":…,"Metadata":…,"Data":…},…]}`:
    /// a capture-only station's documents, their age files as they were sealed at capture (or
    /// those files raw, in the files' framing, when they have one).
    case captured(CapturedFiles)

    /// The sealing, when documents leave encrypted to recipients.
    package var sealing: PayloadSealing? {
        switch self {
        case .json, .captured: nil
        case .raw(let f): f.sealing
        case .sealed(let s): s
        }
    }

    /// The `Content-Type` of the payload.
    package var contentType: String {
        switch self {
        case .json, .sealed: "application/json"
        case .captured(let c): c.framing?.contentType ?? "application/json"
        case .raw(let f): f.contentType
        }
    }

    /// True when document data is base64-encoded (JSON); false when raw.
    var encodesBase64: Bool {
        switch self {
        case .raw: false
        case .captured(let c): c.framing == nil
        case .json, .sealed: true
        }
    }

    /// Bytes of a document's data in the payload (an age file's when sealed or captured).
    func dataLength(_ record: DocumentRecord) -> UInt64 {
        if case .captured(let c) = self { return dataLength(bytes: c.dataFileLength(record)) }
        return dataLength(bytes: record.metadata.size)
    }

    /// Bytes in the payload of `n` bytes of a document's data (sealed first, when sealing).
    func dataLength(bytes n: UInt64) -> UInt64 {
        if case .captured = self { return encodesBase64 ? Base64.encodedLength(n) : n }
        let sealed = sealing?.fileLength(n) ?? n
        return encodesBase64 ? Base64.encodedLength(sealed) : sealed
    }

    /// Bytes before the first document: `{"Files":[`, or the framing's opening.
    package func opening(_ records: [DocumentRecord]) -> [UInt8] {
        switch self {
        case .json: PayloadFraming.open
        case .raw(let f): f.opening(records)
        case .sealed: SealedEntry.open
        case .captured(let c): c.framing?.capturedOpening(records) ?? CapturedFiles.open
        }
    }

    /// The opening's length, without sealing anything.
    func openingLength(_ records: [DocumentRecord]) -> Int {
        if case .raw(let f) = self { return f.openingLength(records) }
        return opening(records).count
    }

    /// A document's bytes before its data (with the separator JSON needs after the first).
    package func head(_ record: DocumentRecord, first: Bool) -> [UInt8] {
        switch self {
        case .json(let shape): (first ? [] : [PayloadFraming.separator]) + PayloadEntry(record, shape: shape).prefix
        case .raw(let f): f.head(record)
        case .sealed(let s):
            (first ? [] : [PayloadFraming.separator]) + SealedEntry.idPrefix(record)
                + Base64.encode(s.sealWhole(s.metadata(record), slot: .metadata(record.id)))
                + SealedEntry.dataPrefix
        case .captured:
            // Its metadata file is read by the producer, which makes the head (CapturedFiles.head).
            preconditionFailure("internal error: a captured document's head is made from its metadata file")
        }
    }

    /// The head's length, without sealing anything.
    func headLength(_ record: DocumentRecord, first: Bool) -> Int {
        switch self {
        case .json: head(record, first: first).count
        case .raw(let f): f.headLength(record)
        case .sealed(let s):
            (first ? 0 : 1) + SealedEntry.idPrefix(record).count
                + Int(Base64.encodedLength(s.metadataFileLength(record)))
                + SealedEntry.dataPrefix.count
        case .captured(let c): c.headLength(record, first: first)
        }
    }

    /// A document's bytes after its data.
    package func tail(_ record: DocumentRecord) -> [UInt8] {
        switch self {
        case .json(let shape): PayloadEntry.suffix(shape)  // no entry built just for its constant tail
        case .raw(let f): f.tail(record)
        case .sealed: SealedEntry.suffix
        case .captured(let c): c.framing?.tail(record) ?? SealedEntry.suffix
        }
    }

    /// The bytes after the last document.
    package var closing: [UInt8] {
        switch self {
        case .json, .sealed: PayloadFraming.close
        case .captured(let c): c.framing?.closing ?? PayloadFraming.close
        case .raw(let f): f.closing
        }
    }

    /// The same format with a raw framing's variable fields at their widest (for planning).
    var widest: PayloadFormat {
        switch self {
        case .json, .sealed: self
        case .captured(let c): .captured(c.framed(c.framing?.widest))
        case .raw(let f): .raw(f.widest)
        }
    }

    /// The exact payload length for `records`, in this order: the one calculation of it, from
    /// the same parts the producer writes.
    package func length(of records: [DocumentRecord]) -> UInt64 {
        var n = UInt64(openingLength(records) + closing.count)
        for (i, r) in records.enumerated() {
            n += UInt64(headLength(r, first: i == 0) + tail(r).count) + dataLength(r)
        }
        return n
    }
}

/// How a transport frames documents' raw bytes into one payload (VaultUpload's
/// `multipart/form-data` body): every byte but the documents' own, from their metadata alone,
/// so the payload's length is known before its first byte and a producer can start at any
/// offset. The core produces each document's bytes, decrypted and authenticated, between its
/// head and its tail.
package protocol RawFraming: Sendable {
    /// The payload's `Content-Type`.
    var contentType: String { get }
    /// Bytes before the first document (they may describe every document, as a manifest does).
    func opening(_ records: [DocumentRecord]) -> [UInt8]
    /// A document's bytes before its data.
    func head(_ record: DocumentRecord) -> [UInt8]
    /// A document's bytes after its data.
    func tail(_ record: DocumentRecord) -> [UInt8]
    /// The bytes after the last document.
    var closing: [UInt8] { get }
    /// The same framing with its variable fields at their widest (a batch number not known
    /// while batches are planned): lengths computed with it bound the real ones from above.
    var widest: any RawFraming { get }
    /// The sealing of its documents (and whatever describes them), when they leave encrypted.
    var sealing: PayloadSealing? { get }
    /// The same framing, sealing its documents and what describes them with `sealing`.
    func sealed(_ sealing: PayloadSealing) -> any RawFraming
    /// Bytes before the first of a capture-only station's documents (``PayloadFormat/captured(_:)``):
    /// they may name each document's id and the size and SHA-256 of its sealed pair, nothing more.
    func capturedOpening(_ records: [DocumentRecord]) -> [UInt8]
    /// A captured document's bytes before its data age file, given its metadata age file.
    func capturedHead(_ record: DocumentRecord, metadata: [UInt8]) -> [UInt8]
    /// The opening's length, without sealing anything.
    func openingLength(_ records: [DocumentRecord]) -> Int
    /// A document head's length, without sealing anything.
    func headLength(_ record: DocumentRecord) -> Int
}

extension RawFraming {
    /// No sealing: the documents' plaintext.
    package var sealing: PayloadSealing? { nil }
    package func openingLength(_ records: [DocumentRecord]) -> Int { opening(records).count }
    package func headLength(_ record: DocumentRecord) -> Int { head(record).count }
}

/// The framing bytes of a sealed JSON payload's entries.
enum SealedEntry {
    static let open = Array("{\"Sealed\":\"\(PayloadSealing.format)\",\"Files\":[".utf8)
    static func idPrefix(_ record: DocumentRecord) -> [UInt8] {
        Array("{\"Id\":\"\(record.id.hex)\",\"Metadata\":\"".utf8)
    }
    static let dataPrefix = Array("\",\"Data\":\"".utf8)
    static let suffix = Array("\"}".utf8)
}
