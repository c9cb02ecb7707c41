import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `vault receive` stopped while batches arrive: SIGTERM lets the batch in flight finish; a
/// `kill -9` at any moment leaves a vault that verifies with whole batches only, and the
/// station's next upload completes without storing anything twice.
@Suite(.blocking) struct ReceiveStopCLITests {
    @Test func sigtermLetsTheBatchInFlightFinishThenStops() throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big", mebibytes: 6, seed: 5)
        #expect(s.run("add", "big").status == 0)
        let payload = s.run("export", "--out", "-")
        try #require(payload.status == 0, "\(payload.stderr)")
        s.write("payload.json", payload.stdout)
        let office = try ReceiverProcess(s)
        let token = office.addStation("st")
        // curl sends the 8 MiB body at 2 MiB/s: about four seconds in flight.
        let out = s.path("curl.out")
        let curl = try Peer.spawn(
            [
                "curl", "-sS", "--limit-rate", "2M", "-o", out, "-w", "%{http_code}", "-H",
                "Authorization: Bearer \(token)", "-H", "Idempotency-Key: in-flight", "-H",
                "Content-Type: application/json", "--data-binary", "@" + s.path("payload.json"),
                office.url + "/batches"
            ], stdout: out + ".status", stderr: out + ".err", searchPath: true)
        // The batch has begun when its first envelope is being written in staging/.
        let begun = poll(every: 10_000) {
            !((try? FileManager.default.contentsOfDirectory(atPath: s.path("office/staging"))) ?? []).isEmpty
        }
        #expect(begun)
        kill(office.pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(curl, &status, 0) < 0 && errno == EINTR {}
        #expect((try? String(contentsOfFile: out + ".status", encoding: .utf8)) == "200")
        #expect(((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").hasPrefix(#"{"receipt":"#))
        // The receiver ends by itself once the batch is stored.
        var exited = false
        poll(every: 20_000) {
            exited = waitpid(office.pid, &status, WNOHANG) == office.pid
            return exited
        }
        #expect(exited && (status & 0x7f) == 0 && (status >> 8) & 0xff == 0, "status \(status)")
        #expect(office.log.contains("stopping"), "\(office.log)")
        #expect(office.documents.count == 1)
        #expect(office.run("verify").status == 0)
    }

    @Test func aKilledReceiverKeepsWholeBatchesAndTheResendCompletes() throws {
        let s = Sandbox()
        s.initVault()
        var digests = Set<String>()
        for i in 0..<30 {
            let bytes = [UInt8].random(20_000 + i * 3_000, seed: UInt64(900 + i))
            s.write("d\(i)", bytes)
            #expect(s.run("add", "d\(i)").status == 0)
            digests.insert(Fixtures.sha(bytes))
        }
        var office = try ReceiverProcess(s)
        let token = office.addStation("st")
        let port = office.url.split(separator: ":").last.map(String.init) ?? "0"
        let env: [String: String?] = ["VAULT_UPLOAD_TOKEN": token]
        for round in 0..<3 {
            // An upload in batches of 3, and the receiver killed after a few of them.
            let upload = s.spawn(
                ["upload", "--url", office.url + "/batches", "--batch-size", "3", "--retries", "0"], env: env)
            let seen = round + 1
            poll(every: 5_000) { office.log.components(separatedBy: "result=200").count - 1 >= seen }
            kill(office.pid, SIGKILL)
            _ = s.wait(upload)
            // Whole batches only: the vault verifies, and holds a multiple of 3 documents.
            let stored = office.run("list", "--json")
            let list = (try? JSONSerialization.jsonObject(with: Data(stored.stdout)) as? [[String: Any]]) ?? []
            #expect(list.count % 3 == 0, "round \(round): \(list.count) documents")
            #expect(office.run("verify").status == 0)
            office = try ReceiverProcess(s, extra: [], create: false, listen: "127.0.0.1:\(port)")
        }
        // The station's next upload sends what was not confirmed; nothing is stored twice.
        let last = s.run(["upload", "--url", office.url + "/batches", "--batch-size", "3"], env: env)
        #expect(last.status == 0, "\(last.stderr)")
        let shas = office.documents.compactMap { $0["sha256"] as? String }
        #expect(shas.count == 30 && Set(shas) == digests, "\(shas.count) documents")
        #expect(office.run("audit").status == 0)
    }
}

/// What the review of the receiver found, each reproduced here (docs/SECURITY.md, "The back office").
@Suite(.blocking) struct ReceiverStateCLITests {
    /// A cut history (no password needed) would bring back a removed station's token; a
    /// deleted one would let a new receiver key be made. The receiver refuses to serve instead.
    @Test func aReceiverRefusesAHistoryThatDoesNotVerifyAndMakesNoNewKeyOverIt() throws {
        let s = Sandbox()
        var office: ReceiverProcess? = try ReceiverProcess(s)
        let token = office!.addStation("kept")
        _ = office!.addStation("removed")
        let size = (try FileManager.default.attributesOfItem(atPath: s.path("office/log.vlt"))[.size] as? Int) ?? 0
        #expect(office!.run("receive", "station", "remove", "removed").status == 0)
        office = nil
        // The log cut back to before the removal.
        #expect(s.shell("truncate -s \(size) office/log.vlt").status == 0)
        let env: [String: String?] = ["VAULT_PASSWORD": ReceiverProcess.password]
        let refused = s.run(["receive", "--vault", "office", "--listen", "127.0.0.1:0"], env: env)
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("history has findings"), "\(refused.stderr)")
        #expect(s.run(["receive", "--vault", "office", "station", "list"], env: env).status == 65)
        // The key file and the whole history deleted: no new key is made.
        #expect(s.shell("rm office/receiver.vlt office/log.vlt office/log.head office/log.anchor").status == 0)
        let key = s.run(["receive", "--vault", "office", "key"], env: env)
        #expect(key.status == 65 && key.out.isEmpty, "\(key.out) \(key.stderr)")
        _ = token
    }

    /// A password change reseals receiver.vlt: the key the stations were given and their tokens
    /// stay valid, and a wrong password opens nothing.
    @Test func passwdKeepsTheReceiverKeyAndTheStationsTokens() throws {
        let s = Sandbox()
        var office: ReceiverProcess? = try ReceiverProcess(s)
        let token = office!.addStation("st")
        let before = office!.run("receive", "key").out
        office = nil
        let changed = s.run(
            ["passwd", "--vault", "office"],
            env: ["VAULT_PASSWORD": ReceiverProcess.password, "VAULT_NEW_PASSWORD": "new office password"])
        #expect(changed.status == 0, "\(changed.stderr)")
        let wrong = s.run(["receive", "--vault", "office", "key"], env: ["VAULT_PASSWORD": ReceiverProcess.password])
        #expect(wrong.status == 77)
        let env: [String: String?] = ["VAULT_PASSWORD": "new office password"]
        #expect(s.run(["receive", "--vault", "office", "key"], env: env).out == before)
        #expect(s.run(["audit", "--vault", "office"], env: env).status == 0)
        // The station's old token still delivers, to the restarted receiver.
        let out = s.path("again.out")
        var environment = s.env
        environment["VAULT_PASSWORD"] = "new office password"
        let pid = try Peer.spawn(
            [Sandbox.binary, "receive", "--vault", s.path("office"), "--listen", "127.0.0.1:0"],
            environment: environment.map { "\($0.key)=\($0.value)" }, stdout: out, stderr: out + ".err")
        defer { Peer.stop(pid) }
        var line = ""
        poll(every: 20_000) {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            line = text.split(separator: "\n").first.map(String.init) ?? ""
            return !line.isEmpty
        }
        s.initVault()
        s.write("doc", [UInt8].random(500, seed: 8))
        #expect(s.run("add", "doc").status == 0)
        let url = String(line.dropFirst("listening on ".count))
        let sent = s.run(["upload", "--url", url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(sent.status == 0, "\(sent.stderr)")
    }

    /// Two receivers on one vault would each take a resent batch: the second is refused.
    @Test func oneReceiverServesAVault() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s)
        let second = s.run(
            ["receive", "--vault", "office", "--listen", "127.0.0.1:0"],
            env: ["VAULT_PASSWORD": ReceiverProcess.password])
        #expect(second.status != 0 && second.stderr.contains("another receiver serves this vault"), "\(second.stderr)")
        #expect(office.curl(token: nil, [office.url + "/healthz"]).status == 200)
    }

    /// One station's abandoned tus uploads do not block the other stations' batches.
    @Test func abandonedTusUploadsDoNotBlockOtherStations() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s)
        let hog = office.addStation("hog"), other = office.addStation("other")
        var statuses: [Int] = []
        for i in 0..<40 {
            statuses.append(
                office.curl(
                    token: hog,
                    [
                        "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1000", "-H",
                        "Idempotency-Key: hog-\(i)", office.url + "/files/",
                    ]
                ).status)
        }
        #expect(statuses.prefix(16).allSatisfy { $0 == 201 }, "\(statuses)")
        #expect(statuses.suffix(24).allSatisfy { $0 == 429 }, "\(statuses)")
        let doc = Fixtures.entry("0123456789abcdef0123456789abcdef", "a.txt", "hello", as: "hello")
        s.write("body.json", Array(#"{"Files":[\#(doc)]}"#.utf8))
        let posted = office.curl(
            token: other,
            [
                "-H", "Idempotency-Key: other-1", "-H", "Content-Type: application/json", "--data-binary",
                "@" + s.path("body.json"), office.url + "/batches",
            ])
        #expect(posted.status == 200, "\(posted)")
    }
}
