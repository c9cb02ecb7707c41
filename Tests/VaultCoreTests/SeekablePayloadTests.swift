import Foundation
import Testing
@testable import VaultCore

/// A payload produced from any byte offset is exactly the suffix of the whole payload, and only
/// the chunk group that covers the offset (and what follows) is decrypted.
@Suite struct SeekablePayloadTests {
    /// 3-chunk groups (192 KiB of plaintext, 256 KiB of base64): the same arithmetic as the
    /// default 12, with smaller documents.
    static let batching = ChunkBatching(chunks: 3)
    static let groupBase64 = Base64.encodedLength(UInt64(batching.plaintextBytes))

    typealias Fixture = ExportTests.Fixture

    static func produce(_ f: Fixture, format: PayloadFormat, from k: UInt64) throws -> (bytes: [UInt8], chunks: UInt64)
    {
        let progress = ProgressCounter(total: f.records.reduce(0) { $0 + $1.metadata.size }, documents: f.records.count)
        let producer = PayloadProducer(
            vault: f.vault, records: f.records, format: format, progress: progress, batching: batching,
            startOffset: k
        ) { _ in }
        var out: [UInt8] = []
        while let block = try producer.next() {
            #expect(block.offset == k + UInt64(out.count), "blocks carry their payload offset")
            out += block.bytes
            block.release()
        }
        return (out, producer.chunksOpened)
    }

    /// The chunks a producer starting at `k` must open: none of documents whose data ends before
    /// `k`, the covering group onward of the document whose data holds `k`, all of the rest.
    static func expectedChunks(
        _ layout: PayloadLayout, _ records: [DocumentRecord], from k: UInt64, groupLength: UInt64
    ) -> UInt64 {
        var total: UInt64 = 0
        for (i, r) in records.enumerated() {
            let chunks = EnvelopeSize.chunkCount(plaintextSize: r.metadata.size)
            let data = layout.spans.first { $0.part == .data(i) }!
            let tail = layout.spans.first { $0.part == .tail(i) }!
            if k >= tail.offset { continue }
            if k < data.offset || data.length == 0 { total += chunks; continue }
            total += chunks - (k - data.offset) / groupLength * UInt64(batching.chunks)
        }
        return total
    }

    /// A raw framing as a transport would define one (VaultUpload's form body is one): an
    /// opening that lists every document (as a manifest does), and a head and tail per document.
    struct TestFraming: RawFraming {
        var batch = 2
        var contentType: String { "application/x-test" }
        func opening(_ records: [DocumentRecord]) -> [UInt8] {
            Array("batch \(batch): \(records.map(\.id.hex).joined(separator: ","))\n".utf8)
        }
        func head(_ record: DocumentRecord) -> [UInt8] {
            Array("<\(record.metadata.name) \(record.metadata.size)>".utf8)
        }
        func tail(_ record: DocumentRecord) -> [UInt8] { Array("</>\r\n".utf8) }
        var closing: [UInt8] { Array("end\n".utf8) }
        var widest: any RawFraming { TestFraming(batch: 99_999) }
        func sealed(_ sealing: PayloadSealing) -> any RawFraming { preconditionFailure("not sealed in this test") }
        func capturedOpening(_ records: [DocumentRecord]) -> [UInt8] { opening(records) }
        func capturedHead(_ record: DocumentRecord, metadata: [UInt8]) -> [UInt8] { head(record) + metadata }
    }

    /// The test framing's payload built independently of the pipeline, around the plaintexts.
    static func rawReference(_ f: Fixture) -> [UInt8] {
        var out = Array("batch 2: \(f.records.map(\.id.hex).joined(separator: ","))\n".utf8)
        for r in f.records {
            out += Array("<\(r.metadata.name) \(r.metadata.size)>".utf8) + f.originals[r.id]! + Array("</>\r\n".utf8)
        }
        return out + Array("end\n".utf8)
    }

    static let raw = PayloadFormat.raw(TestFraming())

    @Test(arguments: [PayloadFormat.json(.objects), .json(.strings), Self.raw])
    func everySuffixIsTheSuffixOfTheWholePayloadAndNothingBeforeItsGroupIsDecrypted(format: PayloadFormat) throws {
        let group = Self.batching.plaintextBytes
        let f = try Fixture(sizes: [0, 1, 2, 3, 65_535, 65_536, 65_537, group - 1, group, group + 1, 2 * group + 5, 4])
        let full: [UInt8]
        let groupLength: UInt64
        switch format {
        case .json(let shape):
            full = f.reference(f.records, shape: shape)
            groupLength = Self.groupBase64
            #expect(PayloadLayout(f.records, format: format).length == PayloadFormat.json(shape).length(of: f.records))
        case .raw:
            full = Self.rawReference(f)
            groupLength = UInt64(group)
        case .sealed, .captured:
            Issue.record("sealed and captured payloads are not a function of their plaintext")
            return
        }
        let layout = PayloadLayout(f.records, format: format)
        #expect(layout.length == UInt64(full.count))
        #expect(format.length(of: f.records) == UInt64(full.count))

        var offsets = Set<UInt64>()
        func near(_ o: UInt64, _ d: Int) {
            for x in -d...d {
                let v = Int64(o) + Int64(x); if v >= 0 && v <= Int64(layout.length) { offsets.insert(UInt64(v)) }
            }
        }
        for span in layout.spans {
            near(span.offset, 2)  // every framing and document boundary
            if case .data = span.part {
                for g in stride(from: UInt64(0), through: span.length, by: Int(groupLength)) {
                    near(span.offset + g, 3)
                }  // group and base64 boundaries
            }
        }
        var seed: UInt64 = 0x5eed
        for _ in 0..<40 {  // and random ones
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            offsets.insert(seed % (layout.length + 1))
        }
        #expect(offsets.count > 150)
        for k in offsets.sorted() {
            let (bytes, chunks) = try Self.produce(f, format: format, from: k)
            #expect(bytes == Array(full[Int(k)...]), "the bytes from offset \(k) are the payload's suffix")
            #expect(
                chunks == Self.expectedChunks(layout, f.records, from: k, groupLength: groupLength),
                "chunks decrypted from offset \(k)")
        }
        // From 0 every chunk is opened once; the largest document from its last group opens that group only.
        #expect(
            try Self.produce(f, format: format, from: 0).chunks
                == f.records.reduce(0) { $0 + EnvelopeSize.chunkCount(plaintextSize: $1.metadata.size) })
    }

    /// A sealed payload is not a function of its plaintext, but within one sealing (one upload
    /// attempt) it is: produced from any offset — a tus chunk or an S3 part sent again — it is
    /// the suffix of the whole payload, byte for byte, and its length is the planned one.
    @Test(arguments: ["json", "form"])
    func aSealedPayloadFromAnyOffsetIsTheSuffixOfTheSameSealing(wire: String) throws {
        let f = try Fixture(sizes: [0, 1, 65_536, 200_000, 3])
        let sealing = PayloadSealing(recipients: [try AgeIdentity.generate(postQuantum: false).recipient])
        let format: PayloadFormat = wire == "json" ? .sealed(sealing) : .raw(SealedTestFraming(sealing: sealing))
        let (full, _) = try Self.produce(f, format: format, from: 0)
        let layout = PayloadLayout(f.records, format: format)
        #expect(UInt64(full.count) == layout.length && format.length(of: f.records) == layout.length)
        var offsets: [UInt64] = []
        for span in layout.spans { offsets += [span.offset, span.offset + span.length / 2, span.offset + 1] }
        for k in Set(offsets.filter { $0 <= layout.length }).sorted() {
            #expect(try Self.produce(f, format: format, from: k).bytes == Array(full[Int(k)...]), "from offset \(k)")
        }
        // Another sealing of the same documents is other bytes of the same length.
        let other: PayloadFormat =
            wire == "json"
            ? .sealed(PayloadSealing(recipients: sealing.recipients))
            : .raw(SealedTestFraming(sealing: PayloadSealing(recipients: sealing.recipients)))
        let again = try Self.produce(f, format: other, from: 0).bytes
        #expect(again.count == full.count && again != full)
    }

    /// A framing that seals: its opening names the documents in an age file, as a form's manifest.
    struct SealedTestFraming: RawFraming {
        let sealing: PayloadSealing?
        var contentType: String { "application/x-test" }
        func opening(_ records: [DocumentRecord]) -> [UInt8] {
            sealing!.sealWhole(Array(records.map(\.id.hex).joined(separator: ",").utf8), slot: .manifest) + [0x0A]
        }
        func openingLength(_ records: [DocumentRecord]) -> Int {
            Int(sealing!.fileLength(UInt64(records.map(\.id.hex).joined(separator: ",").utf8.count))) + 1
        }
        func head(_ record: DocumentRecord) -> [UInt8] { Array("<\(record.id.hex)>".utf8) }
        func tail(_ record: DocumentRecord) -> [UInt8] { Array("</>".utf8) }
        var closing: [UInt8] { Array("end".utf8) }
        var widest: any RawFraming { self }
        func sealed(_ sealing: PayloadSealing) -> any RawFraming { SealedTestFraming(sealing: sealing) }
        func capturedOpening(_ records: [DocumentRecord]) -> [UInt8] { preconditionFailure("not captured here") }
        func capturedHead(_ record: DocumentRecord, metadata: [UInt8]) -> [UInt8] {
            preconditionFailure("not captured here")
        }
    }

    @Test func theLayoutFindsTheSpanOfEveryByte() throws {
        let f = try Fixture(sizes: [0, 5, 0, 70_000])
        let layout = PayloadLayout(f.records, shape: .objects)
        var previousEnd: UInt64 = 0
        for span in layout.spans {
            #expect(span.offset == previousEnd, "the spans tile the payload")
            previousEnd = span.offset + span.length
        }
        for k in stride(from: UInt64(0), to: layout.length, by: 97) {
            let span = try #require(layout.span(containing: k))
            #expect(span.offset <= k && k < span.offset + span.length && span.length > 0)
        }
        #expect(layout.span(containing: layout.length) == nil)
        #expect(
            layout.span(containing: layout.spans.first { $0.part == .data(0) }!.offset)?.part == .tail(0),
            "an empty document's data is skipped")
    }
}
