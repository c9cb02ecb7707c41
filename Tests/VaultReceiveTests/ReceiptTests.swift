import Foundation
import Testing
import VaultCore
import VaultTestSupport

@testable import VaultReceive

/// Receipts: the statement byte for byte (the vector of docs/FORMAT.md), the Ed25519 signature
/// against RFC 8032's vector, every field covered by it, and the signature checked by an
/// implementation this project did not write (PyNaCl, in the test peers).
@Suite struct ReceiptTests {
    static func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }
    static func key(_ seed: String) throws -> SigningKey {
        try hex(seed).withUnsafeBytes { try SigningKey(seed: try SecretBytes(copying: $0)) }
    }

    /// RFC 8032, section 7.1, test 1 (an empty message).
    @Test func theSignatureIsRFC8032sEd25519() throws {
        let k = try Self.key("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        #expect(Hex.encode(k.publicKey) == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let signature = k.sign([])
        #expect(
            Hex.encode(signature)
                == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46b"
                + "d25bf5f0595bbe24655141438e7a100b")
        #expect(SigningKey.verify(signature, of: [], publicKey: k.publicKey))
        #expect(!SigningKey.verify(signature, of: [0], publicKey: k.publicKey))
    }

    static let ab = String(repeating: "ab", count: 32)
    static let cd = String(repeating: "cd", count: 32)

    /// The receipt of docs/FORMAT.md's vector.
    static let vector = Receipt(
        batch: "0f5c6f1e-2a1b-4c3d-8e9f-a0b1c2d3e4f5/1",
        documents: [
            .init(id: DocumentID(hex: "000102030405060708090a0b0c0d0e0f")!, sha256: hex(ab), size: 3),
            .init(id: DocumentID(hex: "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")!, sha256: hex(cd), size: 0),
        ],
        payloadSHA256: hex(String(repeating: "ef", count: 32)), receiver: "office \"main\"", station: "station-3",
        timeMillis: 1_795_651_200_123)

    @Test func theStatementIsCanonicalJSONByteForByte() throws {
        let statement = String(decoding: Self.vector.statement(), as: UTF8.self)
        #expect(
            statement
                == #"{"batch":"0f5c6f1e-2a1b-4c3d-8e9f-a0b1c2d3e4f5/1","documents":["#
                + #"{"id":"000102030405060708090a0b0c0d0e0f","sha256":"\#(Self.ab)","size":3},"#
                + #"{"id":"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff","sha256":"\#(Self.cd)","size":0}],"#
                + #""payloadSHA256":"\#(String(repeating: "ef", count: 32))","receiver":"office \"main\"","#
                + #""station":"station-3","time":"2026-11-26T00:00:00.123Z","version":1}"#)
        // JSON a parser takes, with its keys in sorted order.
        let object = try JSONSerialization.jsonObject(with: Data(Self.vector.statement())) as? [String: Any]
        #expect(object?["receiver"] as? String == "office \"main\"")
        #expect(Receipt.time(0) == "1970-01-01T00:00:00.000Z" && Receipt.time(-1) == "1969-12-31T23:59:59.999Z")
    }

    /// The signature of docs/FORMAT.md's vector (seed 0x11 × 32), as PyNaCl computed it.
    @Test func theVectorsSignatureIsTheDocumentedOne() throws {
        let k = try Self.key(String(repeating: "11", count: 32))
        #expect(Hex.encode(k.publicKey) == "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737")
        #expect(
            Hex.encode(k.sign(Self.vector.signedMessage()))
                == "91c72fe8c4968bec1c169a5256c4438afce6cadf1d865b4a0666ff87b0ea8dd7"
                + "189e2d0bea83043972d9f258ad8a4f795d3c476f790ec0e289c286ce61bf2700")
    }

    @Test func everyFieldIsCoveredByTheSignature() throws {
        let k = try Self.key(String(repeating: "11", count: 32))
        let r = Self.vector
        let signature = k.sign(r.signedMessage())
        #expect(r.isSigned(signature, by: k.publicKey))
        var changes: [Receipt] = []
        var c = r
        c.batch += "x"
        changes.append(c)
        c = r
        c.documents[1].size = 1
        changes.append(c)
        c = r
        c.documents.removeLast()
        changes.append(c)
        c = r
        c.documents[0].sha256[0] ^= 1
        changes.append(c)
        c = r
        c.payloadSHA256[31] ^= 1
        changes.append(c)
        c = r
        c.receiver = "office"
        changes.append(c)
        c = r
        c.station = "station-4"
        changes.append(c)
        c = r
        c.timeMillis += 1
        changes.append(c)
        for changed in changes { #expect(!changed.isSigned(signature, by: k.publicKey), "\(changed)") }
        let other = try Self.key(String(repeating: "22", count: 32))
        #expect(!r.isSigned(signature, by: other.publicKey))
    }

    /// PyNaCl (libsodium's Python binding, from the test peers) verifies what vault signed, from
    /// the answer's bytes alone: the statement inside it, the domain tag and the signature.
    @Test func pyNaClVerifiesTheReceiptFromTheAnswerAlone() throws {
        let k = try Self.key(String(repeating: "33", count: 32))
        let answer = Self.vector.signed(with: k)
        let script = """
            import base64, json, sys
            from nacl.signing import VerifyKey
            answer = bytes.fromhex(sys.argv[2])
            start = answer.index(b'{"receipt":') + len(b'{"receipt":')
            end = answer.rindex(b',"signature":')
            statement = answer[start:end]
            signature = base64.b64decode(json.loads(answer)["signature"])
            VerifyKey(bytes.fromhex(sys.argv[1])).verify(b"vault-receipt/1\\n" + statement, signature)
            forged = statement.replace(b"station-3", b"station-4")
            try:
                VerifyKey(bytes.fromhex(sys.argv[1])).verify(b"vault-receipt/1\\n" + forged, signature)
                print("forgery accepted")
            except Exception:
                print("verified")
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Peer.python)
        p.arguments = ["-c", script, Hex.encode(k.publicKey), Hex.encode(answer)]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0 && text == "verified\n", "\(text)")
    }
}

/// A station reads a receiver's answer: the canonical statement, taken as sent, and its signature.
@Suite struct ReceiptAnswerTests {
    @Test func anAnswerReadsBackToItsReceiptAndSignature() throws {
        let k = try ReceiptTests.key(String(repeating: "44", count: 32))
        let answer = try Receipt.answer(ReceiptTests.vector.signed(with: k))
        #expect(answer.receipt == ReceiptTests.vector)
        #expect(answer.statement == ReceiptTests.vector.statement())
        #expect(answer.isSigned(by: k.publicKey))
        #expect(!answer.isSigned(by: try ReceiptTests.key(String(repeating: "45", count: 32)).publicKey))
    }

    @Test func anythingButTheCanonicalAnswerIsRefused() throws {
        let k = try ReceiptTests.key(String(repeating: "44", count: 32))
        let good = String(decoding: ReceiptTests.vector.signed(with: k), as: UTF8.self)
        let changes: [(String, String)] = [
            ("a space in the statement", good.replacingOccurrences(of: #""size":3"#, with: #""size": 3"#)),
            ("keys in another order", good.replacingOccurrences(of: #","version":1}"#, with: "}").replacingOccurrences(
                of: #"{"receipt":{"#, with: #"{"receipt":{"version":1,"#)),
            ("an extra key", good.replacingOccurrences(of: #","version":1}"#, with: #","version":1,"x":1}"#)),
            ("another version", good.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)),
            ("a day that does not exist", good.replacingOccurrences(of: "2026-11-26", with: "2026-02-31")),
            ("an upper-case digest", good.replacingOccurrences(of: "efefef", with: "EFEFEF")),
            ("a short signature", good.replacingOccurrences(of: #","signature":""#, with: #","signature":"AAAA"#)),
            ("no signature", String(good.prefix(upTo: good.range(of: #","signature""#)!.lowerBound)) + "}"),
            ("something else", #"{"ok":true}"#),
        ]
        for (what, text) in changes {
            #expect(throws: VaultError.self, "\(what)") { _ = try Receipt.answer(Array(text.utf8)) }
        }
        // A changed statement still reads, but is not signed.
        let forged = try Receipt.answer(Array(good.replacingOccurrences(of: "station-3", with: "station-4").utf8))
        #expect(!forged.isSigned(by: k.publicKey))
    }
}

@Suite struct StationHeadTests {
    @Test func aHeadBehindOrBesideTheLastOneIsRefused() {
        let tag = [UInt8](repeating: 1, count: 16), other = [UInt8](repeating: 2, count: 16)
        let known = HistoryHead(count: 10, tag: tag)
        #expect(Receiver.headProblem(HistoryHead(count: 9, tag: other), known: known) == "rolled-back")
        #expect(Receiver.headProblem(HistoryHead(count: 10, tag: other), known: known) == "forked")
        #expect(Receiver.headProblem(HistoryHead(count: 10, tag: tag), known: known) == nil)
        #expect(Receiver.headProblem(HistoryHead(count: 11, tag: other), known: known) == nil)
    }
}
