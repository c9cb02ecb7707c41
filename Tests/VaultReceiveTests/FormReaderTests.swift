import Foundation
import Testing
import VaultCore

@testable import VaultReceive
@testable import VaultUpload

/// The form reader gives for vault's forms what the payload reader gives for its JSON: each
/// document's manifest entry, bytes and check; for a form without a manifest, each file part.
@Suite struct FormReaderTests {
    static func read(_ body: [UInt8], boundary: String, piece: Int) throws -> PayloadReaderTests.Read {
        var reader = FormReader(boundary: boundary)
        return try PayloadReaderTests.collect(&reader, body, piece: piece)
    }

    @Test(arguments: [1, 5, 64, 1 << 20])
    func vaultsFormGivesEachDocumentWithItsManifestEntry(piece: Int) throws {
        let (body, boundary, documents) = MultipartReaderTests.vaultForm()
        let got = try Self.read(body, boundary: boundary, piece: piece)
        #expect(got.bytes == documents.map(\.bytes))
        #expect(got.headers.map(\.id) == documents.map(\.record.id))
        #expect(got.headers.map(\.name) == documents.map(\.record.metadata.name), "the manifest's exact names")
        #expect(got.headers.map(\.tags) == documents.map(\.record.metadata.tags), "the manifest's tags")
        #expect(got.headers.contains { !$0.tags.isEmpty })
        #expect(got.ends == documents.map { UInt64($0.bytes.count) })
    }

    @Test func aFormWithoutAManifestNamesDocumentsByTheirFiles() throws {
        let boundary = "------------------------d74496d66958873e"
        let body = Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"scan \\\"1\\\".pdf\"\r\n"
                + "Content-Type: application/pdf\r\n\r\n%PDF-1.7\r\n--\(boundary)--\r\n").utf8)
        var reader = FormReader(boundary: boundary)
        var headers: [PayloadReader.Header] = []
        var bytes: [UInt8] = []
        try body.withUnsafeBytes { p in
            try reader.read(p) { event in
                if case .begin(_, let h) = event { headers.append(h) }
                if case .data(let b) = event { bytes += Array(b) }
            }
        }
        try reader.finish()
        #expect(headers.map(\.name) == ["scan \"1\".pdf"] && headers.map(\.contentType) == ["application/pdf"])
        #expect(headers[0].size == nil && headers[0].sha256 == nil && headers[0].id == nil)
        #expect(bytes == Array("%PDF-1.7".utf8))
        #expect(reader.fields.map(\.name) == ["note"] && reader.fields.map(\.value) == ["hi"])
    }

    /// `bytes` with the first `old` replaced by `new`, byte for byte (the form holds binary).
    static func replace(_ bytes: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        let o = Array(old.utf8)
        let at = MultipartReader.find(o, in: bytes)!
        return Array(bytes[..<at]) + Array(new.utf8) + Array(bytes[(at + o.count)...])
    }

    @Test func aFormThatDoesNotMatchItsManifestIsRefused() throws {
        let (body, boundary, _) = MultipartReaderTests.vaultForm()
        let extra =
            ",{\"contentType\":\"a\",\"id\":\"\(String(repeating: "0", count: 32))\",\"name\":\"n\","
            + "\"sha256\":\"\(String(repeating: "0", count: 64))\",\"size\":1}],\"of\":1}"
        let cases: [(String, [UInt8], VaultError.Code)] = [
            ("a manifest written otherwise", Self.replace(body, "{\"batch\":1,", "{ \"batch\":1,"), .headerMalformed),
            (
                "a document's bytes changed", Self.replace(body, "ends with a partial", "ends with a Partial"),
                .digestMismatch
            ),
            ("a manifest naming one more document", Self.replace(body, "],\"of\":1}", extra), .headerMalformed),
            (
                "a file part before the manifest",
                Self.replace(
                    body, "--\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"",
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"x\"\r\n\r\nx\r\n"
                        + "--\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\""),
                .headerMalformed
            )
        ]
        for (what, changed, code) in cases {
            #expect("\(what)") {
                _ = try Self.read(changed, boundary: boundary, piece: 7)
            } throws: { error in
                (error as? VaultError)?.code == code
            }
        }
    }
}
