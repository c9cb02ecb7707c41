import Foundation
import VaultTestSupport
import Testing
import VaultS3

/// A store that lies (issue 21): objects under `removed/` that are not this vault's tombstones,
/// on SeaweedFS; and answers made to exhaust memory, disk or time, from scripts/hostile-s3.py.
@Suite(.blocking) struct HostileStoreCLITests {
    static func ids(_ r: CLIResult) -> Set<String> {
        guard let docs = try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]] else { return [] }
        return Set(docs.compactMap { $0["id"] as? String })
    }

    @Test func junkUnderRemovedHidesNoDocumentFromPushCloneOrDirectReads() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("junk")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw)
        let url = "s3://\(bucket)/v"
        let s = Sandbox()
        #expect(Fixtures.run(s, "a", ["init", "--kdf", "insecure-test"], env: env).status == 0)
        #expect(Fixtures.run(s, "a", ["remote", "add", "office", url], env: env).status == 0)
        s.write("one.txt", Array("one".utf8))
        s.write("two.txt", Array("two".utf8))
        let first = Fixtures.run(s, "a", ["add", "one.txt"], env: env).out.trimmingCharacters(in: .newlines)
        #expect(Fixtures.run(s, "a", ["push"], env: env).status == 0)
        let second = Fixtures.run(s, "a", ["add", "two.txt"], env: env).out.trimmingCharacters(in: .newlines)
        // Five bytes of junk where the new document's tombstone would be: no password needed.
        try await s3.putObject(
            bucket: bucket, key: "v/removed/\(second)", body: Array("junk!".utf8),
            contentType: "application/octet-stream")
        let push = Fixtures.run(s, "a", ["push"], env: env)
        #expect(push.status == 0, "\(push.stderr)")
        #expect(
            push.stderr.contains(
                "vault: warning: removed/\(second) is not a tombstone of this vault, and hides nothing"),
            "\(push.stderr)")
        #expect(push.stderr.contains("pushed 1 document"), "the new document went to the store: \(push.stderr)")
        #expect(try await s3.headObject(bucket: bucket, key: "v/objects/\(second).vlt") != nil)
        // The audit names it (sealed into the push's record).
        let audit = Fixtures.run(s, "a", ["audit"], env: env)
        #expect(
            audit.status == 65 && audit.out.contains("tombstone-refused") && audit.out.contains("removed/\(second)"),
            "\(audit.out)")
        // A clone gets both, with the warning.
        let clone = Fixtures.run(s, "b", ["clone", url], env: env)
        #expect(clone.status == 0, "\(clone.stderr)")
        #expect(clone.stderr.contains("removed/\(second) is not a tombstone of this vault"))
        #expect(Self.ids(Fixtures.run(s, "b", ["list", "--json"], env: env)) == [first, second])
        // Read in place: listed and verified, with the warning.
        let env2 = env.merging(["XDG_CACHE_HOME": s.path("cache")]) { _, b in b }
        let list = s.run(["--vault", url, "list", "--json"], env: env2)
        #expect(list.status == 0 && Self.ids(list) == [first, second], "\(list.stderr)")
        #expect(list.stderr.contains("removed/\(second) is not a tombstone of this vault"))
        let verify = s.run(["--vault", url, "verify"], env: env2)
        #expect(verify.status == 0 && verify.out.contains("2 documents"), "\(verify.out) \(verify.stderr)")
    }

    @Test func aTombstoneSealedUnderARetiredKeyRemovesNothing() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("oldkey")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw)
        let s = Sandbox()
        #expect(Fixtures.run(s, "a", ["init", "--kdf", "insecure-test"], env: env).status == 0)
        let kept = s.path("kept")
        try FileManager.default.copyItem(atPath: s.path("a"), toPath: kept)
        let newEnv = env.merging(["VAULT_PASSWORD": "the new one"]) { _, b in b }
        #expect(
            Fixtures.run(
                s, "a", ["passwd"], env: env.merging(["VAULT_NEW_PASSWORD": "the new one"]) { _, b in b }
            ).status == 0)
        s.write("doc.txt", Array("a document".utf8))
        let id = Fixtures.run(s, "a", ["add", "doc.txt"], env: newEnv).out.trimmingCharacters(in: .newlines)
        #expect(Fixtures.run(s, "a", ["remote", "add", "office", "s3://\(bucket)/w"], env: newEnv).status == 0)
        #expect(Fixtures.run(s, "a", ["push"], env: newEnv).status == 0)
        let holder = try OldKeyHolder(folder: kept, password: "correct horse battery")
        for stone in [try holder.tombstone(id), try holder.legacyTombstone(id)] {
            try await s3.putObject(
                bucket: bucket, key: "w/removed/\(id)", body: stone, contentType: "application/octet-stream")
            let pull = Fixtures.run(s, "a", ["pull"], env: newEnv)
            #expect(pull.status == 0, "\(pull.stderr)")
            #expect(pull.stderr.contains("removed/\(id) is not a tombstone of this vault"), "\(pull.stderr)")
            #expect(
                s.run(["--vault", s.path("a"), "list", "--json"], env: newEnv).out.contains(id),
                "the document is still there")
            let env2 = newEnv.merging(["XDG_CACHE_HOME": s.path("cache")]) { _, b in b }
            #expect(Self.ids(s.run(["--vault", "s3://\(bucket)/w", "list", "--json"], env: env2)) == [id])
        }
        #expect(!Fixtures.run(s, "a", ["log", "--json"], env: newEnv).out.contains("\"op\":\"remove\""))
    }

    @Test func aStoreOfTheEarlierFormatStaysUsable() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("legacy")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw).merging(LegacyVaultCLITests.password) { _, b in b }
        let s = try LegacyVaultCLITests.copy()
        // The store holds the vault/1 vault.json an earlier version pushed; this station upgrades.
        let v1 = Array(
            try Data(contentsOf: Sandbox.repository.appendingPathComponent("Fixtures/legacy/vault-1/vault.json")))
        try await s3.putObject(bucket: bucket, key: "v/vault.json", body: v1, contentType: "application/json")
        let push = s.run(["push", "s3://\(bucket)/v"], env: env)
        #expect(push.status == 0 && push.stderr.contains("pushed 2 documents"), "\(push.stderr)")
        // A tombstone in the earlier format (VTMB1) of the same key epoch still counts.
        let docs =
            (try JSONSerialization.jsonObject(with: Data(s.run(["list", "--json"], env: env).stdout))
                as? [[String: Any]]) ?? []
        let notes = try #require(docs.first { $0["name"] as? String == "notes.txt" }?["id"] as? String)
        let holder = try OldKeyHolder(folder: s.path("vault"), password: "legacy fixture password")
        try await s3.putObject(
            bucket: bucket, key: "v/removed/\(notes)", body: try holder.legacyTombstone(notes),
            contentType: "application/octet-stream")
        let clone = s.run(["--vault", s.path("b"), "clone", "s3://\(bucket)/v"], env: env)
        #expect(clone.status == 0 && !clone.stderr.contains("warning"), "\(clone.stderr)")
        let names =
            ((try JSONSerialization.jsonObject(
                with: Data(s.run(["--vault", s.path("b"), "list", "--json"], env: env).stdout)) as? [[String: Any]])
            ?? [])
            .compactMap { $0["name"] as? String }
        #expect(names == ["empty.txt"], "the tombstone removed notes.txt from what the clone took")
        let pull = s.run(["pull", "s3://\(bucket)/v"], env: env)
        #expect(pull.status == 0 && pull.stderr.contains("removed 1"), "\(pull.stderr)")
    }

    // MARK: Answers made to exhaust memory, disk or time

    /// A vault whose vault.json the hostile store serves, and the store in `mode`.
    static func hostile(_ s: Sandbox, mode: String, extra: [String] = []) throws -> (PythonPeer, [String: String?]) {
        if !FileManager.default.fileExists(atPath: s.path("vault/vault.json")) { s.initVault() }
        let peer = try PythonPeer(
            "hostile-s3.py", ["--mode", mode, "--config", s.path("vault/vault.json")] + extra, in: s)
        let env: [String: String?] = [
            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": "http://127.0.0.1:\(peer.port)",
            "AWS_REGION": "us-east-1"
        ]
        return (peer, env)
    }

    @Test(arguments: [
        ("endless-config", "the store's answer is longer than 1048576 bytes"),
        ("endless-listing", "the store's answer is longer than 4194304 bytes"),
        ("tokens", "gave a continuation token it gave before")
    ])
    func endlessAnswersAndLoopingListingsStopWithAnError(mode: String, message: String) throws {
        let s = Sandbox()
        let (peer, env) = try Self.hostile(s, mode: mode)
        let r = withExtendedLifetime(peer) {
            s.measureWith(["--vault", s.path("replica"), "clone", "s3://bucket/p", "-q"], env: env)
        }
        #expect(r.status == 65, "\(mode): \(r.status) \(r.stderr)")
        #expect(r.stderr.contains(message), "\(mode): \(r.stderr)")
        #expect(r.maxRSSKiB < 256 << 10, "\(mode): peak RSS \(r.maxRSSKiB) KiB")
    }

    @Test func anObjectServedPastItsListedSizeFillsNoDisk() throws {
        let s = Sandbox()
        let (peer, env) = try Self.hostile(s, mode: "endless-object")
        let r = withExtendedLifetime(peer) {
            s.measureWith(["--vault", s.path("replica"), "clone", "s3://bucket/p", "-q"], env: env)
        }
        #expect(r.status == 65, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("the store sent more than the 467 bytes it listed"), "\(r.stderr)")
        let staged = (FileManager.default.enumerator(atPath: s.path("replica"))?.allObjects as? [String] ?? []).reduce(
            0
        ) { sum, name in
            sum + ((try? FileManager.default.attributesOfItem(atPath: s.path("replica/" + name))[.size] as? Int) ?? 0)
        }
        #expect(staged < 1 << 20, "the replica holds \(staged) bytes")
        #expect(r.maxRSSKiB < 256 << 10)
    }

    @Test func aStoreThatTricklesItsAnswerFailsInBoundedTime() throws {
        let s = Sandbox()
        // One byte a second: never idle for --timeout, and never done.
        let (peer, env) = try Self.hostile(s, mode: "slow", extra: ["--interval", "1"])
        let r = s.run(["--vault", s.path("replica"), "clone", "s3://bucket/p", "-q", "--timeout", "3"], env: env)
        #expect(r.status == 75, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("took longer than its deadline"), "\(r.stderr)")
        #expect(peer.entries.count == 1, "one request, not retried into minutes: \(peer.entries)")
    }
}
