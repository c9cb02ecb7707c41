import VaultCore

/// A `multipart/form-data` body (RFC 7578), as PHP's `$_FILES`, Django, Rails and multer take
/// files: text fields, then a `manifest` part (JSON: the batch's number and each document's id,
/// name, content type, size, SHA-256 and tags), then one file part per document carrying its raw
/// plaintext, then the closing delimiter.
///
/// Written by hand: the body must be produced while it is sent, from any offset, with its exact
/// length known up front; multipart-kit and NIO's helpers build bodies in memory.
package struct FormBody: RawFraming, Equatable {
    /// A text field sent with every batch.
    package typealias Field = FormField

    /// The delimiter; it must not occur in any document. Callers derive it from a keyed digest
    /// (the batch's Idempotency-Key), so nobody without the vault key can plant it in a document.
    package var boundary: String
    /// The file parts' field name (default `files[]`).
    package var fieldName: String
    /// Text fields, in order.
    package var fields: [Field]
    /// The batch's 1-based number and the run's batch count, for the manifest.
    package var batch: Int
    package var of: Int
    /// When sealed: the manifest part and each file part are age files to the sealing's
    /// recipients (`manifest.json.age`, `<id>.age`, application/octet-stream; docs/UPLOAD.md).
    package var sealing: PayloadSealing?

    /// A form body.
    package init(boundary: String, fieldName: String = "files[]", fields: [Field] = [], batch: Int, of: Int) {
        self.boundary = boundary
        self.fieldName = fieldName
        self.fields = fields
        self.batch = batch
        self.of = of
    }

    static let crlf: [UInt8] = [0x0D, 0x0A]

    package var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    package func tail(_ record: DocumentRecord) -> [UInt8] { Self.crlf }

    package var closing: [UInt8] { Array("--\(boundary)--\r\n".utf8) }

    /// Five-digit batch number and count: no run has more batches.
    package var widest: any RawFraming {
        var w = self
        (w.batch, w.of) = (99_999, 99_999)
        return w
    }

    /// A name or file name inside `Content-Disposition`'s quotes: UTF-8, with `"`, CR and LF
    /// percent-encoded as browsers do (the HTML standard's multipart/form-data encoding).
    package static func quotedName(_ name: String) -> String {
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
    package func manifest(_ records: [DocumentRecord]) -> [UInt8] { manifest(records, forLength: false) }

    /// The manifest; `forLength`: with placeholder data header digests, of the same length (no
    /// key is made for a length).
    private func manifest(_ records: [DocumentRecord], forLength: Bool) -> [UInt8] {
        var out = Array("{\"batch\":\(batch),\"documents\":[".utf8)
        for (i, r) in records.enumerated() {
            if i > 0 { out.append(0x2C) }
            let m = r.metadata
            out += FormManifest.entry(
                id: r.id, name: m.name, contentType: m.contentType, sha256: m.sha256, size: m.size, tags: m.tags,
                dataHeader: dataHeader(r.id, forLength: forLength))
        }
        out += Array("],\"of\":\(of)".utf8)
        if let proof = sealing?.batchProof { out += Array(",\"proof\":\"\(Hex.encode(proof))\"".utf8) }
        return out + [0x7D]
    }

    private func dataHeader(_ id: DocumentID, forLength: Bool) -> [UInt8]? {
        guard let sealing, sealing.batchProof != nil else { return nil }
        return forLength ? [UInt8](repeating: 0, count: 32) : sealing.dataHeaderDigest(id)
    }

    package func sealed(_ sealing: PayloadSealing) -> any RawFraming {
        var s = self
        s.sealing = sealing
        return s
    }

    /// The manifest part's headers.
    private var manifestHead: [UInt8] {
        sealing == nil
            ? Array(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"\r\n"
                    .utf8) + Array("Content-Type: application/json\r\n\r\n".utf8)
            : Array(
                """
                --\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"; filename=\"manifest.json.age\"\r\n\
                Content-Type: application/octet-stream\r\n\r\n
                """.utf8)
    }

    /// The text fields' parts.
    private var fieldParts: [UInt8] {
        var out: [UInt8] = []
        for f in fields {
            out += Array(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quotedName(f.name))\r\n\r\n".utf8)
            out += Array(f.value.utf8) + Self.crlf
        }
        return out
    }

    package func openingLength(_ records: [DocumentRecord]) -> Int {
        guard let sealing else { return opening(records).count }
        let manifest = UInt64(PayloadSealing.padded(manifest(records, forLength: true)).count)
        return fieldParts.count + manifestHead.count + Int(sealing.fileLength(manifest)) + Self.crlf.count
    }

    package func opening(_ records: [DocumentRecord]) -> [UInt8] {
        let manifest = manifest(records)
        guard let sealing else { return fieldParts + manifestHead + manifest + Self.crlf }
        return fieldParts + manifestHead + sealing.sealWhole(PayloadSealing.padded(manifest), slot: .manifest)
            + Self.crlf
    }

    /// The headers of a file part holding an age file.
    private func agePartHead(_ filename: String) -> [UInt8] {
        Array(
            """
            --\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quotedName(fieldName)); \
            filename=\"\(filename)\"\r\nContent-Type: application/octet-stream\r\n\r\n
            """.utf8)
    }

    /// A capture-only station's form (docs/UPLOAD.md, "From a capture-only station"): the
    /// manifest names each document's id and the size and SHA-256 of its sealed pair.
    package func capturedOpening(_ records: [DocumentRecord]) -> [UInt8] {
        let manifest = FormManifest.captured(
            batch: batch, of: of, documents: records.map { ($0.id, $0.metadata.size, $0.metadata.sha256) })
        var plain = self
        plain.sealing = nil
        return fieldParts + plain.manifestHead + manifest + Self.crlf
    }

    /// Each captured document as two file parts, `<id>.meta.age` then `<id>.age`: the age files
    /// as they were sealed at capture.
    package func capturedHead(_ record: DocumentRecord, metadata: [UInt8]) -> [UInt8] {
        agePartHead("\(record.id.hex).meta.age") + metadata + Self.crlf + agePartHead("\(record.id.hex).age")
    }

    package func head(_ record: DocumentRecord) -> [UInt8] {
        if sealing != nil { return agePartHead("\(record.id.hex).age") }
        return Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quotedName(fieldName)); "
                + """
                filename=\(Self.quotedName(record.metadata.name))\r\nContent-Type: \
                \(record.metadata.contentType)\r\n\r\n
                """)
                .utf8)
    }
}
