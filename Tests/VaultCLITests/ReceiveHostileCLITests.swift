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
        ("twenty-one", [413], "too-many-documents")
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
}
