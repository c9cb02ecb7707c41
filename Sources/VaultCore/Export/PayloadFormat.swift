/// How a batch's documents are framed into one payload: the canonical JSON of docs/EXPORT.md
/// (base64 data), or raw document bytes in a framing a transport defines (VaultUpload's
/// `multipart/form-data` body). Either way every byte follows from the documents' metadata, so
/// the length is known before the first byte and a producer can start at any offset
/// (``PayloadLayout``).
package enum PayloadFormat: Sendable {
    /// `{"Files":[…]}` in a shape.
    case json(PayloadShape)
    /// Each document's raw bytes, framed by a transport's ``RawFraming``.
    case raw(any RawFraming)

    /// The `Content-Type` of the payload.
    package var contentType: String {
        switch self {
        case .json: "application/json"
        case .raw(let f): f.contentType
        }
    }

    /// True when document data is base64-encoded (JSON); false when raw.
    var encodesBase64: Bool {
        if case .json = self { return true }
        return false
    }

    /// Bytes of a document's data in the payload.
    func dataLength(_ size: UInt64) -> UInt64 {
        encodesBase64 ? Base64.encodedLength(size) : size
    }

    /// Bytes before the first document: `{"Files":[`, or the framing's opening.
    func opening(_ records: [DocumentRecord]) -> [UInt8] {
        switch self {
        case .json: PayloadFraming.open
        case .raw(let f): f.opening(records)
        }
    }

    /// A document's bytes before its data (with the separator JSON needs after the first).
    func head(_ record: DocumentRecord, first: Bool) -> [UInt8] {
        switch self {
        case .json(let shape): (first ? [] : [PayloadFraming.separator]) + PayloadEntry(record, shape: shape).prefix
        case .raw(let f): f.head(record)
        }
    }

    /// A document's bytes after its data.
    func tail(_ record: DocumentRecord) -> [UInt8] {
        switch self {
        case .json(let shape): PayloadEntry.suffix(shape)  // no entry built just for its constant tail
        case .raw(let f): f.tail(record)
        }
    }

    /// The bytes after the last document.
    var closing: [UInt8] {
        switch self {
        case .json: PayloadFraming.close
        case .raw(let f): f.closing
        }
    }

    /// The same format with a raw framing's variable fields at their widest (for planning).
    var widest: PayloadFormat {
        switch self {
        case .json: self
        case .raw(let f): .raw(f.widest)
        }
    }

    /// The exact payload length for `records`, in this order: the one calculation of it, from
    /// the same parts the producer writes.
    package func length(of records: [DocumentRecord]) -> UInt64 {
        var n = UInt64(opening(records).count + closing.count)
        for (i, r) in records.enumerated() {
            n += UInt64(head(r, first: i == 0).count + tail(r).count) + dataLength(r.metadata.size)
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
}
