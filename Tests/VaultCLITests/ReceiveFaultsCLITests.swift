import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Faults at the back office are said, not hidden: a full disk is a 507 the station understands,
/// an error line naming the folder, a degraded `/healthz` and a metric, until space is back.
@Suite(.blocking) struct ReceiveFaultsCLITests {
    /// Mounts a tmpfs of `mebibytes` at `path` (root only: CI and the project's machines run as
    /// root); unmounted by the returned closure.
    static func mountSmall(_ path: String, mebibytes: Int) -> (() -> Void)? {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        func run(_ tool: String, _ args: [String]) -> Bool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: tool)
            p.arguments = args
            guard (try? p.run()) != nil else { return false }
            p.waitUntilExit()
            return p.terminationStatus == 0
        }
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(mebibytes)m", "tmpfs", path]) else { return nil }
        return { _ = run("/bin/umount", [path]) }
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskIsA507TheStationUnderstandsAndHealthSaysSoUntilSpaceIsBack() throws {
        let s = Sandbox()
        let unmount = try #require(Self.mountSmall(s.path("small"), mebibytes: 96), "could not mount a tmpfs")
        defer { unmount() }
        s.initVault()
        s.write("scan.bin", .random(12 << 20, seed: 5))
        #expect(s.run("add", "scan.bin", "-q").status == 0)
        let office = try ReceiverProcess(s, vault: "small/office")
        let token: [String: String?] = ["VAULT_UPLOAD_TOKEN": office.addStation("st")]
        // Leave about 4 MiB free.
        let free = { () -> Int in
            var st = statvfs()
            return statvfs(s.path("small"), &st) == 0 ? Int(st.f_bavail) * Int(st.f_frsize) : 0
        }
        s.write("small/filler", [])
        let filler = try #require(FileHandle(forWritingAtPath: s.path("small/filler")))
        let block = Data(count: 1 << 20)
        while free() > 5 << 20 { filler.write(block) }
        try filler.close()
        #expect(office.curl(token: nil, [office.url + "/healthz"]).status == 200)

        let full = s.run(["upload", "--url", office.url + "/batches"], env: token)
        #expect(full.status == 75, "\(full.stderr)")
        #expect(
            full.stderr.contains(
                """
                    vault: the back office is out of space (507 Insufficient Storage): it kept nothing of the batch, \
                    and nothing more was sent
                    vault: hint: ask the office to free space; run the same command again to resume

                    """), "\(full.stderr)")
        #expect(!full.stderr.contains("{\""), "no raw JSON: \(full.stderr)")
        let health = office.curl(token: nil, [office.url + "/healthz"])
        #expect(health.status == 503 && health.body == #"{"status":"degraded","reason":"disk-full"}"#, "\(health)")
        #expect(office.curl(token: nil, [office.url + "/metrics"]).body.contains("vault_receive_disk_full 1"))
        let line = office.log.split(separator: "\n").first { $0.contains("507 disk-full") }
        #expect(line?.contains("error") == true && line?.contains("no space left on device") == true, "\(office.log)")
        #expect(line?.contains(s.path("small/office")) == true, "the folder is named: \(office.log)")

        // Space is back: health says so, and the same upload delivers.
        try FileManager.default.removeItem(atPath: s.path("small/filler"))
        #expect(office.curl(token: nil, [office.url + "/healthz"]).status == 200)
        #expect(office.curl(token: nil, [office.url + "/metrics"]).body.contains("vault_receive_disk_full 0"))
        let again = s.run(["upload", "--url", office.url + "/batches"], env: token)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(office.documents.count == 1)
    }
}

extension ReceiveFaultsCLITests {
    /// The token of a station the office removed: the station is told what happened and what to
    /// do, the receiver logs which station's token it was, and a stranger's token is still only
    /// "unauthorized".
    @Test func aRemovedStationsTokenIsToldApartAndLogged() throws {
        let s = Sandbox()
        s.initStationWithOneDocument()
        let office = try ReceiverProcess(s)
        let token = office.addStation("old-scanner")
        #expect(office.run("receive", "station", "remove", "old-scanner").status == 0)
        let r = s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(r.status == 76, "\(r.stderr)")
        #expect(
            r.stderr
                == """
                    vault: the back office removed this station (401 Unauthorized): its token is no longer taken
                    vault: hint: ask the office to add this station again, then use the new token

                    """, "\(r.stderr)")
        #expect(poll(every: 20_000) { office.log.contains("the token of removed station 'old-scanner' was used") })
        #expect(office.log.contains("warning"), "\(office.log)")
        // Operators are told, once however often it is used, until the station is added again.
        #expect(s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 76)
        let listed = office.run("receive", "station", "list")
        #expect(
            listed.stderr.hasPrefix("vault: warning: the token of removed station old-scanner was used at 20")
                && listed.stderr.components(separatedBy: "old-scanner").count == 2, "\(listed.stderr)")
        let json = office.run("receive", "station", "list", "--json").out
        #expect(json.contains(#""removedTokensUsed":[{"name":"old-scanner","time":"20"#), "\(json)")
        _ = office.addStation("old-scanner")
        #expect(office.run("receive", "station", "list").stderr.isEmpty)
        // The old token of a station added again is still a removed one's: told apart from the
        // new station, which gets no rollback alert for it.
        #expect(s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 76)
        let again = office.run("receive", "station", "list")
        #expect(again.stderr.contains("removed station old-scanner") && !again.out.contains("alert"), "\(again)")
        let guess = "vst_" + String(repeating: "a", count: 64)
        let stranger = s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": guess])
        #expect(
            stranger.stderr.hasPrefix("vault: the server refused the credentials (401 Unauthorized)"),
            "\(stranger.stderr)")
    }
}
