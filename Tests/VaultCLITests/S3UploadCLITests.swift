import Foundation
import VaultTestSupport
import Testing
import VaultS3
#if canImport(Glibc)
import Glibc
#endif

/// `vault upload --protocol s3` with the station's own credentials, against SeaweedFS.
@Suite(.blocking) struct S3UploadCLITests {
    @Test func fortyFiveDocumentsBecomeObjectsByteIdenticalToTheExport() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("cli")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        try Fixtures.addFortyFive(s)
        let r = s.run(["upload", "--url", "s3://\(bucket)/station 3/", "--json"], env: S3Fixtures.env(sw))
        #expect(r.status == 0, "\(r.stderr)")
        let run = Fixtures.runID(r)
        let exported = Fixtures.exported(s)
        #expect(exported.count == 3)
        for (i, want) in exported.enumerated() {
            let key = "station 3/\(run)/batch-000\(i + 1).json"
            #expect(try await s3.object(bucket: bucket, key: key) == want, "\(key)")
            let head = try await s3.send(.head, bucket: bucket, key: key)
            #expect(head.header("Content-Type") == "application/json")
            #expect(head.header("x-amz-meta-vault-batch") == "\(i + 1)/3")
            #expect(head.header("x-amz-meta-vault-documents") == (i == 2 ? "5" : "20"))
            let etag = head.header("ETag") ?? ""
            #expect(
                i == 1 ? etag.hasSuffix("-3\"") : !etag.contains("-"),
                "batch \(i + 1) went as \(i == 1 ? "three parts" : "one PUT"): \(etag)")
        }
        #expect(s.run("log").out.contains("-> s3://\(bucket)/station 3"))
        #expect(!s.run("log").out.contains(SeaweedFS.secretKey))
    }

    /// A network path that answers SlowDown and changes bytes (scripts/flip-proxy.py in front of
    /// SeaweedFS, which checks every part's Content-MD5): SlowDown is retried, one BadDigest is
    /// sent again, and a path that changes every body stops with exit 65 naming the part.
    @Test func slowDownIsRetriedAndBytesChangedOnTheWayAreCaughtByContentMD5() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("md5")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(3000, seed: 71))
        try s.writeLarge("b.bin", mebibytes: 6, seed: 72)
        #expect(s.run("add", "a.txt", "b.bin").status == 0)
        let once = try PythonPeer(
            "flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--slowdown", "2", "--flip", "1"], in: s)
        let through = S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": once.url]) { _, b in b }
        let r = s.run(["upload", "--url", "s3://\(bucket)/p", "--part-size", "5M", "--json"], env: through)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(once.entries.filter { $0["fault"] as? String == "slowdown" }.count == 2)
        #expect(once.entries.filter { $0["fault"] as? String == "flip" }.count == 1)
        let key = "p/\(Fixtures.runID(r))/batch-0001.json"
        #expect(try await s3.object(bucket: bucket, key: key) == Fixtures.exported(s)[0])

        let always = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--flip", "-1"], in: s)
        let bad = s.run(
            ["upload", "--url", "s3://\(bucket)/p", "--part-size", "5M", "--new-run", "--parallel", "1"],
            env: S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": always.url]) { _, b in b })
        #expect(bad.status == 65)
        #expect(
            bad.stderr.hasPrefix("vault: part 1 of batch 1/1 failed its Content-MD5 check twice (BadDigest)\n"),
            "\(bad.stderr)")
        let puts = always.entries.filter { $0["method"] as? String == "PUT" }
        #expect(puts.count == 2, "part 1 was sent twice, then the upload stopped: \(puts)")
        #expect(always.entries.last?["method"] as? String == "DELETE", "the multipart upload was aborted")
    }

    @Test func aKilledUploadResumesWithTheStoresPartsAndSendsOnlyTheMissingOnes() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("resume")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        for i in 0..<3 {
            try s.writeLarge("d\(i).bin", mebibytes: 12, seed: UInt64(40 + i))
            #expect(s.run("add", "d\(i).bin").status == 0)
        }
        // Through a path that changes nothing and logs every request: the PUTs of each part are counted.
        let path = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString], in: s)
        let env = S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": path.url]) { _, b in b }
        let args = ["upload", "--url", "s3://\(bucket)/p", "--part-size", "5M"]
        let pid = s.spawn(args, env: env)
        // Kill it once the journal names three confirmed parts.
        func confirmedParts() -> [Int] {
            guard let j = s.journal(),
                  let b = (j["batches"] as? [[String: Any]])?.first else { return [] }
            return ((b["s3Parts"] as? [[String: Any]]) ?? []).compactMap { $0["number"] as? Int }
        }
        poll(every: 2000) { confirmedParts().count >= 3 || !Peer.isRunning(pid) }
        try #require(Peer.isRunning(pid), "the upload finished before it could be killed")
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let before = confirmedParts()
        let r = s.run(args + ["--resume", "--json", "--progress", "json"], env: env)
        #expect(r.status == 0, "\(r.stderr)")
        let resumed = r.events.compactMap { $0 }.first { $0["event"] as? String == "resumed" }
        #expect(resumed?["offset"] as? Int == before.count * (5 << 20), "the parts the store has are not sent again")
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        #expect(result["resumedBytes"] as? Int == before.count * (5 << 20))
        // Each part confirmed before the kill was PUT once in both runs; every part at least once.
        let exported = Fixtures.exported(s)[0]
        let count = (exported.count + (5 << 20) - 1) / (5 << 20)
        let puts = path.entries.filter { $0["method"] as? String == "PUT" }.compactMap { $0["path"] as? String }
        func sends(_ n: Int) -> Int { puts.filter { $0.contains("partNumber=\(n)&") }.count }
        for n in before { #expect(sends(n) == 1, "part \(n) was confirmed before the kill and sent \(sends(n)) times") }
        #expect((1...count).allSatisfy { sends($0) >= 1 } && !puts.contains { $0.contains("partNumber=\(count + 1)&") })
        let key = "p/\(result["runId"] as! String)/batch-0001.json"
        #expect(try await s3.object(bucket: bucket, key: key) == exported)
    }

    @Test func wrongCredentialsAndAMissingBucketAreDistinctErrors() throws {
        let sw = try SeaweedFS.shared.get()
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(1000, seed: 9))
        #expect(s.run("add", "a.txt").status == 0)
        let wrong = s.run(["upload", "--url", "s3://anything/p"], env: S3Fixtures.env(sw, secret: "wrong"))
        #expect(wrong.status == 76)
        #expect(wrong.stderr.contains("SignatureDoesNotMatch"))
        // S3's own keys signed it: the hint names them, not the HTTP token.
        #expect(
            wrong.stderr.contains("vault: hint: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY")
                && !wrong.stderr.contains("VAULT_UPLOAD_TOKEN"), "\(wrong.stderr)")
        let missing = s.run(
            ["upload", "--url", "s3://no-such-bucket-\(UUID().uuidString.prefix(6).lowercased())/p", "--new-run"],
            env: S3Fixtures.env(sw))
        #expect(missing.status == 69)
        #expect(missing.stderr.contains("NoSuchBucket"))
        let noKeys = s.run(["upload", "--url", "s3://b/p"], env: ["AWS_ENDPOINT_URL": sw.endpoint.absoluteString])
        #expect(
            noKeys.status == 64
                && noKeys.stderr.hasPrefix("vault: --protocol s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
        #expect(s.run(["upload", "--url", "s3://b/p", "--part-size", "1M"], env: S3Fixtures.env(sw)).status == 64)
        let plain = s.run(
            ["upload", "--url", "s3://b/p"],
            env: S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": "http://s3.example.com"]) { _, b in b })
        #expect(
            plain.status == 64 && plain.stderr.contains("refusing to send signed requests unencrypted over http://"))
    }
}

/// `vault upload --presign-url`: no S3 credentials on the station; scripts/presign-server.py
/// (boto3) holds them and hands out presigned part URLs for SeaweedFS.
@Suite(.blocking) struct PresignedS3UploadCLITests {
    /// The reference presign endpoint (scripts/presign-server.py, boto3) for `bucket`, holding
    /// the credentials of `store` (SeaweedFS, or a network path in front of it).
    static func presignServer(
        _ s: Sandbox, store: String, bucket: String, expires: Int = 604_800, fault: String? = nil
    ) throws -> PythonPeer {
        try PythonPeer(
            "presign-server.py",
            ["--bucket", bucket, "--prefix", "office", "--token", "presign-token", "--expires", String(expires)]
                + (fault.map { ["--fault", $0] } ?? []),
            environment: [
                "AWS_ACCESS_KEY_ID=\(SeaweedFS.accessKey)", "AWS_SECRET_ACCESS_KEY=\(SeaweedFS.secretKey)",
                "AWS_ENDPOINT_URL=\(store)", "AWS_REGION=us-east-1"
            ], in: s)
    }

    /// URLs good for a week, and URLs good for 5 s (well inside the minute within which vault asks
    /// for a fresh URL, and long enough that a fresh one still works on a loaded machine).
    @Test(arguments: [604_800, 5])
    func batchesGoThroughPresignedURLsWithoutStationCredentials(expires: Int) async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("presigned")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        try Fixtures.addFortyFive(s)
        let server = try Self.presignServer(s, store: sw.endpoint.absoluteString, bucket: bucket, expires: expires)
        // No AWS variables at all: only the back office's token.
        let r = s.run(
            ["upload", "--presign-url", server.url, "--part-size", "5M", "--json"],
            env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(r.status == 0, "\(r.stderr)")
        let run = Fixtures.runID(r)
        let exported = Fixtures.exported(s)
        #expect(exported.count == 3)
        for (i, want) in exported.enumerated() {
            #expect(try await s3.object(bucket: bucket, key: "office/\(run)/batch-000\(i + 1).json") == want)
        }
        let head = try #require(try await s3.headObject(bucket: bucket, key: "office/\(run)/batch-0002.json"))
        #expect(head.etag.hasSuffix("-4"), "16 MiB of payload in 5 MiB parts: \(head.etag)")
        let calls = server.entries.compactMap { $0["path"] as? String }
        if expires == 5 {
            // URLs that expire within a minute are asked for again, part by part: 1 + 4 + 1 parts.
            #expect(calls.filter { $0 == "/parts" }.count == 6, "\(calls)")
        } else {
            #expect(calls == ["/create", "/complete", "/create", "/complete", "/create", "/complete"])
        }
        let wrong = s.run(["upload", "--presign-url", server.url, "--new-run"], env: ["VAULT_UPLOAD_TOKEN": "wrong"])
        #expect(
            wrong.status == 76 && wrong.stderr.hasPrefix("vault: the presign endpoint refused the credentials (401"))
        guard expires > 60 else { return }
        // The endpoint as a named destination: the ledger knows it by its URL, so only what is new goes.
        #expect(s.run("destination", "add", "office", server.url, "--protocol", "presigned-s3").status == 0)
        s.write("new.txt", .random(500, seed: 4242))
        #expect(s.run("add", "new.txt").status == 0)
        let before = server.entries.count
        // The refused run left a journal of every document; finishing it would send them twice: it is not.
        let status = try JSONSerialization.jsonObject(with: Data(s.run("status", "--json").stdout)) as? [String: Any]
        let office = (status?["destinations"] as? [[String: Any]])?.first
        #expect(
            office?["pending"] as? Int == 1 && office?["interruptedRuns"] as? Int == 0, "\(String(describing: status))")
        let named = s.run(["upload", "--to", "office", "--json"], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(named.status == 0, "\(named.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(named.stdout)) as? [String: Any]
        #expect(result?["documents"] as? Int == 1 && result?["batches"] as? Int == 1, "\(named.out)")
        #expect(server.entries.dropFirst(before).compactMap { $0["path"] as? String } == ["/create", "/complete"])
    }

    /// A broken back office: URLs already expired (its clock is behind) or with an altered
    /// signature. Each is asked for once more, then the store's refusal is the answer: exit 76
    /// with SeaweedFS's error code and message, and the multipart upload is aborted.
    @Test(arguments: [("expired", "403 AccessDenied: Request has expired"), ("tampered", "403 SignatureDoesNotMatch: ")]
    )
    func expiredAndTamperedURLsAreRefusedWithTheStoresError(fault: String, error: String) async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket(fault)
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(3000, seed: 81))
        #expect(s.run("add", "a.txt").status == 0)
        let server = try Self.presignServer(s, store: sw.endpoint.absoluteString, bucket: bucket, fault: fault)
        let r = s.run(["upload", "--presign-url", server.url], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(r.status == 76)
        #expect(
            r.stderr.hasPrefix("vault: the store refused the presigned URL for part 1 of batch 1/1: \(error)"),
            "\(r.stderr)")
        #expect(r.stderr.contains("vault: hint: the URL expired or was altered"))
        let calls = server.entries.compactMap { $0["path"] as? String }
        #expect(calls == ["/create", "/parts", "/abort"], "asked once more, then aborted: \(calls)")
    }

    /// Part URLs on a host that cannot be found: the host came from the back office, and the
    /// message says so (not "check the host name in the URL", which the user gave right).
    @Test func partURLsOnAHostThatCannotBeFoundAreTheBackOfficesError() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("unresolvable")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(3000, seed: 82))
        #expect(s.run("add", "a.txt").status == 0)
        let server = try Self.presignServer(s, store: sw.endpoint.absoluteString, bucket: bucket, fault: "unresolvable")
        let r = s.run(["upload", "--presign-url", server.url], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(r.status == 69, "\(r.stderr)")
        let host = String(repeating: "a", count: 64) + ".invalid"
        #expect(
            r.stderr
                == """
                    vault: the presign endpoint handed out part URLs on the host '\(host)', which cannot be found \
                    (name or service not known); nothing was sent
                    vault: hint: the back office's storage address is wrong, or not one this machine can reach

                    """, "\(r.stderr)")
        let calls = server.entries.compactMap { $0["path"] as? String }
        #expect(calls == ["/create", "/abort"], "\(calls)")
    }

    /// Presigned parts through a network path that changes bytes: one BadDigest is sent again,
    /// a second stops with exit 65 naming the part.
    @Test func bytesChangedOnTheWayToAPresignedURLAreCaughtByContentMD5() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("pmd5")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(3000, seed: 91))
        #expect(s.run("add", "a.txt").status == 0)
        let once = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--flip", "1"], in: s)
        let server = try Self.presignServer(s, store: once.url, bucket: bucket)
        let r = s.run(["upload", "--presign-url", server.url, "--json"], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            try await s3.object(bucket: bucket, key: "office/\(Fixtures.runID(r))/batch-0001.json")
                == Fixtures.exported(s)[0])
        #expect(once.entries.filter { $0["method"] as? String == "PUT" }.count == 2)

        let always = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--flip", "-1"], in: s)
        let bad = try Self.presignServer(s, store: always.url, bucket: bucket)
        let stop = s.run(
            ["upload", "--presign-url", bad.url, "--new-run"], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(stop.status == 65)
        #expect(
            stop.stderr.hasPrefix("vault: part 1 of batch 1/1 failed its Content-MD5 check twice (BadDigest)\n"),
            "\(stop.stderr)")
        #expect(bad.entries.compactMap { $0["path"] as? String } == ["/create", "/abort"])
    }
}
