import Foundation
import Testing
import VaultTestSupport

/// The receiver's tus 1.0 endpoint (`/files/`), by vault's own tus upload, by tuspy (a tus client
/// from PyPI), and by requests that break the protocol's rules.
@Suite(.blocking) struct ReceiveTusCLITests {
    @Test func vaultAndTuspyUploadsArriveWholeAndAResendStoresNothing() throws {
        let s = Sandbox()
        let originals = ReceiveCLITests.station(s, count: 5)
        let office = try ReceiverProcess(s)
        let token = office.addStation("st")
        let r = s.run(
            [
                "upload", "--url", office.url + "/files/", "--protocol", "tus", "--chunk-size", "256K", "--batch-size",
                "2"
            ],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(r.status == 0, "\(r.stderr)")
        let digests = Set(originals.values.map(ReceiveCLITests.sha))
        #expect(Set(office.documents.compactMap { $0["sha256"] as? String }) == digests)
        #expect(office.documents.count == 5)
        #expect(office.log.components(separatedBy: "result=204").count > 3, "\(office.log)")

        // tuspy sends a payload vault exported, with its own checksums (sha1).
        let other = Sandbox()
        other.initVault()
        other.write("one", [UInt8].random(700_000, seed: 31))
        #expect(other.run("add", "one").status == 0)
        let payload = other.run("export", "--out", "-")
        s.write("payload.json", payload.stdout)
        let script = Peer.repository.appendingPathComponent("scripts/tus-client.py").path
        let out = s.path("tuspy.out")
        for _ in 0..<2 {  // the second time, the same Idempotency-Key: answered, not stored again
            let pid = try Peer.spawn(
                [Peer.python, script, "tuspy", office.url, token, "tuspy-1", s.path("payload.json")], stdout: out,
                stderr: out + ".err")
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            #expect(status == 0, "\((try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? "")")
        }
        #expect(office.documents.count == 6)
        #expect(office.run("verify").status == 0)
    }

    @Test func tusRequestsThatBreakTheRulesAreRefusedAndStoreNothing() throws {
        let s = Sandbox()
        // An expiry past any date an answer can carry was a crash at the first creation (found
        // by a review once dates were written by hand): now a usage error at the start.
        #expect(s.run("init", "--kdf", "insecure-test").status == 0)
        for expiry in ["1e13", "inf", "0.5"] {
            let r = s.run("receive", "--listen", "127.0.0.1:0", "--upload-expiry", expiry)
            #expect(
                r.status == 64 && r.stderr.hasPrefix("vault: --upload-expiry must be at least 1 second and at most"),
                "\(expiry): \(r.stderr)")
        }
        let office = try ReceiverProcess(s, extra: ["--upload-expiry", "2"])
        let token = office.addStation("st"), other = office.addStation("other")
        let script = Peer.repository.appendingPathComponent("scripts/tus-client.py").path
        let out = s.path("tus.out")
        let pid = try Peer.spawn(
            [Peer.python, script, "hostile", office.url, token, other], stdout: out, stderr: out + ".err")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        var got: [String: Int] = [:]
        for line in Peer.jsonLines(out) { got[line["case"] as? String ?? "?"] = line["status"] as? Int }
        let expected: [String: Int] = [
            "create": 201, "offset-jumps": 409, "first-chunk": 204, "offset-overlaps": 409,
            "other-station-head": 404, "other-station-patch": 404, "checksum-mismatch": 460, "past-the-end": 400,
            "create-again": 201, "head": 200, "terminate": 204, "head-after-terminate": 404, "too-large": 413,
            "no-version": 412, "wrong-content-type": 415, "rest-with-checksum": 204, "head-complete": 200
        ]
        #expect(got == expected, "\((try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? "")")
        // The one upload that completed is the one document stored; the others left nothing.
        #expect(office.documents.map { $0["name"] as? String } == ["t.txt"])
        // An abandoned upload expires: created, never finished, gone after --upload-expiry.
        let created = office.curl(
            token: token,
            [
                "-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 100", "-H", "Idempotency-Key: gone",
                "-D", s.path("headers.txt"), office.url + "/files/"
            ])
        let headers = (try? String(contentsOfFile: s.path("headers.txt"), encoding: .utf8)) ?? ""
        let location =
            headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") }
            .map { String($0.dropFirst("location:".count)).trimmingCharacters(in: .whitespaces) } ?? ""
        #expect(created.status == 201 && location.hasPrefix("/files/"), "\(created)")
        let expired = poll(every: 200_000) {
            office.curl(token: token, ["-I", "-H", "Tus-Resumable: 1.0.0", office.url + location]).status == 404
        }
        #expect(expired)
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: s.path("office/staging"))) ?? []
        #expect(staged.isEmpty, "\(staged)")
        #expect(office.run("verify").status == 0)
    }
}
