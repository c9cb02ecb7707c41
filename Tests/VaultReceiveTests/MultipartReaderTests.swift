import Crypto
import Foundation
import Testing
import VaultCore
import VaultTestSupport

@testable import VaultReceive
@testable import VaultUpload

/// The multipart reader against forms made by vault's own form upload (`FormBody`) and by an
/// encoder this project did not write (urllib3's, from the test peers), fed in pieces of every
/// size, and against bodies that are not forms.
@Suite struct MultipartReaderTests {
    struct Read: Equatable {
        var parts: [MultipartReader.Part] = []
        var bytes: [[UInt8]] = []
    }

    static func read(_ body: [UInt8], boundary: String, piece: Int, maxParts: Int = 64) throws -> Read {
        var reader = MultipartReader(boundary: boundary, maxParts: maxParts)
        var got = Read()
        var open = false
        try reader.read(body, inPiecesOf: piece) { event in
            switch event {
            case .part(let part):
                #expect(!open)
                open = true
                got.parts.append(part)
                got.bytes.append([])
            case .data(let b): got.bytes[got.bytes.count - 1] += Array(b)
            case .end:
                #expect(open)
                open = false
            }
        }
        return got
    }

    /// A batch as `vault upload --protocol form` sends it: a text field, the manifest, a part per
    /// document (names that need escaping; one document ends in bytes that start a delimiter).
    static func vaultForm() -> (body: [UInt8], boundary: String, documents: [PayloadReaderTests.Document]) {
        var documents = PayloadReaderTests.documents(6)
        documents[4].bytes = Array("ends with a partial boundary\r\n--vault".utf8)
        let m = documents[4].record.metadata
        documents[4].record = DocumentRecord(
            id: documents[4].record.id,
            metadata: DocumentMetadata(
                name: m.name, contentType: m.contentType, size: UInt64(documents[4].bytes.count),
                sha256: Array(SHA256.hash(data: documents[4].bytes)), addedAtMillis: 0, tags: m.tags))
        let form = FormBody(
            boundary: "vault-0123456789abcdef0123456789abcdef", fields: [FormField(name: "case", value: "4711")],
            batch: 1,
            of: 1)
        let records = documents.map(\.record)
        var body = form.opening(records)
        for d in documents { body += form.head(d.record) + d.bytes + form.tail(d.record) }
        return (body + form.closing, form.boundary, documents)
    }

    @Test(arguments: [1, 2, 3, 7, 41, 4096, 1 << 20])
    func vaultsFormComesBackPartByPart(piece: Int) throws {
        let (body, boundary, documents) = Self.vaultForm()
        let got = try Self.read(body, boundary: boundary, piece: piece)
        #expect(got.parts.map(\.name) == ["case", "manifest"] + Array(repeating: "files[]", count: documents.count))
        #expect(got.bytes[0] == Array("4711".utf8))
        #expect(got.parts[1].contentType == "application/json")
        #expect(Array(got.bytes.dropFirst(2)) == documents.map(\.bytes))
        #expect(
            got.parts.dropFirst(2).map(\.filename)
                == documents.map { FormBody.quotedName($0.record.metadata.name) }
                .map { String($0.dropFirst().dropLast()) })
    }

    /// urllib3 (in the test peers, through botocore) encodes a form; the reader takes it.
    @Test func aFormFromAnotherEncoderIsRead() throws {
        let script = """
            import sys
            from urllib3 import encode_multipart_formdata
            body, ctype = encode_multipart_formdata([
                ("note", "hello"),
                ("files[]", ("scan one.pdf", bytes(range(256)) * 300, "application/pdf")),
                ("files[]", ("empty.txt", b"", "text/plain")),
            ])
            sys.stdout.buffer.write(ctype.encode() + b"\\n" + body)
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Peer.python)
        p.arguments = ["-c", script]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = Array(out.fileHandleForReading.readDataToEndOfFile())
        p.waitUntilExit()
        try #require(p.terminationStatus == 0)
        let newline = data.firstIndex(of: 0x0A)!
        let boundary = try #require(
            MultipartReader.boundary(ofContentType: String(decoding: data[..<newline], as: UTF8.self)))
        for piece in [1, 13, 1 << 20] {
            let got = try Self.read(Array(data[(newline + 1)...]), boundary: boundary, piece: piece)
            #expect(got.parts.map(\.name) == ["note", "files[]", "files[]"])
            #expect(got.parts.map(\.filename) == [nil, "scan one.pdf", "empty.txt"])
            #expect(got.parts.map(\.contentType) == [nil, "application/pdf", "text/plain"])
            let pattern: [UInt8] = (0...255).map { UInt8($0) }
            let expected: [[UInt8]] = [Array("hello".utf8), Array(repeating: pattern, count: 300).flatMap { $0 }, []]
            #expect(got.bytes == expected)
        }
    }

    @Test func theBoundaryComesFromTheContentType() {
        #expect(MultipartReader.boundary(ofContentType: "multipart/form-data; boundary=abc") == "abc")
        #expect(MultipartReader.boundary(ofContentType: "Multipart/Form-Data; charset=x; boundary=\"a b\"") == "a b")
        #expect(MultipartReader.boundary(ofContentType: "application/json") == nil)
        #expect(MultipartReader.boundary(ofContentType: "multipart/form-data") == nil)
        #expect(
            MultipartReader.boundary(
                ofContentType: "multipart/form-data; boundary=" + String(repeating: "x", count: 71)) == nil)
    }

    @Test func whatIsNotAFormIsRefused() throws {
        let (body, boundary, _) = Self.vaultForm()
        let text = String(decoding: body, as: UTF8.self)
        let cases: [(String, [UInt8], VaultError.Code)] = [
            ("another boundary first", Array(("--other\r\n" + text).utf8), .headerMalformed),
            ("no closing boundary", Array(body.dropLast(4 + boundary.count + 2)), .truncated),
            ("bytes after the end", body + Array("x".utf8), .trailingData),
            ("half a line break after the end", Array(body.dropLast(1)), .truncated),
            (
                "a part without Content-Disposition",
                Array(
                    text.replacingOccurrences(
                        of: "Content-Disposition: form-data; name=\"case\"", with: "X-A: b"
                    ).utf8),
                .headerMalformed
            ),
            (
                "a transfer encoding",
                Array(
                    text.replacingOccurrences(
                        of: "name=\"case\"\r\n", with: "name=\"case\"\r\nContent-Transfer-Encoding: base64\r\n"
                    ).utf8),
                .headerMalformed
            ),
            (
                "headers that never end",
                Array(("--\(boundary)\r\nX: " + String(repeating: "y", count: MultipartReader.maxHeaderBytes)).utf8),
                .headerMalformed
            )
        ]
        for (what, bytes, code) in cases {
            for piece in [1, 1 << 20] {
                #expect("\(what), in pieces of \(piece)") {
                    _ = try Self.read(bytes, boundary: boundary, piece: piece)
                } throws: { error in
                    (error as? VaultError)?.code == code
                }
            }
        }
        #expect("more parts than the limit") {
            _ = try Self.read(body, boundary: boundary, piece: 100, maxParts: 3)
        } throws: { error in
            (error as? VaultError)?.message == "the form holds more than 3 parts"
        }
    }
}
