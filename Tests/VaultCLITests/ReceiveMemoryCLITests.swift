import Foundation
import Testing
import VaultTestSupport

/// The receiver's peak memory (VmHWM of the `vault receive` process, a process of its own)
/// does not grow with what it takes: one large batch streamed to it, then twenty stations
/// uploading at once. `make test` sends a quarter of the data (256 MiB; 20 x 6 MiB), `make long`
/// the full size (1 GiB; 20 x 50 MiB), against the same bounds.
@Suite(.serialized, .blocking) struct ReceiveMemoryCLITests {
    static let large = TestSize.pick(256, long: 1024)
    static let each = TestSize.pick(6, long: 50)

    @Test func aLargeBatchAndTwentyStationsAtOnceKeepTheReceiverNearItsIdleMemory() throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big", mebibytes: Self.large, seed: 3)
        #expect(s.run("add", "big").status == 0)
        try FileManager.default.removeItem(atPath: s.path("big"))
        let office = try ReceiverProcess(s)
        var tokens: [String] = []
        for i in 0..<20 { tokens.append(office.addStation("station-\(i)")) }
        // Idle: started, and one small batch taken (the server's own buffers exist).
        s.write("small", [UInt8].random(1000, seed: 1))
        let small = Sandbox()
        small.initVault()
        small.write("one", [UInt8].random(1000, seed: 2))
        #expect(small.run("add", "one").status == 0)
        let warm = small.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": tokens[0]])
        #expect(warm.status == 0)
        let idle = Peer.peakRSSKiB(office.pid)

        // One large batch, streamed: the export piped into curl (chunked, no Content-Length).
        let streamed = s.shell(
            """
            "$1" export --out - | curl -sS -X POST -T - -o /dev/null -w '%{http_code}' \
                -H 'Authorization: Bearer \(tokens[1])' -H 'Idempotency-Key: large' \
                -H 'Content-Type: application/json' '\(office.url)/batches'
            """)
        #expect(streamed.out == "200", "\(streamed.out) \(streamed.stderr)")
        let afterLarge = Peer.peakRSSKiB(office.pid)

        // Twenty stations at once, one batch of one document each.
        let many = Sandbox()
        many.initVault()
        for i in 0..<20 {
            try many.writeLarge("d\(i)", mebibytes: Self.each, seed: UInt64(100 + i))
            #expect(many.run("add", "d\(i)").status == 0)
            try FileManager.default.removeItem(atPath: many.path("d\(i)"))
        }
        #expect(many.run("export", "--batch-size", "1", "--out", many.path("out")).status == 0)
        let batches = try FileManager.default.contentsOfDirectory(atPath: many.path("out"))
            .filter { $0.hasPrefix("batch-") }.sorted()
        #expect(batches.count == 20)
        var pids: [pid_t] = []
        for (i, batch) in batches.enumerated() {
            pids.append(
                try Peer.spawn(
                    [
                        "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                        "Authorization: Bearer \(tokens[i])",
                        "-H", "Idempotency-Key: many-\(i)", "-H", "Content-Type: application/json", "--data-binary",
                        "@" + many.path("out/" + batch), office.url + "/batches",
                    ], stdout: many.path("status-\(i)"), stderr: many.path("err-\(i)"), searchPath: true))
        }
        for pid in pids {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        let statuses = (0..<20).map { (try? String(contentsOfFile: many.path("status-\($0)"), encoding: .utf8)) ?? "" }
        #expect(statuses.allSatisfy { $0 == "200" }, "\(statuses)")
        let afterMany = Peer.peakRSSKiB(office.pid)
        print(
            "vault receive peak RSS: idle \(idle) KiB; +\(afterLarge - idle) KiB for \(Self.large) MiB in one batch; "
                + "+\(afterMany - idle) KiB with 20 stations of \(Self.each) MiB at once")
        #expect(office.documents.count == 22)
        #expect(afterLarge - idle < 8 << 10, "one large batch: idle \(idle) KiB, then \(afterLarge) KiB")
        #expect(afterMany - idle < 32 << 10, "20 at once: idle \(idle) KiB, then \(afterMany) KiB")
    }
}
