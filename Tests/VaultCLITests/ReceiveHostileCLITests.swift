import Foundation
import Testing
import VaultTestSupport

/// Hostile clients of `vault receive` (scripts/hostile-client.py: Python `requests` for bodies, a
/// raw socket where HTTP itself is broken): each gets a clear 4xx or a closed connection within
/// bounded time, the receiver's memory stays flat, and nothing of any of them is stored.
@Suite(.blocking) struct ReceiveHostileCLITests {
    static let cases: [(name: String, statuses: Set<Int>, code: String?)] = [
        ("slow-headers", [0, 408], nil),
        ("slow-body", [0, 408], "too-slow"),
        ("endless-chunked", [0, 413], "too-large"),
        ("huge-headers", [0, 400, 431], nil),
        ("length-lies-long", [0, 400], nil),
        ("length-lies-short", [0, 400], "truncated"),
        ("length-and-chunked", [0, 400], nil),
        ("malformed-json", [400], "header-malformed"),
        ("malformed-base64", [400], "header-malformed"),
        ("name-with-slash", [400], "header-malformed"),
        ("name-with-control", [400], "header-malformed"),
        ("duplicate-ids", [400], "header-malformed"),
        ("twenty-one", [413], "too-many-documents"),
        // Hostile review, issue 58 finding 5: a refused body was read on at line rate, and a
        // request pipelined behind a 401 was answered.
        ("refused-body-read-on", [0, 401], nil),
        ("pipelined-after-refusal", [401], nil),
        ("pipelined-after-400", [400], nil)
    ]

    @Test func everyHostileRequestIsRefusedInBoundedTimeAndStoresNothing() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s, extra: ["--idle-timeout", "2", "--max-bytes", "2M"])
        let token = office.addStation("st")
        let before = Peer.peakRSSKiB(office.pid)
        let script = Peer.repository.appendingPathComponent("scripts/hostile-client.py").path
        let out = s.path("hostile.jsonl")
        let pid = try Peer.spawn(
            [Peer.python, script, office.url, token] + Self.cases.map(\.name), stdout: out, stderr: out + ".err")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let results = Peer.jsonLines(out)
        let errors = (try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? ""
        #expect(results.count == Self.cases.count, "\(errors)")
        for (c, r) in zip(Self.cases, results) {
            let got = r["status"] as? Int ?? -1
            #expect(c.statuses.contains(got), "\(c.name): \(got) \(r["body"] ?? "")")
            if let code = c.code, got != 0 {
                #expect((r["body"] as? String ?? "").contains(#""code":"\#(code)""#), "\(c.name): \(r["body"] ?? "")")
            }
            #expect((r["seconds"] as? Double ?? 999) < 60, "\(c.name) took \(r["seconds"] ?? "?") s")
        }
        // A refusal closes its connection: of a body of 1 TB sent for 15 s, no more went than
        // the sockets' buffers hold; behind a 401, nothing is answered.
        let readOn = results.first { $0["case"] as? String == "refused-body-read-on" }?["body"] as? String ?? ""
        let sent = Int(readOn.split(separator: "=").last ?? "") ?? .max
        #expect(sent < 64 << 20, "\(readOn)")
        for pipelined in ["pipelined-after-refusal", "pipelined-after-400"] {
            let answers = results.first { $0["case"] as? String == pipelined }?["body"] as? String
            #expect(answers == "answers=1", "\(pipelined)")
        }
        // A refused body that the client went on sending is not kept, whatever it got back.
        #expect(office.log.contains("result=413 too-large"), "\(office.log)")
        #expect(office.log.contains("result=408 too-slow"), "\(office.log)")
        // Nothing stored, nothing staged, and the vault verifies.
        #expect(office.documents.isEmpty)
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: s.path("office/staging"))) ?? []
        #expect(staged.isEmpty, "\(staged)")
        #expect(office.run("verify").status == 0)
        // Still serving, and its memory did not grow with what it was sent (2 MiB bodies, 200 KiB
        // headers, an endless body).
        #expect(office.curl(token: nil, [office.url + "/healthz"]).status == 200)
        let after = Peer.peakRSSKiB(office.pid)
        #expect(after - before < 24 << 10, "peak RSS grew from \(before) KiB to \(after) KiB")
    }

    /// Found by a hostile review: 256 connections each sending a sign-in body one byte a second
    /// were never closed (the idle timeout restarts with each byte), so no station's batch nor
    /// `/healthz` was answered, and SIGTERM waited for them. A request that is not a batch must
    /// now arrive whole within 10 s, so they are closed and the others are served.
    @Test func tricklingBodiesCannotShutStationsOutNorHoldOffAStop() throws {
        let s = Sandbox()
        s.initStationWithOneDocument()
        let office = try ReceiverProcess(s)
        let token = office.addStation("st")
        let port = try #require(office.url.split(separator: ":").last.map(String.init))
        let script = Peer.repository.appendingPathComponent("scripts/trickle-client.py").path
        func trickle(_ count: Int, _ name: String) throws -> pid_t {
            let pid = try Peer.spawn(
                [Peer.python, script, "127.0.0.1", port, "/ui/login", String(count), "120"],
                stdout: s.path(name), stderr: s.path(name + ".err"))
            #expect(poll(within: 120, every: 50_000) { Peer.jsonLines(s.path(name)).first?["opened"] != nil })
            return pid
        }
        let slow = try trickle(300, "trickle.jsonl")
        defer { Peer.stop(slow) }
        // Served while they trickle: within their 10 s and a little more, not after 120 s.
        let health = office.curl(token: nil, ["--max-time", "60", office.url + "/healthz"])
        #expect(health.status == 200, "\(health)")
        let up = s.run(
            ["upload", "--url", office.url + "/batches", "--timeout", "60", "--retries", "0"],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        // A stop is not held off by trickling bodies either.
        let more = try trickle(50, "trickle2.jsonl")
        defer { Peer.stop(more) }
        kill(office.pid, SIGTERM)
        var status: Int32 = 0
        #expect(poll(within: 45, every: 50_000) { waitpid(office.pid, &status, WNOHANG) == office.pid })
    }
}
