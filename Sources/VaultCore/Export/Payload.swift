/// The canonical batch payload and its exact length. Pure: no I/O, no crypto.
///
/// ```
/// objects: {"Files":[{"Id":"…","Name":"…","ContentType":"…","Size":123,"SHA256":"<64 hex>","Data":"<base64>"},…]}
///          (`"Tags":["…",…]` between `SHA256` and `Data` for a document that has tags)
/// strings: {"Files":["<base64>",…]}
/// ```
/// Exactly these keys in this order, no whitespace, strings escaped canonically (RFC 8259),
/// standard padded base64 without line breaks. Because every byte is determined by the
/// documents' metadata, a payload's length is known before its first byte is written.
public enum PayloadShape: String, CaseIterable, Sendable {
    /// One object per document with its metadata and `Data`.
    case objects
    /// One bare base64 string per document.
    case strings
}

/// The framing bytes of one document's entry; the base64 goes between them.
package struct PayloadEntry: Sendable {
    /// Bytes before the base64 (`{"Id":…,"Data":"` or `"`).
    package let prefix: [UInt8]
    /// Bytes after it (`"}` or `"`).
    package let suffix: [UInt8]
    /// Length of the document's base64.
    package let dataLength: UInt64

    /// The entry of `record` in `shape`.
    package init(_ record: DocumentRecord, shape: PayloadShape) {
        let m = record.metadata
        switch shape {
        case .objects:
            var p = Array("{\"Id\":\"\(record.id.hex)\",\"Name\":".utf8)
            p += JSONString.quoted(m.name)
            p += Array(",\"ContentType\":".utf8) + JSONString.quoted(m.contentType)
            p += Array(",\"Size\":\(m.size),\"SHA256\":\"\(Hex.encode(m.sha256))\"".utf8)
            p += Self.tagsMember(m.tags)
            p += Array(",\"Data\":\"".utf8)
            prefix = p
        case .strings:
            prefix = [0x22]
        }
        suffix = Self.suffix(shape)
        dataLength = Base64.encodedLength(m.size)
    }

    /// `,"Tags":["a","b"]`, or nothing for a document without tags: a payload of untagged
    /// documents is the layout vault wrote before tags crossed the wire, which every back office
    /// written for it reads.
    package static func tagsMember(_ tags: [String]) -> [UInt8] {
        guard !tags.isEmpty else { return [] }
        var out = Array(",\"Tags\":[".utf8)
        for (i, t) in tags.enumerated() {
            if i > 0 { out.append(0x2C) }
            out += JSONString.quoted(t)
        }
        out.append(0x5D)
        return out
    }

    /// The bytes after an entry's base64 in `shape` (`"}` or `"`): the same for every document.
    package static func suffix(_ shape: PayloadShape) -> [UInt8] {
        switch shape {
        case .objects: [0x22, 0x7D]
        case .strings: [0x22]
        }
    }

    /// Bytes of the whole entry.
    package var length: UInt64 { UInt64(prefix.count + suffix.count) + dataLength }
}

/// A form's `manifest` part (docs/UPLOAD.md), the one writer of its entries for the station that
/// sends it and the receiver that checks it was written canonically.
package enum FormManifest {
    /// One document's entry: its keys sorted, no whitespace, `"tags"` last and only when the
    /// document has tags; `"dataHeader"` (the SHA-256 of its data file's header) only in a
    /// sealed form's manifest with a batch proof.
    package static func entry(
        id: DocumentID, name: String, contentType: String, sha256: [UInt8], size: UInt64, tags: [String],
        dataHeader: [UInt8]? = nil
    ) -> [UInt8] {
        var out = Array("{\"contentType\":".utf8) + JSONString.quoted(contentType)
        if let dataHeader { out += Array(",\"dataHeader\":\"\(Hex.encode(dataHeader))\"".utf8) }
        out += Array(",\"id\":\"\(id.hex)\",\"name\":".utf8) + JSONString.quoted(name)
        out += Array(",\"sha256\":\"\(Hex.encode(sha256))\",\"size\":\(size)".utf8)
        if !tags.isEmpty {
            out += Array(",\"tags\":[".utf8)
            for (i, t) in tags.enumerated() {
                if i > 0 { out.append(0x2C) }
                out += JSONString.quoted(t)
            }
            out.append(0x5D)
        }
        return out + [0x7D]
    }

    /// A captured form's manifest (docs/UPLOAD.md, "From a capture-only station"): the batch, and
    /// each document's id with the size and SHA-256 of its sealed pair; nothing else crosses in
    /// the clear. Canonical: keys sorted, no whitespace.
    package static func captured(
        batch: Int, of: Int, documents: [(id: DocumentID, size: UInt64, sha256: [UInt8])]
    ) -> [UInt8] {
        var out = Array("{\"batch\":\(batch),\"captured\":\"\(PayloadSealing.format)\",\"documents\":[".utf8)
        for (i, d) in documents.enumerated() {
            if i > 0 { out.append(0x2C) }
            out += Array("{\"id\":\"\(d.id.hex)\",\"sha256\":\"\(Hex.encode(d.sha256))\",\"size\":\(d.size)}".utf8)
        }
        return out + Array("],\"of\":\(of)}".utf8)
    }
}

/// Framing of the whole payload.
package enum PayloadFraming {
    /// `{"Files":[`
    package static let open = Array("{\"Files\":[".utf8)
    /// `]}`
    package static let close = Array("]}".utf8)
    /// `,` between entries.
    package static let separator: UInt8 = 0x2C
}

/// Where each part of a payload lies, from the documents' metadata alone: the opening framing,
/// each document's head (a JSON entry's separating comma and the bytes before its base64, or a
/// form part's headers), its data and its tail, and the closing framing. Pure; what lets a
/// producer start at any byte offset.
package struct PayloadLayout: Sendable {
    /// A part of the payload.
    package enum Part: Sendable, Equatable {
        /// `{"Files":[`, or a form's text fields and manifest.
        case open
        /// Document `i`'s separator (not for the first) and the bytes before its base64.
        case head(Int)
        /// Document `i`'s base64.
        case data(Int)
        /// Document `i`'s bytes after its base64.
        case tail(Int)
        /// `]}`, or a form's closing delimiter.
        case close
    }

    /// One part and where it lies.
    package struct Span: Sendable, Equatable {
        /// Which part.
        package let part: Part
        /// Its first byte's offset in the payload.
        package let offset: UInt64
        /// Its length (a document's data may be empty).
        package let length: UInt64
    }

    /// The parts in order; together they are the whole payload.
    package let spans: [Span]
    /// The payload's length.
    package var length: UInt64 { spans.last.map { $0.offset + $0.length } ?? 0 }

    /// The layout of the payload of `records`, in this order, in `shape`.
    package init(_ records: [DocumentRecord], shape: PayloadShape) {
        self.init(records, format: .json(shape))
    }

    /// The layout of the payload of `records`, in this order, in `format`.
    package init(_ records: [DocumentRecord], format: PayloadFormat) {
        var spans: [Span] = []
        var at: UInt64 = 0
        func add(_ part: Part, _ length: UInt64) {
            spans.append(Span(part: part, offset: at, length: length))
            at += length
        }
        add(.open, UInt64(format.openingLength(records)))
        for (i, r) in records.enumerated() {
            add(.head(i), UInt64(format.headLength(r, first: i == 0)))
            add(.data(i), format.dataLength(r))
            add(.tail(i), UInt64(format.tail(r).count))
        }
        add(.close, UInt64(format.closing.count))
        self.spans = spans
    }

    /// The part holding byte `offset` (never an empty one), or nil at or past the end.
    package func span(containing offset: UInt64) -> Span? {
        var low = 0, high = spans.count - 1
        guard offset < length else { return nil }
        while low < high {  // the last span starting at or before offset
            let mid = (low + high + 1) / 2
            if spans[mid].offset <= offset { low = mid } else { high = mid - 1 }
        }
        var i = low
        while spans[i].length == 0 || spans[i].offset + spans[i].length <= offset { i += 1 }
        return spans[i]
    }
}
