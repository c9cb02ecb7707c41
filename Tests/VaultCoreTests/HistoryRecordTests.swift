import Foundation
import Testing
@testable import VaultCore

/// The history record's hand-written JSON (HistoryRecord.json()) is what JSONEncoder with sorted
/// keys writes, byte for byte, for every field and the strings that need escaping.
struct HistoryRecordTests {
    static let someID = DocumentID(hex: "00112233445566778899aabbccddeeff")!

    static func reference(_ r: HistoryRecord) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(r))
    }

    @Test(arguments: [
        HistoryRecord(
            .`init`, detail: "argon2id ops 2, memory 65536 KiB", now: Date(timeIntervalSince1970: 1_767_225_600.123)),
        HistoryRecord(
            .add,
            documents: [
                .init(
                    id: DocumentID(hex: String(repeating: "ab", count: 16))!, name: "scan é/1.pdf",
                    sha256: String(repeating: "0f", count: 32), size: 123_456_789)
            ]),
        HistoryRecord(
            .export, outcome: .partial,
            documents: (0..<3).map {
                .init(
                    id: DocumentID(bytes: [UInt8](repeating: UInt8($0), count: 16)), name: "n\($0)", sha256: "",
                    size: UInt64($0))
            },
            destinations: ["file:///tmp/out/batch-0001.json", "stdout"], detail: "1 damaged document(s) left out"),
        HistoryRecord(
            .remove, outcome: .failed,
            documents: [
                .init(id: DocumentID(bytes: [UInt8](repeating: 0xff, count: 16)), name: "", sha256: "", size: 0)
            ])
    ]) func handWrittenJSONIsWhatJSONEncoderWrites(record: HistoryRecord) throws {
        #expect(record.json() == (try Self.reference(record)))
        #expect(try JSONDecoder().decode(HistoryRecord.self, from: Data(record.json())) == record)
    }

    @Test func anomaliesAndControlCharactersRoundTrip() throws {
        var r = HistoryRecord(
            .upload, documents: [.init(id: Self.someID, name: "a\"b\\c\u{01}\n\t\u{7f}ü", sha256: "s", size: 1)],
            destinations: ["https://example.invalid:8443/batches"])
        r.anomalies = [.init(code: "log-torn", message: "log.vlt ends inside a record \"after\" record 3")]
        #expect(try JSONDecoder().decode(HistoryRecord.self, from: Data(r.json())) == r)
        // Without control characters the bytes are JSONEncoder's too.
        r.documents[0].name = "a\"b\\c/ü"
        #expect(r.json() == (try Self.reference(r)))
    }

    /// The reader of the canonical layout gives what JSONDecoder gives, and nil (so the caller
    /// falls back to JSONDecoder) for anything else.
    @Test func theCanonicalReaderGivesWhatJSONDecoderGives() throws {
        var odd = HistoryRecord(
            .upload,
            documents: [
                .init(id: Self.someID, name: "a\"b\\c\u{01}\u{08}\u{0c}\n\r\t\u{1f}\u{7f}ü🎉/", sha256: "s", size: 0)
            ],
            destinations: ["https://example.invalid:8443/batches", ""], detail: "")
        odd.anomalies = [.init(code: "log-torn", message: "ends \"inside\""), .init(code: "x", message: "")]
        odd.timeMillis = -5
        // An upload whose receipt signs sealed files: the receipt and the pairs beside it.
        var sealed = HistoryRecord(
            .upload,
            documents: [.init(id: Self.someID, name: "n", sha256: String(repeating: "0f", count: 32), size: 1)])
        sealed.receipt = #"{"receipt":{},"signature":"x"}"#
        sealed.sealed = [String(repeating: "ab", count: 32) + ":4711"]
        var noPairs = sealed
        noPairs.sealed = []
        let records = [
            HistoryRecord(.`init`, detail: "argon2id", now: Date(timeIntervalSince1970: 1_767_225_600.123)),
            HistoryRecord(
                .add,
                documents: (0..<50).map {
                    .init(
                        id: DocumentID(hex: String(repeating: "ab", count: 16))!, name: "n\($0)",
                        sha256: String(repeating: "0f", count: 32), size: UInt64($0) * 1_000_003)
                }),
            HistoryRecord(.remove, outcome: .failed, documents: []),
            odd, sealed, noPairs
        ]
        for r in records {
            let bytes = r.json()
            #expect(HistoryRecordReader.read(bytes, documents: { _ in true }) == r)
            #expect(try JSONDecoder().decode(HistoryRecord.self, from: Data(bytes)) == r)
            var lean = r
            lean.documents = []
            #expect(HistoryRecordReader.read(bytes, documents: { _ in false }) == lean)
        }
        let canonical = String(decoding: records[1].json(), as: UTF8.self)
        // Not the canonical layout: nil, and the caller decodes with JSONDecoder.
        for variant in [
            canonical.replacingOccurrences(of: ",\"host\"", with: ", \"host\""),
            canonical.replacingOccurrences(of: "\"size\":0", with: "\"size\":00"),
            canonical.replacingOccurrences(of: "\"n1\"", with: "\"n\\u0031\""),
            canonical.replacingOccurrences(of: "\"n2\"", with: "\"n\\/\""),
            canonical + " ", String(canonical.dropLast())
        ] {
            #expect(
                HistoryRecordReader.read(Array(variant.utf8), documents: { _ in true }) == nil, "\(variant.prefix(60))")
        }
        // Broken UTF-8 and raw control characters are refused, as JSONDecoder refuses them;
        // in documents that are only checked, too.
        for bad: [UInt8] in [[0xC3, 0x28], [0x0A], [0xE2, 0x82]] {
            var bytes = Array(canonical.utf8)
            let value = Array("\"n3\"".utf8)
            let start = (0...(bytes.count - value.count)).first { Array(bytes[$0..<$0 + value.count]) == value }!
            bytes.replaceSubrange(start + 1..<start + 3, with: bad)
            #expect(HistoryRecordReader.read(bytes, documents: { _ in true }) == nil)
            #expect(HistoryRecordReader.read(bytes, documents: { _ in false }) == nil)
            #expect((try? JSONDecoder().decode(HistoryRecord.self, from: Data(bytes))) == nil)
        }
    }
}
