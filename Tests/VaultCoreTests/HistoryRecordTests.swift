import Foundation
import Testing
@testable import VaultCore

/// The history record's hand-written JSON (HistoryRecord.json()) is what JSONEncoder with sorted
/// keys writes, byte for byte, for every field and the strings that need escaping.
struct HistoryRecordTests {
    static func reference(_ r: HistoryRecord) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(r))
    }

    @Test(arguments: [
        HistoryRecord(.`init`, detail: "argon2id ops 2, memory 65536 KiB", now: Date(timeIntervalSince1970: 1_767_225_600.123)),
        HistoryRecord(.add, documents: [.init(id: String(repeating: "ab", count: 16), name: "scan é/1.pdf", sha256: String(repeating: "0f", count: 32), size: 123_456_789)]),
        HistoryRecord(.export, outcome: .partial, documents: (0..<3).map { .init(id: "\($0)", name: "n\($0)", sha256: "", size: UInt64($0)) },
                      destinations: ["file:///tmp/out/batch-0001.json", "stdout"], detail: "1 damaged document(s) left out"),
        HistoryRecord(.remove, outcome: .failed, documents: [.init(id: "x", name: "", sha256: "", size: 0)]),
    ]) func handWrittenJSONIsWhatJSONEncoderWrites(record: HistoryRecord) throws {
        #expect(record.json() == (try Self.reference(record)))
        #expect(try JSONDecoder().decode(HistoryRecord.self, from: Data(record.json())) == record)
    }

    @Test func anomaliesAndControlCharactersRoundTrip() throws {
        var r = HistoryRecord(.upload, documents: [.init(id: "id", name: "a\"b\\c\u{01}\n\t\u{7f}ü", sha256: "s", size: 1)],
                              destinations: ["https://example.invalid:8443/batches"])
        r.anomalies = [.init(code: "log-torn", message: "log.vlt ends inside a record \"after\" record 3")]
        #expect(try JSONDecoder().decode(HistoryRecord.self, from: Data(r.json())) == r)
        // Without control characters the bytes are JSONEncoder's too.
        r.documents[0].name = "a\"b\\c/ü"
        #expect(r.json() == (try Self.reference(r)))
    }
}
