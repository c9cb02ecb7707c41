import Foundation
import Testing
import VaultS3
import VaultTestSupport

/// A vault whose password was changed, pushed and cloned (issue 57, point 4): the clone's audit
/// is clean. Before, the clone kept the keyring's anchors — where the source's history stood
/// when each epoch was retired — and read them against its own, shorter history: a false
/// `rolled-back` (exit 65), for a station's vault and a receiver's alike.
@Suite(.blocking) struct PasswdTravelsCLITests {
    @Test(arguments: ["station", "receiver"])
    func aCloneOfAVaultWhosePasswordChangedTwiceAuditsClean(kind: String) async throws {
        let (sw, s3, bucket) = try await S3UploadCLITests.freshBucket("pwclone")
        defer { Task { await s3.shutdown() } }
        var env = S3UploadCLITests.env(sw)
        let s = Sandbox()
        s.initVault()
        if kind == "receiver" {
            #expect(s.run("receive", "station", "add", "desk").status == 0)
            #expect(s.run("receive", "station", "add", "front").status == 0)
        }
        for (i, name) in ["a.txt", "b.txt", "c.txt"].enumerated() {
            s.write(name, .random(300 + i, seed: UInt64(90 + i)))
            #expect(s.run("add", name).status == 0)
        }
        #expect(s.run("tag", "b.txt", "--add", "x").status == 0)
        var password = "correct horse battery"  // the sandbox's
        for next in ["second password", "third password"] {
            let changed = s.run(["passwd"], env: ["VAULT_PASSWORD": password, "VAULT_NEW_PASSWORD": next])
            #expect(changed.status == 0, "\(changed.stderr)")
            password = next
            s.write("after \(next).txt", .random(100, seed: UInt64(next.count)))
            #expect(s.run(["add", "after \(next).txt"], env: ["VAULT_PASSWORD": password]).status == 0)
        }
        env["VAULT_PASSWORD"] = password
        #expect(s.run(["audit"], env: env).status == 0)
        let url = "s3://\(bucket)/\(kind)"
        let pushed = s.run(["push", url], env: env)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let cloned = s.run(["clone", url, "--vault", s.path("clone")], env: env)
        #expect(cloned.status == 0, "\(cloned.stderr)")
        let audit = s.run(["--vault", s.path("clone"), "audit"], env: env)
        #expect(audit.status == 0 && audit.out.contains(": clean;"), "\(audit.out)\(audit.stderr)")
        #expect(RemoteCLITests.ids(s, "clone", env: env).count == 5)
        // The clone's own password change anchors its own history: still clean, and still
        // pushes to the store it came from (the same keys).
        let again = s.run(
            ["--vault", s.path("clone"), "passwd"], env: env.merging(["VAULT_NEW_PASSWORD": "fourth"]) { _, b in b })
        #expect(again.status == 0, "\(again.stderr)")
        env["VAULT_PASSWORD"] = "fourth"
        let after = s.run(["--vault", s.path("clone"), "audit"], env: env)
        #expect(after.status == 0 && after.out.contains(": clean;"), "\(after.out)\(after.stderr)")
    }
}
