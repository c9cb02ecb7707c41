/// How a batch's documents are framed into one payload: the canonical JSON of docs/EXPORT.md
/// (base64 data), or a `multipart/form-data` body (RFC 7578) with each document's raw bytes.
/// Either way every byte follows from the documents' metadata, so the length is known before
/// the first byte and a producer can start at any offset (``PayloadLayout``).
public enum PayloadFormat: Sendable, Equatable {
    /// `{"Files":[…]}` in a shape.
    case json(PayloadShape)
    /// One form part per document.
    case form(FormBody)

    /// The `Content-Type` of the payload.
    public var contentType: String {
        switch self {
        case .json: "application/json"
        case .form(let f): "multipart/form-data; boundary=\(f.boundary)"
        }
    }

    /// True when document data is base64-encoded (JSON); false when raw (form).
    var encodesBase64: Bool {
        if case .json = self { return true }
        return false
    }

    /// Bytes of a document's data in the payload.
    func dataLength(_ size: UInt64) -> UInt64 {
        encodesBase64 ? Base64.encodedLength(size) : size
    }

    /// Bytes before the first document: `{"Files":[`, or the text fields and manifest parts.
    func opening(_ records: [DocumentRecord]) -> [UInt8] {
        switch self {
        case .json: PayloadFraming.open
        case .form(let f): f.opening(records)
        }
    }

    /// A document's bytes before its data (with the separator JSON needs after the first).
    func head(_ record: DocumentRecord, first: Bool) -> [UInt8] {
        switch self {
        case .json(let shape): (first ? [] : [PayloadFraming.separator]) + PayloadEntry(record, shape: shape).prefix
        case .form(let f): f.head(record)
        }
    }

    /// A document's bytes after its data.
    func tail(_ record: DocumentRecord) -> [UInt8] {
        switch self {
        case .json(let shape): PayloadEntry(record, shape: shape).suffix
        case .form: FormBody.crlf
        }
    }

    /// The bytes after the last document.
    var closing: [UInt8] {
        switch self {
        case .json: PayloadFraming.close
        case .form(let f): Array("--\(f.boundary)--\r\n".utf8)
        }
    }

    /// The exact payload length for `records`, in this order.
    public func length(of records: [DocumentRecord]) -> UInt64 { PayloadLayout(records, format: self).length }
}

/// A `multipart/form-data` body (RFC 7578), as PHP's `$_FILES`, Django, Rails and multer take
/// files: text fields, then a `manifest` part (JSON: the batch's number and each document's id,
/// name, content type, size and SHA-256), then one file part per document carrying its raw
/// plaintext, then the closing delimiter.
///
/// Written by hand: the body must be produced while it is sent, from any offset, with its exact
/// length known up front; multipart-kit and NIO's helpers build bodies in memory.
public struct FormBody: Sendable, Equatable {
    /// A text field (`--form-field name=value`).
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The delimiter; it must not occur in any document. Callers derive it from a keyed digest
    /// (the batch's Idempotency-Key), so nobody without the vault key can plant it in a document.
    public var boundary: String
    /// The file parts' field name (default `files[]`).
    public var fieldName: String
    /// Text fields, in order.
    public var fields: [Field]
    /// The batch's 1-based number and the run's batch count, for the manifest.
    public var batch: Int
    public var of: Int

    /// A form body.
    public init(boundary: String, fieldName: String = "files[]", fields: [Field] = [], batch: Int, of: Int) {
        self.boundary = boundary
        self.fieldName = fieldName
        self.fields = fields
        self.batch = batch
        self.of = of
    }

    static let crlf: [UInt8] = [0x0D, 0x0A]

    /// A name or file name inside `Content-Disposition`'s quotes: UTF-8, with `"`, CR and LF
    /// percent-encoded as browsers do (the HTML standard's multipart/form-data encoding).
    public static func quotedName(_ name: String) -> String {
        var out = "\""
        for c in name.unicodeScalars {
            switch c {
            case "\"": out += "%22"
            // Not in the HTML standard's list, but PHP reads a backslash as an escape (a name
            // ending in one swallows the closing quote) and werkzeug drops the part: both take
            // %5C as three plain characters. The exact name is in the manifest part.
            case "\\": out += "%5C"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// The manifest part's JSON (canonical: sorted keys, no whitespace).
    public func manifest(_ records: [DocumentRecord]) -> [UInt8] {
        var out = Array("{\"batch\":\(batch),\"documents\":[".utf8)
        for (i, r) in records.enumerated() {
            if i > 0 { out.append(PayloadFraming.separator) }
            out += Array("{\"contentType\":".utf8) + JSONString.quoted(r.metadata.contentType)
            out += Array(",\"id\":\"\(r.id.hex)\",\"name\":".utf8) + JSONString.quoted(r.metadata.name)
            out += Array(",\"sha256\":\"\(Hex.encode(r.metadata.sha256))\",\"size\":\(r.metadata.size)}".utf8)
        }
        return out + Array("],\"of\":\(of)}".utf8)
    }

    func opening(_ records: [DocumentRecord]) -> [UInt8] {
        var out: [UInt8] = []
        for f in fields {
            out += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quotedName(f.name))\r\n\r\n".utf8)
            out += Array(f.value.utf8) + Self.crlf
        }
        out += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"\r\nContent-Type: application/json\r\n\r\n".utf8)
        return out + manifest(records) + Self.crlf
    }

    func head(_ record: DocumentRecord) -> [UInt8] {
        Array(("--\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quotedName(fieldName)); "
               + "filename=\(Self.quotedName(record.metadata.name))\r\nContent-Type: \(record.metadata.contentType)\r\n\r\n").utf8)
    }
}
