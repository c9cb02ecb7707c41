/// Content-type detection from a document's first bytes (magic numbers), when no type is given.
package enum ContentType {
    /// The fallback for unknown binary data.
    package static let octetStream = "application/octet-stream"

    /// The MIME type the leading bytes indicate: JPEG, PNG, PDF, HEIC/HEIF, TIFF, GIF, WebP, or
    /// plain text (valid UTF-8 without control characters other than tab, CR, LF, FF);
    /// otherwise `application/octet-stream`.
    package static func sniff(_ head: UnsafeRawBufferPointer) -> String {
        let b = Array(head.prefix(4096))
        func starts(_ s: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + s.count && Array(b[offset..<offset + s.count]) == s
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("%PDF-".utf8)) { return "application/pdf" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        if starts(Array("ftyp".utf8), at: 4), b.count >= 12 {
            let brand = String(decoding: b[8..<12], as: UTF8.self)
            if ["heic", "heix", "hevc", "hevx", "heim", "heis"].contains(brand) { return "image/heic" }
            if ["mif1", "msf1"].contains(brand) { return "image/heif" }
        }
        if !b.isEmpty, isText(b, complete: head.count <= 4096) { return "text/plain" }
        return octetStream
    }

    private static func isText(_ b: [UInt8], complete: Bool) -> Bool {
        if b.contains(where: { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains($0) || $0 == 0x7F }) { return false }
        if String(validating: b, as: UTF8.self) != nil { return true }
        // A multi-byte character may be cut at the 4096-byte sample's end: drop up to 3 bytes.
        guard !complete else { return false }
        for cut in 1...3 where b.count > cut {
            if String(validating: b.dropLast(cut), as: UTF8.self) != nil { return true }
        }
        return false
    }

    /// The type of a document named `name` whose first bytes are `head`: from the bytes when
    /// there are any (``sniff(_:)``), from the name's extension when there are none (an empty
    /// `notes.txt` is still text), else `application/octet-stream`.
    package static func detect(_ head: UnsafeRawBufferPointer, name: String) -> String {
        guard head.isEmpty else { return sniff(head) }
        let ext = name.split(separator: ".", omittingEmptySubsequences: false).last.map { $0.lowercased() }
        guard name.contains("."),
              let ext else { return octetStream }
        return byExtension[ext] ?? octetStream
    }

    /// Types an empty file's extension tells.
    static let byExtension = [
        "txt": "text/plain", "text": "text/plain", "md": "text/markdown", "csv": "text/csv", "html": "text/html",
        "htm": "text/html", "xml": "application/xml", "json": "application/json", "pdf": "application/pdf",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "tif": "image/tiff", "tiff": "image/tiff", "heic": "image/heic", "heif": "image/heif"
    ]

    /// True for types that are safe to print on a terminal.
    package static func isText(_ type: String) -> Bool {
        type.hasPrefix("text/") || type == "application/json"
    }
}
