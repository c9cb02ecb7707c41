/// The canonical batch payload and its exact length. Pure: no I/O, no crypto.
///
/// ```
/// objects: {"Files":[{"Id":"…","Name":"…","ContentType":"…","Size":123,"SHA256":"<64 hex>","Data":"<base64>"},…]}
/// strings: {"Files":["<base64>",…]}
/// ```
/// Exactly these keys in this order, no whitespace, strings escaped by ``JSONString``,
/// standard padded base64 without line breaks. Because every byte is determined by the
/// documents' metadata, a payload's length is known before its first byte is written.
public enum PayloadShape: String, CaseIterable, Sendable {
    /// One object per document with its metadata and `Data`.
    case objects
    /// One bare base64 string per document.
    case strings
}

/// The framing bytes of one document's entry; the base64 goes between them.
public struct PayloadEntry: Sendable {
    /// Bytes before the base64 (`{"Id":…,"Data":"` or `"`).
    public let prefix: [UInt8]
    /// Bytes after it (`"}` or `"`).
    public let suffix: [UInt8]
    /// Length of the document's base64.
    public let dataLength: UInt64

    /// The entry of `record` in `shape`.
    public init(_ record: DocumentRecord, shape: PayloadShape) {
        let m = record.metadata
        switch shape {
        case .objects:
            var p = Array("{\"Id\":\"\(record.id.hex)\",\"Name\":".utf8)
            p += JSONString.quoted(m.name)
            p += Array(",\"ContentType\":".utf8) + JSONString.quoted(m.contentType)
            p += Array(",\"Size\":\(m.size),\"SHA256\":\"\(Hex.encode(m.sha256))\",\"Data\":\"".utf8)
            prefix = p
            suffix = Array("\"}".utf8)
        case .strings:
            prefix = [0x22]
            suffix = [0x22]
        }
        dataLength = Base64.encodedLength(m.size)
    }

    /// Bytes of the whole entry.
    public var length: UInt64 { UInt64(prefix.count + suffix.count) + dataLength }
}

/// Framing of the whole payload.
public enum PayloadFraming {
    /// `{"Files":[`
    public static let open = Array("{\"Files\":[".utf8)
    /// `]}`
    public static let close = Array("]}".utf8)
    /// `,` between entries.
    public static let separator: UInt8 = 0x2C

    /// Exact payload length for these documents, in this shape.
    public static func length(of records: [DocumentRecord], shape: PayloadShape) -> UInt64 {
        let entries = records.reduce(UInt64(0)) { $0 + PayloadEntry($1, shape: shape).length }
        return UInt64(open.count + close.count) + entries + UInt64(max(0, records.count - 1))
    }
}
