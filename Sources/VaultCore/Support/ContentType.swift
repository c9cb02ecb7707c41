/// Content-type detection from a document's first bytes (magic numbers), when no type is given.
package enum ContentType {
    /// The fallback for unknown binary data.
    package static let octetStream = "application/octet-stream"

    /// The MIME type the leading bytes indicate: JPEG, PNG, PDF, HEIC/HEIF, TIFF, GIF, WebP, or
    /// plain text (valid UTF-8 without control characters other than tab, CR, LF, FF);
    /// otherwise `application/octet-stream`.
    package static func sniff(_ head: UnsafeRawBufferPointer) -> String {
        // Read in place: a copy of a document's first bytes would outlive it, unwiped (found by
        // a review in a core image of an add).
        let b = UnsafeRawBufferPointer(rebasing: head.prefix(4096))
        func starts(_ s: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + s.count && b[offset..<offset + s.count].elementsEqual(s)
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

    private static func isText(_ b: UnsafeRawBufferPointer, complete: Bool) -> Bool {
        if b.contains(where: { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains($0) || $0 == 0x7F }) { return false }
        if isUTF8(b[...]) { return true }
        // A multi-byte character may be cut at the 4096-byte sample's end: drop up to 3 bytes.
        guard !complete else { return false }
        for cut in 1...3 where b.count > cut {
            if isUTF8(b.dropLast(cut)) { return true }
        }
        return false
    }

    /// Whether `bytes` are valid UTF-8, decoded in place (no String made of them).
    private static func isUTF8(_ bytes: Slice<UnsafeRawBufferPointer>) -> Bool {
        var input = bytes.makeIterator()
        var decoder = Unicode.UTF8.ForwardParser()
        while true {
            switch decoder.parseScalar(from: &input) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// The type of a document named `name` whose first bytes are `head`: from the bytes
    /// (``sniff(_:)``), made more specific by the name's extension when the bytes agree with it —
    /// text that is `.csv`, `.md` or `.json`; a ZIP that is `.docx`, `.xlsx`, `.odt`…; an ISO
    /// media file that is `.mp4`, `.mov` or `.m4a`. An empty file's extension alone tells (an
    /// empty `notes.txt` is still text); else `application/octet-stream`. An extension never
    /// makes binary bytes text, nor text a binary type.
    package static func detect(_ head: UnsafeRawBufferPointer, name: String) -> String {
        let ext = name.contains(".") ? name.split(separator: ".").last.map { $0.lowercased() } : nil
        guard !head.isEmpty else { return ext.flatMap { byExtension[$0] ?? byContainer[$0]?.type } ?? octetStream }
        let sniffed = sniff(head)
        guard let ext else { return sniffed }
        if sniffed == "text/plain", let type = byExtension[ext], isText(type) || type == "application/xml" {
            return type
        }
        if sniffed == octetStream, let c = byContainer[ext], head.count >= c.at + c.magic.count,
            head[c.at..<c.at + c.magic.count].elementsEqual(c.magic)
        {
            return c.type
        }
        return sniffed
    }

    /// Types an empty file's extension tells, and a text file's.
    static let byExtension = [
        "txt": "text/plain", "text": "text/plain", "md": "text/markdown", "markdown": "text/markdown",
        "csv": "text/csv", "tsv": "text/tab-separated-values", "html": "text/html", "htm": "text/html",
        "xml": "application/xml", "json": "application/json", "pdf": "application/pdf", "jpg": "image/jpeg",
        "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp", "tif": "image/tiff",
        "tiff": "image/tiff", "heic": "image/heic", "heif": "image/heif"
    ]

    /// Types of files in a container format the bytes show (its magic, at its offset) and only
    /// the extension tells apart: Office Open XML and OpenDocument files are ZIP archives, MP4,
    /// QuickTime and M4A files ISO media files.
    static let byContainer: [String: (magic: [UInt8], at: Int, type: String)] = {
        let zip: [UInt8] = [0x50, 0x4B, 0x03, 0x04], media = Array("ftyp".utf8)
        let office = "application/vnd.openxmlformats-officedocument."
        let open = "application/vnd.oasis.opendocument."
        return [
            "docx": (zip, 0, office + "wordprocessingml.document"),
            "xlsx": (zip, 0, office + "spreadsheetml.sheet"),
            "pptx": (zip, 0, office + "presentationml.presentation"),
            "odt": (zip, 0, open + "text"), "ods": (zip, 0, open + "spreadsheet"),
            "odp": (zip, 0, open + "presentation"), "zip": (zip, 0, "application/zip"),
            "mp4": (media, 4, "video/mp4"), "m4v": (media, 4, "video/mp4"), "mov": (media, 4, "video/quicktime"),
            "m4a": (media, 4, "audio/mp4")
        ]
    }()

    /// True for types that are safe to print on a terminal.
    package static func isText(_ type: String) -> Bool {
        type.hasPrefix("text/") || type == "application/json"
    }
}
