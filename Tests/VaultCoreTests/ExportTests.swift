import CBase64
import Crypto
import Foundation
import Testing
@testable import VaultCore
import VaultFoundation

@Suite struct Base64Tests {
    /// The streaming encoder, fed in two pieces split at every offset, equals a one-shot
    /// (Foundation) encoding; so does every length around the 3-byte group and the parallel split.
    @Test func streamingEncoderAtEverySplitOffset() {
        let input = testBytes(1000, seed: 3)
        let expected = Array(Data(input).base64EncodedData())
        for split in 0...input.count {
            var e = Base64StreamEncoder()
            var out = [UInt8](repeating: 0, count: Base64StreamEncoder.maxOutput(for: input.count) + 8)
            let n = out.withUnsafeMutableBytes { o in
                input.withUnsafeBytes { i in
                    var w = e.encode(UnsafeRawBufferPointer(rebasing: i[0..<split]), into: o)
                    w += e.encode(
                        UnsafeRawBufferPointer(rebasing: i[split...]),
                        into: UnsafeMutableRawBufferPointer(rebasing: o[w...]))
                    return w + e.finish(into: UnsafeMutableRawBufferPointer(rebasing: o[w...]))
                }
            }
            #expect(Array(out[0..<n]) == expected, "split at \(split)")
        }
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 47, 48, 49, 262_143, 262_144, 262_145, 786_432, 786_433, 1_000_001])
    func oneShotMatchesFoundation(length: Int) {
        let input = testBytes(length, seed: UInt64(length))
        var out = [UInt8](repeating: 0, count: Int(Base64.encodedLength(UInt64(length))))
        let n = out.withUnsafeMutableBytes { o in input.withUnsafeBytes { Base64.encode($0, into: o) } }
        #expect(n == out.count)
        #expect(out == Array(Data(input).base64EncodedData()))
    }

    /// Both code paths of the C encoder, at every length up to 200 (all tails of the 24-byte
    /// AVX2 step and the 6-byte scalar step) and a few larger ones, equal Foundation.
    @Test func bothCodePathsMatchFoundation() throws {
        typealias Encode = (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> Int
        var paths: [(String, Encode)] = [("scalar", vault_base64_encode_scalar)]
        if vault_base64_has_avx2() != 0 { paths.append(("avx2", vault_base64_encode_avx2)) }
        let input = testBytes(70_001, seed: 5)
        for length in Array(0...200) + [1023, 1024, 65_536, 70_001] {
            let slice = Array(input[0..<length])
            let expected = Array(Data(slice).base64EncodedData())
            for (name, encode) in paths {
                // One spare byte past the end, which must stay untouched.
                var out = [UInt8](repeating: 0xA5, count: expected.count + 1)
                let n = out.withUnsafeMutableBufferPointer { o in
                    slice.withUnsafeBufferPointer { encode($0.baseAddress, length, o.baseAddress) }
                }
                #expect(n == expected.count, "\(name) at length \(length)")
                #expect(Array(out[0..<expected.count]) == expected, "\(name) at length \(length)")
                #expect(out.last == 0xA5, "\(name) wrote past the end at length \(length)")
            }
        }
        // A patterned input through a whole number of steps.
        let all: [UInt8] = (0..<240).map { i -> UInt8 in UInt8(truncatingIfNeeded: i * 37 + 11) }
        for (name, encode) in paths {
            var out = [UInt8](repeating: 0, count: all.count / 3 * 4)
            _ = out.withUnsafeMutableBufferPointer { o in
                all.withUnsafeBufferPointer { encode($0.baseAddress, all.count, o.baseAddress) }
            }
            #expect(out == Array(Data(all).base64EncodedData()), "\(name)")
        }
    }

    @Test func manySmallPiecesEqualOneShot() {
        let input = testBytes(70_000, seed: 11)
        var e = Base64StreamEncoder()
        var out: [UInt8] = []
        var i = 0, step = 1
        while i < input.count {
            let n = min(step, input.count - i)
            var piece = [UInt8](repeating: 0, count: Base64StreamEncoder.maxOutput(for: n))
            let w = piece.withUnsafeMutableBytes { p in
                input.withUnsafeBytes { e.encode(UnsafeRawBufferPointer(rebasing: $0[i..<i + n]), into: p) }
            }
            out += piece[0..<w]
            i += n
            step = step % 7 + 1
        }
        var tail = [UInt8](repeating: 0, count: 4)
        let w = tail.withUnsafeMutableBytes { e.finish(into: $0) }
        out += tail[0..<w]
        #expect(out == Array(Data(input).base64EncodedData()))
    }
}

@Suite struct ExportTests {
    /// A vault in a temp dir with documents of the given sizes and names.
    final class Fixture {
        let dir = TempDir()
        let vault: Vault
        var originals: [DocumentID: [UInt8]] = [:]
        var records: [DocumentRecord] = []

        init(sizes: [Int], names: [String]? = nil, tags: [String] = []) throws {
            vault = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
            for (i, size) in sizes.enumerated() {
                let bytes = testBytes(size, seed: UInt64(i + 1))
                let path = dir.file("in-\(i)")
                _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
                let r = try vault.add(
                    from: OpenFile.openForReading(path), name: names?[i] ?? "doc-\(i).bin",
                    contentType: "application/octet-stream", tags: tags, allowDuplicate: true,
                    now: Date(timeIntervalSince1970: 1_700_000_000 + Double(i)))
                originals[r.id] = bytes
                records.append(r)
            }
        }

        /// The payload built independently of the pipeline: Foundation base64, hand framing.
        func reference(_ records: [DocumentRecord], shape: PayloadShape) -> [UInt8] {
            let entries = records.map { r -> String in
                let b64 = Data(originals[r.id]!).base64EncodedString()
                guard shape == .objects else { return "\"\(b64)\"" }
                let m = r.metadata
                return "{\"Id\":\"\(r.id.hex)\",\"Name\":\(JSONString.quote(m.name)),"
                    + "\"ContentType\":\"\(m.contentType)\",\"Size\":\(m.size),"
                    + "\"SHA256\":\"\(Hex.encode(Array(SHA256.hash(data: originals[r.id]!))))\",\"Data\":\"\(b64)\"}"
            }
            return Array(("{\"Files\":[" + entries.joined(separator: ",") + "]}").utf8)
        }

        func export(
            _ options: ExportOptions, records: [DocumentRecord]? = nil, events: EventLog? = nil
        ) throws -> (ExportSummary, String) {
            let out = dir.file("out-\(UUID().uuidString.prefix(8))")
            let exporter = try Exporter(
                vault: vault, records: records ?? self.records, options: options, onEvent: { events?.add($0) })
            return (try exporter.write(toDirectory: out), out)
        }

        func damage(_ id: DocumentID, at offsetFromEnd: Int) throws {
            let path = vault.store.objectPath(id)
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[bytes.count - offsetFromEnd] ^= 0x10
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
    }

    final class EventLog: @unchecked Sendable {
        var events: [ExportEvent] = []
        func add(_ e: ExportEvent) { events.append(e) }
        var progress: [(UInt64, UInt64)] {
            events.compactMap { if case .progress(let d, let t) = $0 { (d, t) } else { nil } }
        }
    }

    /// Parses a payload with a JSON parser, decodes every document, checks bytes and SHA-256.
    static func checkPayload(_ path: String, _ f: Fixture, expect ids: [DocumentID]) throws {
        let raw = try Data(contentsOf: URL(fileURLWithPath: path))
        let json = try JSONSerialization.jsonObject(with: raw) as! [String: Any]
        let files = json["Files"] as! [[String: Any]]
        #expect(files.map { $0["Id"] as! String } == ids.map(\.hex))
        for file in files {
            let id = DocumentID(hex: file["Id"] as! String)!
            let data = Data(base64Encoded: file["Data"] as! String)!
            #expect(Array(data) == f.originals[id], "\(id) bytes")
            #expect(file["SHA256"] as? String == Hex.encode(Array(SHA256.hash(data: data))))
            #expect(file["Size"] as? Int == data.count)
        }
    }

    @Test func sizesAroundGroupsAndChunksGiveExactCanonicalBytes() throws {
        let sizes = [0, 1, 2, 3, 4, 5, 65535, 65536, 65537, 200_000, 786_432, 786_433, 1_572_865]
        let f = try Fixture(sizes: sizes)
        for shape in PayloadShape.allCases {
            var o = ExportOptions()
            o.shape = shape
            let (summary, out) = try f.export(o)
            #expect(summary.batches.count == 1)
            let raw = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/batch-0001.json")))
            #expect(raw == f.reference(f.records, shape: shape), "\(shape) payload differs from the reference")
            #expect(UInt64(raw.count) == PayloadFormat.json(shape).length(of: f.records))
            #expect(summary.batches[0].bytes == UInt64(raw.count))
            #expect(summary.batches[0].sha256 == Hex.encode(Array(SHA256.hash(data: raw))))
            if shape == .objects { try Self.checkPayload(out + "/batch-0001.json", f, expect: f.records.map(\.id)) }
        }
    }

    @Test func fortyFiveDocumentsMakeBatchesOf20_20_5() throws {
        let f = try Fixture(sizes: (0..<45).map { $0 * 37 })
        let events = EventLog()
        let (summary, out) = try f.export(ExportOptions(), events: events)
        #expect(summary.batches.map { $0.documents.count } == [20, 20, 5])
        #expect(summary.batches.map(\.file) == ["batch-0001.json", "batch-0002.json", "batch-0003.json"])
        for (i, b) in summary.batches.enumerated() {
            try Self.checkPayload(
                out + "/" + b.file!, f, expect: Array(f.records[(i * 20)..<min(45, i * 20 + 20)].map(\.id)))
            let size = try FileManager.default.attributesOfItem(atPath: out + "/" + b.file!)[.size] as! Int
            #expect(UInt64(size) == b.bytes)
        }
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as! [String: Any]
        let batches = manifest["batches"] as! [[String: Any]]
        #expect(batches.map { $0["status"] as! String } == ["complete", "complete", "complete"])
        #expect(manifest["runId"] as? String == summary.runID)
        // Progress only increases and ends at the total; totals were announced first.
        let p = events.progress
        #expect(!p.isEmpty)
        #expect(zip(p, p.dropFirst()).allSatisfy { $0.0 <= $1.0 && $0.1 >= $1.1 })
        #expect(p.last!.0 == p.last!.1)
        if case .started(_, 45, 3, let plain, let payload) = events.events.first {
            #expect(plain == p.last!.1)
            #expect(payload == summary.payloadBytes)
        } else {
            Issue.record("the first event is not .started with the totals")
        }
    }

    @Test func namesNeedingEscapes() throws {
        let names = [
            "quote\"d", "back\\slash", "new\nline", "tab\there", "ctrl\u{01}\u{1F}", "emoji 🎉 ünï 文件", "slash/kept",
            "del\u{7F}"
        ]
        let f = try Fixture(sizes: names.map { _ in 10 }, names: names)
        let (_, out) = try f.export(ExportOptions())
        let raw = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/batch-0001.json")))
        #expect(raw == f.reference(f.records, shape: .objects))
        let text = String(decoding: raw, as: UTF8.self)
        #expect(text.contains(#""Name":"quote\"d""#) && text.contains(#""Name":"back\\slash""#))
        #expect(text.contains(#""Name":"new\nline""#) && text.contains(#""Name":"tab\there""#))
        #expect(text.contains(#""Name":"ctrl\u0001\u001f""#) && text.contains("\"Name\":\"emoji 🎉 ünï 文件\""))
        #expect(text.contains(#""Name":"slash/kept""#) && text.contains("\"Name\":\"del\u{7F}\""))
        let files = (try JSONSerialization.jsonObject(with: Data(raw)) as! [String: Any])["Files"] as! [[String: Any]]
        #expect(files.map { $0["Name"] as! String } == names)
    }

    @Test func maxBytesSplitsAndRejectsAnOversizedDocument() throws {
        let f = try Fixture(sizes: [3000, 3000, 3000, 3000, 9000])
        var o = ExportOptions()
        let two = PayloadFormat.json(.objects).length(of: Array(f.records[0..<2]))
        o.limits = BatchLimits(documents: 20, bytes: two + 10)
        let big = PayloadFormat.json(.objects).length(of: [f.records[4]])
        #expect(big > two + 10)
        let e = #expect(throws: VaultError.self) { try f.export(o) }
        #expect(e?.code == .usage)
        #expect(e?.message.contains(f.records[4].id.hex.prefix(12)) == true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: f.dir.path).filter { $0.hasPrefix("out-") }.isEmpty,
            "nothing is written when the plan fails")
        o.limits = BatchLimits(documents: 20, bytes: max(two + 10, big))
        let (summary, out) = try f.export(o)
        #expect(summary.batches.map { $0.documents.count } == [2, 2, 1])
        for b in summary.batches {
            #expect(b.bytes <= max(two + 10, big))
            let size = try FileManager.default.attributesOfItem(atPath: out + "/" + b.file!)[.size] as! Int
            #expect(UInt64(size) == b.bytes)
        }
        #expect(
            PayloadFormat.json(.objects).length(of: Array(f.records[0..<3])) > two + 10,
            "the limit is what keeps a third document out of each batch")
    }

    @Test func aDamagedDocumentStopsTheExportAndLeavesNoPayload() throws {
        let f = try Fixture(sizes: [1000, 300_000, 2000])
        try f.damage(f.records[1].id, at: 100)
        let out = f.dir.file("stopped")
        let exporter = try Exporter(vault: f.vault, records: f.records, options: ExportOptions())
        let e = #expect(throws: VaultError.self) { try exporter.write(toDirectory: out) }
        #expect(e?.code == .chunkAuthenticationFailed)
        #expect(e?.message.contains(f.records[1].id.hex) == true)
        #expect(
            !FileManager.default.fileExists(atPath: out),
            "no batch file, no temp file, no manifest, and no folder the run made")
    }

    @Test(arguments: [0, 1, 2])
    func skipBadCutsTheDocumentOutAndTheJSONStaysValid(position: Int) throws {
        let f = try Fixture(sizes: [1000, 900_000, 2001])
        let bad = f.records[position]
        try f.damage(bad.id, at: 20)  // in the final chunk: the document fails after releasing data
        var o = ExportOptions()
        o.skipBad = true
        let events = EventLog()
        let (summary, out) = try f.export(o, events: events)
        let kept = f.records.filter { $0.id != bad.id }
        let raw = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/batch-0001.json")))
        #expect(raw == f.reference(kept, shape: .objects))
        try Self.checkPayload(out + "/batch-0001.json", f, expect: kept.map(\.id))
        #expect(summary.skipped.map(\.id) == [bad.id])
        #expect(summary.batches[0].sha256 == Hex.encode(Array(SHA256.hash(data: raw))))
        let p = events.progress
        #expect(zip(p, p.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        #expect(p.last!.0 == p.last!.1)
        #expect(events.events.contains { if case .documentSkipped(let id, _, _) = $0 { id == bad.id } else { false } })
    }

    @Test func streamOutputIsOneBatchAndSkipsWithoutCutting() throws {
        let f = try Fixture(sizes: [10, 70_000, 20])
        try f.damage(f.records[1].id, at: 5)
        let path = f.dir.file("stdout.json")
        var o = ExportOptions()
        o.skipBad = true
        let summary = try Exporter(vault: f.vault, records: f.records, options: o).write(
            to: OpenFile.createExclusive(path))
        #expect(summary.skipped.count == 1)
        #expect(
            Array(try Data(contentsOf: URL(fileURLWithPath: path)))
                == f.reference([f.records[0], f.records[2]], shape: .objects))
        o.limits = BatchLimits(documents: 2)
        let e = #expect(throws: VaultError.self) {
            try Exporter(vault: f.vault, records: f.records, options: o).write(
                to: OpenFile.createExclusive(f.dir.file("x")))
        }
        #expect(e?.code == .singleBatchNeeded)
    }

    /// An app's own sink: collects what it is given, and can fail like a dropped stream.
    final class CollectingSink: PayloadSink {
        var bytes: [UInt8] = []
        var calls = 0
        var failAfter: Int?
        func write(_ chunk: UnsafeRawBufferPointer) throws {
            calls += 1
            if let failAfter, calls > failAfter { throw VaultError(.io, "the app's stream closed") }
            bytes += chunk
        }
    }

    @Test func aFileHandleAndAnAppsOwnSinkGetTheSamePayloadAsTheFolder() throws {
        let f = try Fixture(sizes: [0, 1, 65_536, 3 << 20, 777])
        let (folder, out) = try f.export(ExportOptions())
        let reference = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/" + folder.batches[0].file!)))
        #expect(reference == f.reference(f.records, shape: .objects))

        let path = f.dir.file("handle.json")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        var events: [ExportEvent] = []
        let viaHandle = try Exporter(
            vault: f.vault, records: f.records, options: ExportOptions(), onEvent: { events.append($0) }
        ).write(to: FileHandleSink(handle))
        try handle.close()
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == reference)
        #expect(viaHandle.payloadBytes == UInt64(reference.count))
        // Progress callbacks are the same as for the folder: they end at the total.
        let progress = events.compactMap { if case .progress(let d, let t) = $0 { (d, t) } else { nil } }
        #expect(progress.last.map { $0.0 == $0.1 && $0.1 == f.records.reduce(0) { $0 + $1.metadata.size } } == true)

        let sink = CollectingSink()
        _ = try Exporter(vault: f.vault, records: f.records, options: ExportOptions()).write(to: sink)
        #expect(sink.bytes == reference)
        let failing = CollectingSink()
        failing.failAfter = 1
        let e = #expect(throws: VaultError.self) {
            try Exporter(vault: f.vault, records: f.records, options: ExportOptions()).write(to: failing)
        }
        #expect(e?.code == .io && e?.message == "the app's stream closed")
    }
}

/// `manifest.json` is written by hand from the plan (see ``ManifestFile``); its bytes must be
/// those `JSONEncoder` gave for the same manifest, which is what earlier versions wrote.
@Suite struct ManifestLayoutTests {
    /// The manifest as a value, encoded the way the export used to.
    struct Reference: Codable {
        var runId: String
        var created: String
        var shape: String
        var batchSize: Int
        var maxBytes: UInt64?
        var batches: [ManifestBatch]
    }

    @Test(arguments: [nil, UInt64(1 << 20)])
    func theHandWrittenManifestIsByteIdenticalToJSONEncoders(maxBytes: UInt64?) throws {
        let records = (0..<7).map { i in
            DocumentRecord(
                id: DocumentID(bytes: testBytes(16, seed: UInt64(i + 1))),
                metadata: DocumentMetadata(
                    name: "doc \(i)", contentType: "text/plain", size: UInt64(100 * i), sha256: testBytes(32),
                    addedAtMillis: Int64(i), tags: []))
        }
        let plan = try CompactPlan(records, limits: BatchLimits(documents: 3, bytes: maxBytes), format: .json(.objects))
        #expect(plan.batchCount == 3)
        let dir = TempDir()
        let file = ManifestFile(
            path: dir.path + "/manifest.json", plan: plan, runId: "0f1e2d3c-run", created: "2026-11-24T05:00:00Z",
            shape: "objects", batchSize: 3, maxBytes: maxBytes)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        func expectSameAsEncoder() throws {
            let reference = Reference(
                runId: "0f1e2d3c-run", created: "2026-11-24T05:00:00Z", shape: "objects", batchSize: 3,
                maxBytes: maxBytes, batches: file.batches)
            let expected = Array(try encoder.encode(reference)) + [0x0a]
            #expect(String(decoding: file.json(), as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        }
        try expectSameAsEncoder()  // every batch pending
        // One batch complete, one complete with a document cut out (odd characters in its
        // error and name), one left pending.
        let first = try AtomicFile(destination: dir.path + "/batch-0001.json")
        try first.file.write([0x7B], at: 0)
        try file.complete(first, index: 0, kept: nil, skipped: [], bytes: 1, sha256: String(repeating: "ab", count: 32))
        let second = try AtomicFile(destination: dir.path + "/batch-0002.json")
        try file.complete(
            second, index: 1, kept: [records[3].id, records[5].id],
            skipped: [
                ManifestSkip(
                    id: records[4].id, name: "a/b \"q\"\n\u{1}ü", code: "chunk-authentication-failed",
                    error: "tab\there\\")
            ],
            bytes: 2, sha256: String(repeating: "cd", count: 32))
        try file.flush()
        try expectSameAsEncoder()
        file.finish(as: .interrupted, holdingLock: false)
        try expectSameAsEncoder()
        #expect(file.batches.map(\.status) == [.complete, .complete, .interrupted])
        #expect(file.batches[1].documents == [records[3].id, records[5].id])
    }
}
