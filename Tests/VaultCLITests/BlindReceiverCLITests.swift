import Foundation
import Testing
import VaultTestSupport

/// A receiver that holds no identity takes the sealed batches of an ordinary station whose
/// destination seals to the office's recipients (`--recipients-file`): it keeps each document's
/// two age files as they came, signs its receipt for them, and the office opens them with its
/// identity; the station's receipts, ledger, audit and removal by delivery work as for any
/// destination, also when an answer is lost and the batch, sealed anew, is sent again.
@Suite(.blocking) struct BlindReceiverCLITests {
    static let documents: [(path: String, name: String, bytes: [UInt8])] = [
        ("in/letter.txt", "letter.txt", Array("A letter only the office may read, sent sealed.\n".utf8)),
        ("in/sub/scan 1.pdf", "sub/scan 1.pdf", [UInt8].random(2_500_000, seed: 621)),
        ("in/sub/empty.txt", "sub/empty.txt", [])
    ]

    /// An ordinary station with the documents (tagged), the office's key pair, and a receiver
    /// without any identity that takes sealed batches only, with a station token and its receipt
    /// key.
    static func stationAndBlindOffice(_ s: Sandbox) throws -> (office: ReceiverProcess, token: String, key: String) {
        guard SealedDeliveryCLITests.requireAge() else { throw PeerError("age is not installed") }
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("in/sub"), withIntermediateDirectories: true)
        for d in documents { s.write(d.path, d.bytes) }
        let added = s.run("add", "-r", s.path("in"), "--tag", "north")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(s.shell("age-keygen -o office.key 2>/dev/null").status == 0)
        s.write("office.recipients", Array("\(try SealedDeliveryCLITests.recipient(s, "office.key"))\n".utf8))
        let office = try ReceiverProcess(s, extra: ["--require-sealed"])
        let token = office.addStation("desk")
        let key = office.run("receive", "key").out.trimmingCharacters(in: .whitespacesAndNewlines)
        return (office, token, key)
    }

    /// What the office opens with its identity: every document under its name, byte for byte,
    /// with its tags (an export).
    static func expectOpened(_ s: Sandbox, _ office: ReceiverProcess, _ folder: String) throws {
        let got = office.run("get", "--all", "-o", s.path(folder), "--identity", s.path("office.key"))
        #expect(got.status == 0, "\(got.stderr)")
        for d in documents {
            let bytes = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("\(folder)/\(d.name)"))))
            #expect(bytes.map(CapturedDeliveryCLITests.hex) == CapturedDeliveryCLITests.hex(d.bytes), "\(d.name)")
        }
        let exported = office.run("export", "--out", s.path(folder + "-export"), "--identity", s.path("office.key"))
        #expect(exported.status == 0, "\(exported.stderr)")
        let payload = try Data(contentsOf: URL(fileURLWithPath: s.path(folder + "-export/batch-0001.json")))
        let files = (try JSONSerialization.jsonObject(with: payload) as? [String: Any])?["Files"] as? [[String: Any]]
        #expect(Set((files ?? []).compactMap { $0["Name"] as? String }) == Set(documents.map(\.name)))
        #expect((files ?? []).allSatisfy { $0["Tags"] as? [String] == ["north"] })
    }

    @Test(arguments: ["json", "tus"])
    func aSealedBatchIsKeptSealedByAReceiverWithoutTheIdentity(wire: String) throws {
        let s = Sandbox()
        let (office, token, key) = try Self.stationAndBlindOffice(s)
        let url = office.url + (wire == "tus" ? "/files/" : "/batches")
        let added = s.run(
            ["destination", "add", "office", url, "--protocol", wire, "--recipients-file", s.path("office.recipients")]
                + (wire == "tus" ? [] : ["--receipt-key", key]))
        #expect(added.status == 0, "\(added.stderr)")
        let up = s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        // Kept as they came: the office's records name nothing of the contents, its folder holds
        // no window of them, and without the identity nothing opens.
        let stored = office.documents
        #expect(stored.count == Self.documents.count && stored.allSatisfy { $0["name"] as? String == "(sealed)" })
        #expect(
            CaptureAttackCLITests.writeWindows(s, Self.documents.map { ($0.path, $0.bytes) }) > 20
                && CaptureAttackCLITests.filesHoldingWindows(s, "in").count == 2)
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "office") == [], "the receiver's folder")
        let first = try #require(stored.first?["id"] as? String)
        #expect(office.run("get", first, "-o", s.path("refused")).status == 64)
        #expect(office.run("verify").status == 0)
        try Self.expectOpened(s, office, "opened")
        // The station's receipts name the sealed files it sent: its audit and removal by
        // delivery rest on them.
        if wire == "json" {
            #expect(s.run("log", "--json").out.contains("\"sealed\""))
            let audit = s.run("audit", "--require-receipts", "office")
            #expect(audit.status == 0, "\(audit.out)\(audit.stderr)")
        }
        let removed = s.run("remove", "--delivered-to", "office")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(s.run("list", "--json").out.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    /// The office's first answer is lost on the way: the station seals the batch again (other
    /// bytes) and sends it under the same key; the receiver, which keeps what it took by the
    /// ids in the clear, answers the first attempt's receipt, and the station, which kept what
    /// that attempt sent, checks it. Nothing is kept twice.
    @Test func aLostAnswerIsAnsweredAgainAndChecked() throws {
        let s = Sandbox()
        let (office, token, key) = try Self.stationAndBlindOffice(s)
        let hop = try PythonPeer("flip-proxy.py", ["--upstream", office.url, "--lose-answers", "/batches:1"], in: s)
        let added = s.run(
            "destination", "add", "office", hop.url + "batches", "--recipients-file", s.path("office.recipients"),
            "--receipt-key", key)
        #expect(added.status == 0, "\(added.stderr)")
        let up = s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        #expect(hop.entries.first?["fault"] as? String == "lost-answer", "\(hop.entries)")
        #expect(office.log.contains("result=200 duplicate"), "\(office.log)")
        #expect(office.documents.count == Self.documents.count)
        #expect(s.run("audit", "--require-receipts", "office").status == 0)
        try Self.expectOpened(s, office, "opened")
    }

    /// A sealed form names its documents in a sealed manifest, which only the identity opens: a
    /// receiver without one refuses it (415), saying how to send instead; a plaintext batch is
    /// refused too (`--require-sealed`); nothing is kept.
    @Test func aSealedFormIsRefusedByAReceiverWithoutTheIdentity() throws {
        let s = Sandbox()
        let (office, token, _) = try Self.stationAndBlindOffice(s)
        let up = s.run(
            [
                "upload", "--url", office.url + "/batches", "--protocol", "form", "--recipients-file",
                s.path("office.recipients"), "--retries", "0"
            ], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status != 0 && up.stderr.contains("415"), "\(up.stderr)")
        #expect(up.stderr.contains("by json or tus"), "\(up.stderr)")
        let plain = s.run(
            ["upload", "--url", office.url + "/batches", "--retries", "0", "--new-run"],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(plain.status != 0 && plain.stderr.contains("415"), "\(plain.stderr)")
        #expect(office.documents.isEmpty)
    }
}
