import Crypto
import Foundation
import Testing
import VaultTestSupport

/// A sealed batch's resend is the station's (docs/SECURITY.md, "A resend is the station's";
/// hostile review, issue 58 finding 3): a hop that sees a sealed batch's token, Idempotency-Key
/// and body cannot learn whether a guess of its documents is right by posting the guess under
/// the key, and the station's own resend (sealed again, with new keys) is still answered with its
/// receipt. The hop is scripts/flip-proxy.py, which keeps what passes through it; the guesses are
/// sealed with Debian's age, as an attacker would.
@Suite(.blocking) struct SealedResendCLITests {
    /// A station holding one document `name` with `secret`, and a receiver with an age identity
    /// that knows the station: the office's recipient, the receiver and the station's token.
    static func stationAndOffice(
        _ s: Sandbox, name: String, secret: [UInt8]
    ) throws -> (recipient: String, office: ReceiverProcess, token: String) {
        s.initVault()
        s.write(name, secret)
        #expect(s.run("add", s.path(name), "--name", name).status == 0)
        #expect(s.run("keygen", "--out", s.path("office.key")).status == 0)
        let recipient = try SealedDeliveryCLITests.recipient(s, "office.key")
        let office = try ReceiverProcess(s, extra: ["--identity", s.path("office.key")])
        return (recipient, office, office.addStation("scanner"))
    }

    /// `bytes` sealed by Debian's age to `recipient`, in base64: what a hop can make.
    static func ageSealed(_ s: Sandbox, _ bytes: [UInt8], to recipient: String) -> String {
        s.write("plain.tmp", bytes)
        _ = s.shell("age -r \(recipient) -o sealed.tmp plain.tmp")
        return (try? Data(contentsOf: URL(fileURLWithPath: s.path("sealed.tmp"))))?.base64EncodedString() ?? ""
    }

    /// The metadata a hop writes for its guess of document `id` (vault's canonical JSON, padded).
    static func guessedMetadata(id: String, name: String, _ guess: [UInt8]) -> [UInt8] {
        let sha = SHA256.hash(data: guess).map { String(format: "%02x", $0) }.joined()
        let m = Array(
            (#"{"Id":"\#(id)","Name":"\#(name)","ContentType":"text/plain","Size":\#(guess.count),"#
                + #""SHA256":"\#(sha)"}"#).utf8)
        return m + [UInt8](repeating: 0x20, count: 256 - m.count % 256)
    }

    @Test func aHopCannotConfirmAGuessOfASealedBatchAndTheStationsResendIsTaken() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let secret = Array("Offer to Acme GmbH: 1,250,000 EUR, valid until 2026-12-31\n".utf8)
        let (recipient, office, token) = try Self.stationAndOffice(s, name: "offer.txt", secret: secret)
        let bodies = s.path("hop")
        try FileManager.default.createDirectory(atPath: bodies, withIntermediateDirectories: true)
        // The hop loses the office's first answer: the station seals the batch again (new file
        // keys, other bytes) and sends it under the same key; the office answers its receipt.
        let hop = try PythonPeer(
            "flip-proxy.py", ["--upstream", office.url, "--lose-answers", "/batches:1", "--keep-bodies", bodies], in: s)
        let up = s.run(
            ["upload", "--url", hop.url + "batches", "--recipient", recipient],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        let seen = hop.entries.filter { $0["method"] as? String == "POST" }
        #expect(seen.count == 2 && seen.first?["fault"] as? String == "lost-answer", "\(seen)")
        #expect(office.log.contains("result=200 duplicate"), "\(office.log)")
        #expect(office.documents.count == 1)
        let key = try #require(seen.first?["key"] as? String)
        let captured = try #require(
            (seen.first?["body"] as? String).flatMap { try? Data(contentsOf: URL(fileURLWithPath: $0)) })
        #expect(captured != (try? Data(contentsOf: URL(fileURLWithPath: seen.last?["body"] as? String ?? ""))))
        let entry = try #require(
            ((try JSONSerialization.jsonObject(with: captured) as? [String: Any])?["Files"] as? [[String: String]])?
                .first)
        let id = try #require(entry["Id"])

        func sealed(_ bytes: [UInt8]) -> String { Self.ageSealed(s, bytes, to: recipient) }
        func metadata(_ guess: [UInt8]) -> [UInt8] { Self.guessedMetadata(id: id, name: "offer.txt", guess) }
        func post(_ payload: String) -> (status: Int, body: String) {
            s.write("guess.json", Array(payload.utf8))
            return office.curl(
                token: token,
                [
                    "-H", "Idempotency-Key: \(key)", "-H", "Content-Type: application/json", "--data-binary",
                    "@" + s.path("guess.json"), office.url + "/batches"
                ])
        }
        func guess(_ bytes: [UInt8], metadata sealedMetadata: String? = nil) -> (status: Int, body: String) {
            post(
                #"{"Sealed":"age-encryption.org/v1","Files":[{"Id":"\#(id)","Metadata":""#
                    + (sealedMetadata ?? sealed(metadata(bytes))) + #"","Data":""# + sealed(bytes) + #""}]}"#)
        }
        let wrong = Array("Offer to Acme GmbH: 990,000 EUR, valid until 2026-12-31\n".utf8)
        // A guess sealed to the office's public recipient under the batch's key: refused alike,
        // right or wrong (before, the right one was answered 200 with the batch's receipt).
        let right = guess(secret), other = guess(wrong)
        #expect(right.status == 422 && right.body.contains("idempotency-key-reused"), "\(right)")
        #expect(right.status == other.status && right.body == other.body, "\(right) \(other)")
        // The guess in the clear: refused alike too (before: 200, the receipt in the clear).
        let sha = SHA256.hash(data: secret).map { String(format: "%02x", $0) }.joined()
        let plain = post(
            #"{"Files":[{"Id":"\#(id)","Name":"offer.txt","ContentType":"text/plain","Size":\#(secret.count),"#
                + #""SHA256":"\#(sha)","Data":"\#(Data(secret).base64EncodedString())"}]}"#)
        #expect(plain.status == 422 && plain.body == right.body, "\(plain)")
        // The station's own sealed metadata (its proof inside) beside a data file the hop sealed:
        // the data is not the file the metadata names, refused before it is opened, right or wrong.
        let stationsMetadata = try #require(entry["Metadata"])
        let mixedRight = guess(secret, metadata: stationsMetadata)
        let mixedWrong = guess(wrong, metadata: stationsMetadata)
        #expect(mixedRight.status == 400 && mixedRight.body.contains("digest-mismatch"), "\(mixedRight)")
        #expect(mixedRight.body == mixedWrong.body, "\(mixedRight) \(mixedWrong)")
        // What the station sent, sent again by the hop: the station's own bytes, its receipt
        // (sealed to the station's file keys, which the hop does not have).
        let replay = post(String(decoding: captured, as: UTF8.self))
        #expect(replay.status == 200 && replay.body.hasPrefix(#"{"sealedReceipt":""#), "\(replay)")
        #expect(!replay.body.contains(sha))
        #expect(office.documents.count == 1)
        #expect(office.documents.first?["sha256"] as? String == sha)
    }

    /// Found by the independent review of the fix above: a hop that holds the station's sealed
    /// batch back and posts its own guess under the batch's key first had its guess taken
    /// (without a proof), and then the station's batch, forwarded, was compared with it by
    /// documents: 200 for a right guess, 422 for a wrong one. Now a batch with a proof is never
    /// compared with one taken without it: forwarded after either guess, the same 422.
    @Test func aHopThatPostsItsGuessFirstLearnsNothingFromTheStationsBatch() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let secret = Array("Salary review 2027: M. Keller, 98,400 EUR\n".utf8)
        let (recipient, office, token) = try Self.stationAndOffice(s, name: "review.txt", secret: secret)
        let bodies = s.path("held")
        try FileManager.default.createDirectory(atPath: bodies, withIntermediateDirectories: true)
        // The hop holds what the station sends (its upstream answers nothing).
        let hop = try PythonPeer(
            "flip-proxy.py", ["--upstream", "http://127.0.0.1:1", "--keep-bodies", bodies], in: s)
        func post(_ key: String, _ payload: [UInt8]) -> (status: Int, body: String) {
            s.write("post.json", payload)
            return office.curl(
                token: token,
                [
                    "-H", "Idempotency-Key: \(key)", "-H", "Content-Type: application/json", "--data-binary",
                    "@" + s.path("post.json"), office.url + "/batches"
                ])
        }
        var forwarded: [(status: Int, body: String)] = []
        for guess in [secret, Array("Salary review 2027: M. Keller, 91,000 EUR\n".utf8)] {
            let before = hop.entries.count
            let held = s.run(
                ["upload", "--url", hop.url + "batches", "--recipient", recipient, "--new-run", "--retries", "0"],
                env: ["VAULT_UPLOAD_TOKEN": token])
            #expect(held.status != 0)
            let entry = try #require(hop.entries.dropFirst(before).first { $0["method"] as? String == "POST" })
            let key = try #require(entry["key"] as? String)
            let captured = try #require(
                (entry["body"] as? String).flatMap { try? Data(contentsOf: URL(fileURLWithPath: $0)) })
            let file = try #require(
                ((try JSONSerialization.jsonObject(with: captured) as? [String: Any])?["Files"] as? [[String: String]])?
                    .first)
            let id = try #require(file["Id"])
            let m = Self.guessedMetadata(id: id, name: "review.txt", guess)
            let first = post(
                key,
                Array(
                    (#"{"Sealed":"age-encryption.org/v1","Files":[{"Id":"\#(id)","Metadata":""#
                        + Self.ageSealed(s, m, to: recipient) + #"","Data":""# + Self.ageSealed(s, guess, to: recipient)
                        + #""}]}"#).utf8))
            #expect(first.status == 200, "the hop's guess, first under the key, is a batch: \(first)")
            forwarded.append(post(key, Array(captured)))
        }
        #expect(forwarded[0].status == 422 && forwarded[0].body.contains("idempotency-key-reused"), "\(forwarded[0])")
        #expect(forwarded[0].status == forwarded[1].status && forwarded[0].body == forwarded[1].body, "\(forwarded)")
    }
}
