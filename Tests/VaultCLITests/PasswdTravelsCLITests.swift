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
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("pwclone")
        defer { Task { await s3.shutdown() } }
        var env = S3Fixtures.env(sw)
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
        let url = "s3://\(bucket)/\(kind)"
        // Pushed before the changes too: the push after them carries them to the store.
        #expect(s.run(["remote", "add", "origin", url], env: env).status == 0)
        #expect(s.run(["push"], env: env).status == 0)
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
        let pushed = s.run(["push"], env: env)
        #expect(pushed.status == 0 && pushed.stderr.contains("under the new password"), "\(pushed.stderr)")
        let cloned = s.run(["clone", url, "--vault", s.path("clone")], env: env)
        #expect(cloned.status == 0, "\(cloned.stderr)")
        let audit = s.run(["--vault", s.path("clone"), "audit"], env: env)
        #expect(audit.status == 0 && audit.out.contains(": clean;"), "\(audit.out)\(audit.stderr)")
        #expect(Fixtures.ids(s, "clone", env: env).count == 5)
        // The clone's own password change anchors its own history: still clean, and still
        // pushes to the store it came from (the same keys).
        let again = s.run(
            ["--vault", s.path("clone"), "passwd"], env: env.merging(["VAULT_NEW_PASSWORD": "fourth"]) { _, b in b })
        #expect(again.status == 0, "\(again.stderr)")
        env["VAULT_PASSWORD"] = "fourth"
        let after = s.run(["--vault", s.path("clone"), "audit"], env: env)
        #expect(after.status == 0 && after.out.contains(": clean;"), "\(after.out)\(after.stderr)")
    }

    /// A password change travels (issue 57, point 4): after `passwd` at one station, `push` to
    /// the store the vault came from carries it (before: refused, exit 73, "push to a new
    /// prefix"); the other station's `pull` says so, takes the new password and moves to it;
    /// twice, from either side; a clone with the last password audits clean and holds every
    /// document; the old passwords open neither the store nor the stations.
    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func aPasswordChangeTravelsByPushAndOtherStationsTakeItOnPull() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("pwpush")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw)
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        func run(_ station: String, _ password: String, _ args: [String], new: String? = nil) -> CLIResult {
            var e = env
            e["VAULT_PASSWORD"] = password
            e["VAULT_NEW_PASSWORD"] = new
            return s.run(["--vault", s.path(station)] + args, env: e)
        }
        func add(_ station: String, _ password: String, _ name: String, seed: UInt64) {
            s.write(name, .random(400, seed: seed))
            #expect(run(station, password, ["add", s.path(name)]).status == 0)
        }
        let p1 = "correct horse battery", p2 = "second password", p3 = "third password"
        #expect(run("a", p1, ["init", "--kdf", "insecure-test"]).status == 0)
        add("a", p1, "one.txt", seed: 1)
        #expect(run("a", p1, ["remote", "add", "origin", url]).status == 0)
        #expect(run("a", p1, ["push"]).status == 0)
        #expect(s.run(["clone", url, "--vault", s.path("b")], env: env.merging(["VAULT_PASSWORD": p1]) { _, n in n })
            .status == 0)
        add("b", p1, "two.txt", seed: 2)
        #expect(run("b", p1, ["push"]).status == 0)
        let oldConfig = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("a/vault.json"))))
        // Station a changes the password and pushes: the store moves to it.
        #expect(run("a", p1, ["passwd"], new: p2).status == 0)
        add("a", p2, "three.txt", seed: 3)
        // A pull before the change is carried: told to push first, nothing taken.
        let early = run("a", p2, ["pull"])
        #expect(early.status == 73 && early.stderr.contains("push to it first"), "\(early.stderr)")
        let carried = run("a", p2, ["push"])
        #expect(carried.status == 0, "\(carried.stderr)")
        #expect(carried.stderr.contains("the store now holds the vault under the new password"), "\(carried.stderr)")
        #expect(run("a", p2, ["pull"]).status == 0)
        #expect(s.run(["--vault", url, "list"], env: env.merging(["VAULT_PASSWORD": p1]) { _, n in n }).status == 77)
        // Station b, with its own (old) password and no new one to read: told, nothing changed.
        let told = run("b", p1, ["pull"])
        #expect(told.status == 73, "\(told.stderr)")
        #expect(
            told.stderr.contains("vault: the vault's password was changed at another station")
                && told.stderr.contains("VAULT_NEW_PASSWORD"), "\(told.stderr)")
        #expect(run("b", p1, ["list"]).status == 0)
        // Given the new one, it moves to it and pulls.
        let taken = run("b", p1, ["pull"], new: p2)
        #expect(taken.status == 0, "\(taken.stderr)")
        #expect(taken.stderr.contains("the vault now opens with the new password"), "\(taken.stderr)")
        #expect(run("b", p1, ["list"]).status == 77)
        #expect(Fixtures.ids(s, "b", env: env.merging(["VAULT_PASSWORD": p2]) { _, n in n }).count == 3)
        add("b", p2, "four.txt", seed: 4)
        #expect(run("b", p2, ["push"]).status == 0)
        // The second change, at b this time, reaches a.
        #expect(run("b", p2, ["passwd"], new: p3).status == 0)
        let again = run("b", p3, ["push"])
        #expect(again.status == 0 && again.stderr.contains("under the new password"), "\(again.stderr)")
        let second = run("a", p2, ["pull"], new: p3)
        #expect(second.status == 0, "\(second.stderr)")
        for station in ["a", "b"] {
            #expect(Fixtures.ids(s, station, env: env.merging(["VAULT_PASSWORD": p3]) { _, n in n }).count == 4)
            let audit = run(station, p3, ["audit"])
            #expect(audit.status == 0 && audit.out.contains(": clean;"), "\(station): \(audit.out)\(audit.stderr)")
            #expect(run(station, p2, ["list"]).status == 77, "\(station)")
        }
        // A clone with the last password: every document, byte for byte, and a clean audit.
        let cloned = s.run(
            ["clone", url, "--vault", s.path("c")], env: env.merging(["VAULT_PASSWORD": p3]) { _, n in n })
        #expect(cloned.status == 0, "\(cloned.stderr)")
        #expect(run("c", p3, ["verify"]).status == 0)
        let audit = run("c", p3, ["audit"])
        #expect(audit.status == 0 && audit.out.contains(": clean;"), "\(audit.out)\(audit.stderr)")
        for (name, seed) in [("one.txt", 1), ("two.txt", 2), ("three.txt", 3), ("four.txt", 4)] {
            let got = run("c", p3, ["get", name, "-o", "-"])
            #expect(got.status == 0 && got.stdout == .random(400, seed: UInt64(seed)), "\(name): \(got.stderr)")
        }
        // Someone who knew the first password puts its vault.json back on the store: no station
        // takes that for a store it may bring forward (what it holds under the old key would be
        // taken in); the push is refused and nothing is written.
        try await s3.putObject(
            bucket: bucket, key: "office/vault.json", body: oldConfig, contentType: "application/json")
        add("a", p3, "five.txt", seed: 5)
        let refused = run("a", p3, ["push"])
        #expect(refused.status == 73 && refused.stderr.contains("its vault.json was put back"), "\(refused.stderr)")
        let objects = try await s3.listObjects(bucket: bucket, prefix: "office/objects/")
        #expect(objects.count == 4, "\(objects.map(\.key))")
    }

    /// The office's password changed where receivers share a store (issue 57, points 3 and 4):
    /// the push that carries it marks the receivers' log; a receiver still running with the old
    /// password answers 503 and logs that it must be started again with the new one; started
    /// again, it takes the same station's batches under the same token, and the store's
    /// clone audits clean.
    @Test func receiversOnAStoreAreToldOfAPasswordChangeAndGoOnWithTheNewOne() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("pwrecv")
        defer { Task { await s3.shutdown() } }
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache-admin")
        let token = SharedReceiveCLITests.officeOnStore(s, url: url, env: env)
        var old = env
        old["XDG_CACHE_HOME"] = s.path("cache-r1")
        let r1 = try ReceiverProcess(s, vault: "r1", location: url, environment: old)
        let zeros = String(repeating: "0", count: 32)
        func batch(_ r: ReceiverProcess, _ key: String, _ records: Int, _ text: String) throws -> (
            status: Int, body: String
        ) {
            SharedReceiveCLITests.finish(
                try SharedReceiveCLITests.curlBatch(
                    s, url: r.url, token: token, key: key, head: "\(records)-" + zeros, text: text))
        }
        let first = try batch(r1, "b1", 1, "one")
        #expect(first.status == 200, "\(first)")
        // The password changes at the office's own vault, and its push carries the change.
        #expect(s.run(["--vault", s.path("setup"), "pull", "-q"], env: env).status == 0)
        let changed = s.run(
            ["--vault", s.path("setup"), "passwd"],
            env: env.merging(["VAULT_NEW_PASSWORD": "new office pw"]) { _, n in n })
        #expect(changed.status == 0, "\(changed.stderr)")
        env["VAULT_PASSWORD"] = "new office pw"
        let carried = s.run(["--vault", s.path("setup"), "push"], env: env)
        #expect(carried.status == 0 && carried.stderr.contains("under the new password"), "\(carried.stderr)")
        // The receiver that still holds the old keys: 503, and its log says why.
        let told = try batch(r1, "b2", 2, "two")
        #expect(told.status == 503, "\(told)")
        #expect(poll(within: 60, every: 50_000) { r1.log.contains("the vault's password was changed") }, "\(r1.log)")
        // Started again with the new password: the same token, the batch taken.
        env["XDG_CACHE_HOME"] = s.path("cache-r2")
        let r2 = try ReceiverProcess(s, vault: "r2", location: url, environment: env)
        let taken = try batch(r2, "b2", 2, "two")
        #expect(taken.status == 200, "\(taken)")
        let resent = try batch(r2, "b1", 1, "one")
        #expect(resent.status == 200 && resent.body == first.body, "a batch taken before the change: \(resent)")
        env["XDG_CACHE_HOME"] = s.path("cache-check")
        #expect(s.run(["clone", url, "--vault", s.path("check"), "-q"], env: env).status == 0)
        #expect(Fixtures.ids(s, "check", env: env).count == 2)
        let audit = s.run(["--vault", s.path("check"), "audit"], env: env)
        #expect(audit.status == 0 && audit.out.contains(": clean;"), "\(audit.out)\(audit.stderr)")
    }
}
