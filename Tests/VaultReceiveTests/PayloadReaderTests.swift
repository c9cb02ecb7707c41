import Crypto
import Foundation
import Testing
import VaultCore

@testable import VaultReceive

/// The payload reader against payloads framed by the exporter's own code (`PayloadEntry`), fed in
/// pieces of every size, and against each way a payload can differ from vault's layout.
@Suite struct PayloadReaderTests {
    struct Document {
        var record: DocumentRecord
        var bytes: [UInt8]
    }

    /// Documents of the sizes that matter to base64 (0, 1, 2, 3 and larger), with names that
    /// need escaping, and tags on every third (one that needs escaping too).
    static func documents(_ count: Int = 6, seed: UInt64 = 7) -> [Document] {
        var state = seed
        let names = ["scan.pdf", "quote\"d \\ back", "new\nline\t\u{01}", "ünï 文件 🎉", "x", "a/b"]
        return (0..<count).map { i in
            let size = [0, 1, 2, 3, 100, 70_001][i % 6] + i / 6
            // The short ones are zeros, so their base64 is known ("AA==", "AAA=", "AAAA").
            let bytes = (0..<size).map { _ -> UInt8 in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return size <= 3 ? 0 : UInt8(truncatingIfNeeded: state >> 33)
            }
            let metadata = DocumentMetadata(
                name: names[i % names.count], contentType: "application/pdf", size: UInt64(size),
                sha256: Array(SHA256.hash(data: bytes)), addedAtMillis: 0,
                tags: i % 3 == 1 ? ["acme", "2026 Q1", "quo\"te"] : [])
            let id = DocumentID(bytes: (0..<16).map { UInt8(truncatingIfNeeded: i * 16 + $0) })
            return Document(record: DocumentRecord(id: id, metadata: metadata), bytes: bytes)
        }
    }

    /// `{"Files":[…]}` as vault writes it.
    static func payload(_ documents: [Document], shape: PayloadShape) -> [UInt8] {
        var out = Array(#"{"Files":["#.utf8)
        for (i, d) in documents.enumerated() {
            if i > 0 { out.append(0x2C) }
            let entry = PayloadEntry(d.record, shape: shape)
            out += entry.prefix + Array(Data(d.bytes).base64EncodedString().utf8) + entry.suffix
        }
        return out + Array("]}".utf8)
    }

    /// What the reader gave: each document's header and bytes, and the end events' sizes.
    struct Read {
        var headers: [PayloadReader.Header] = []
        var bytes: [[UInt8]] = []
        var ends: [UInt64] = []
    }

    static func read(_ payload: [UInt8], shape: PayloadShape, piece: Int, maxDocuments: Int = 20) throws -> Read {
        var reader = PayloadReader(shape: shape, maxDocuments: maxDocuments)
        return try collect(&reader, payload, piece: piece)
    }

    /// What a reader of documents (the payload's or the form's) gives for `body` read in pieces.
    static func collect<R: PieceReader>(_ reader: inout R, _ body: [UInt8], piece: Int) throws -> Read
    where R.Event == PayloadReader.Event {
        var got = Read()
        try reader.read(body, inPiecesOf: piece) { event in
            switch event {
            case .begin(let index, let header):
                #expect(index == got.headers.count)
                got.headers.append(header)
                got.bytes.append([])
            case .data(let b): got.bytes[got.bytes.count - 1] += Array(b)
            case .end(_, let size, let sha):
                #expect(sha == Array(SHA256.hash(data: got.bytes.last!)))
                got.ends.append(size)
            }
        }
        return got
    }

    @Test(arguments: [1, 2, 3, 5, 64, 4096, 1 << 20])
    func everyDocumentComesBackWholeWhateverThePieces(piece: Int) throws {
        let documents = Self.documents()
        for shape in PayloadShape.allCases {
            let got = try Self.read(Self.payload(documents, shape: shape), shape: shape, piece: piece)
            #expect(got.bytes == documents.map(\.bytes), "\(shape)")
            #expect(got.ends == documents.map { UInt64($0.bytes.count) })
            if shape == .objects {
                #expect(got.headers.map(\.id) == documents.map(\.record.id))
                #expect(got.headers.map(\.name) == documents.map(\.record.metadata.name))
                #expect(got.headers.map(\.size) == documents.map(\.record.metadata.size))
                #expect(got.headers.map(\.sha256) == documents.map(\.record.metadata.sha256))
                #expect(got.headers.map(\.tags) == documents.map(\.record.metadata.tags))
                #expect(got.headers.contains { !$0.tags.isEmpty })
            } else {
                #expect(got.headers.allSatisfy { $0 == PayloadReader.Header() })
            }
        }
    }

    @Test func anEmptyPayloadHasNoDocument() throws {
        #expect(try Self.read(Array(#"{"Files":[]}"#.utf8), shape: .objects, piece: 3).bytes.isEmpty)
    }

    /// Each change to a valid payload, and the error it must give.
    static let tampered: [(String, @Sendable ([UInt8]) -> [UInt8], VaultError.Code)] = [
        ("a space after the opening brace", { [0x7B, 0x20] + $0.dropFirst() }, .headerMalformed),
        ("another key order", { replace($0, #""Id":"#, #""ID":"#) }, .headerMalformed),
        ("an upper-case id", { replace($0, #""Id":"00"#, #""Id":"0A"#) }, .headerMalformed),
        ("a size with a leading zero", { replace($0, #""Size":1,"#, #""Size":01,"#) }, .headerMalformed),
        ("a size that is not the data's", { replace($0, #""Size":1,"#, #""Size":2,"#) }, .digestMismatch),
        ("a slash escaped", { replace($0, #""a/b""#, #""a\/b""#) }, .headerMalformed),
        ("a letter escaped", { replace($0, #""scan.pdf""#, #""sc\u0061n.pdf""#) }, .headerMalformed),
        ("a control character raw", { replace($0, #"new\nline"#, "new\nline") }, .headerMalformed),
        ("a character outside base64", { replace($0, #""Data":"AA=="#, #""Data":"A*=="#) }, .headerMalformed),
        ("base64 padding with bits set", { replace($0, #""Data":"AA=="#, #""Data":"AB=="#) }, .headerMalformed),
        ("base64 cut short", { replace($0, #""Data":"AA=="#, #""Data":"AA="#) }, .headerMalformed),
        ("a digest of other bytes", { flipDigest($0) }, .digestMismatch),
        ("bytes after the end", { $0 + [0x20] }, .trailingData),
        ("a payload cut before its end", { Array($0.dropLast(2)) }, .truncated),
        ("an empty name", { replace($0, #""Name":"x""#, #""Name":"""#) }, .headerMalformed),
        ("an empty tag list", { replace($0, #""Data":"AAA="#, #""Tags":[],"Data":"AAA="#) }, .headerMalformed),
        ("a space between tags", { replace($0, #""acme","#, #""acme", "#) }, .headerMalformed),
        ("a tag list left open", { replace($0, #""quo\"te"],"#, #""quo\"te","#) }, .headerMalformed),
        ("tags spelt otherwise", { replace($0, #""Tags":["#, #""tags":["#) }, .headerMalformed),
        ("an empty tag", { replace($0, #""acme","#, #""","#) }, .headerMalformed),
        (
            "a content type with a space",
            { replace($0, #""ContentType":"application/pdf""#, #""ContentType":"a b""#) }, .headerMalformed
        ),
        (
            "the same id twice",
            { replace($0, #""Id":"101112131415161718191a1b1c1d1e1f"#, #""Id":"000102030405060708090a0b0c0d0e0f"#) },
            .headerMalformed
        )
    ]

    static func replace(_ bytes: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        precondition(text.contains(old), "the test's payload holds \(old)")
        return Array(text.replacingOccurrences(of: old, with: new, options: [], range: text.range(of: old)).utf8)
    }

    static func flipDigest(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        let text = String(decoding: bytes, as: UTF8.self)
        let at = text.utf8.distance(from: text.startIndex, to: text.range(of: #""SHA256":""#)!.upperBound)
        b[at] = b[at] == 0x30 ? 0x31 : 0x30
        return b
    }

    @Test func everyDepartureFromVaultsLayoutIsRefusedWhereItStarts() throws {
        let valid = Self.payload(Self.documents(), shape: .objects)
        for (what, change, code) in Self.tampered {
            for piece in [1, 7, 1 << 20] {
                #expect("\(what), in pieces of \(piece)") {
                    _ = try Self.read(change(valid), shape: .objects, piece: piece)
                } throws: { error in
                    (error as? VaultError)?.code == code
                }
            }
        }
    }

    @Test func moreDocumentsThanTheLimitAreRefusedBeforeTheExtraOnesData() throws {
        let documents = Self.documents(3)
        #expect {
            _ = try Self.read(Self.payload(documents, shape: .strings), shape: .strings, piece: 5, maxDocuments: 2)
        } throws: { error in
            let e = error as? VaultError
            let limit = "the payload holds more than 2 documents"
            return e?.code == .tooManyDocuments && e?.message.hasPrefix(limit) == true
        }
        #expect(
            try Self.read(Self.payload(documents, shape: .strings), shape: .strings, piece: 5, maxDocuments: 3)
                .bytes.count == 3)
    }

    @Test func aNameLongerThanTheBoundIsRefusedWithoutBeingHeld() throws {
        var documents = Self.documents(1)
        documents[0].record = DocumentRecord(
            id: documents[0].record.id,
            metadata: DocumentMetadata(
                name: String(repeating: "n", count: PayloadReader.maxStringBytes), contentType: "text/plain", size: 0,
                sha256: Array(SHA256.hash(data: [UInt8]())), addedAtMillis: 0, tags: []))
        #expect(throws: VaultError.self) {
            _ = try Self.read(Self.payload(documents, shape: .objects), shape: .objects, piece: 1000)
        }
    }
}

/// docs/RECEIVE.md's vector of the contract across the wire: a tagged document in a folder.
@Suite struct ContractVectorTests {
    @Test func theDocumentedVectorIsWhatAStationSendsAndTheReceiverReads() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/RECEIVE.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let vector = try #require(
            text.split(separator: "\n").first { $0.hasPrefix(#"{"Files":[{"Id":"000102"#) }.map { Array($0.utf8) })
        let bytes = Array("hello".utf8)
        let record = DocumentRecord(
            id: DocumentID(bytes: Array(0..<16)),
            metadata: DocumentMetadata(
                name: "clients/Acme GmbH/offer.txt", contentType: "text/plain", size: 5,
                sha256: Array(SHA256.hash(data: bytes)), addedAtMillis: 0, tags: ["acme", "2026 Q1"]))
        let sent = PayloadReaderTests.payload([.init(record: record, bytes: bytes)], shape: .objects)
        #expect(sent == vector, "\(String(decoding: sent, as: UTF8.self))")
        let got = try PayloadReaderTests.read(vector, shape: .objects, piece: 7)
        #expect(got.headers.first?.name == "clients/Acme GmbH/offer.txt")
        #expect(got.headers.first?.tags == ["acme", "2026 Q1"])
        #expect(got.bytes == [bytes])
    }
}
