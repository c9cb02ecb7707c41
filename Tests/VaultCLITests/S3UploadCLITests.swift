import Foundation
import Testing
import VaultS3
#if canImport(Glibc)
import Glibc
#endif

/// `vault upload --protocol s3` with the station's own credentials, against SeaweedFS.
@Suite struct S3UploadCLITests {
    static func env(_ sw: SeaweedFS, secret: String = SeaweedFS.secretKey) -> [String: String?] {
        ["AWS_ACCESS_KEY_ID": SeaweedFS.accessKey, "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": sw.endpoint.absoluteString,
         "AWS_REGION": "us-east-1"]
    }

    static func client(_ sw: SeaweedFS) -> S3Client {
        S3Client(endpoint: sw.endpoint, region: "us-east-1", credentials: S3Credentials(accessKeyID: SeaweedFS.accessKey, secretAccessKey: SeaweedFS.secretKey))
    }

    /// The batch files `vault export` writes for the same selection and batching.
    static func exported(_ s: Sandbox, _ extra: [String] = []) -> [[UInt8]] {
        let out = "export-\(UUID().uuidString.prefix(6))"
        let r = s.run(["export", "--out", out, "-q"] + extra)
        precondition(r.status == 0, r.stderr)
        return ((try? FileManager.default.contentsOfDirectory(atPath: s.path(out))) ?? []).filter { $0.hasPrefix("batch-") }.sorted()
            .map { Array(FileManager.default.contents(atPath: s.path(out + "/" + $0))!) }
    }

    static func runID(_ r: CLIResult) -> String { (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])?["runId"] as? String ?? "" }

    @Test func batchesBecomeObjectsByteIdenticalToTheExport() async throws {
        let sw = try SeaweedFS.shared.get()
        let s3 = Self.client(sw)
        defer { Task { await s3.shutdown() } }
        let bucket = "cli-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let s = Sandbox()
        s.initVault()
        // Two small documents (a single PUT) and one of 12 MiB (16 MiB of base64: three 8 MiB parts).
        s.write("a.txt", .random(3000, seed: 1))
        s.write("b.txt", .random(5000, seed: 2))
        try s.writeLarge("c.bin", mebibytes: 12, seed: 3)
        #expect(s.run("add", "a.txt", "b.txt", "c.bin").status == 0)
        let r = s.run(["upload", "--url", "s3://\(bucket)/station 3/", "--batch-size", "2", "--json"], env: Self.env(sw))
        #expect(r.status == 0, "\(r.stderr)")
        let run = Self.runID(r)
        let exported = Self.exported(s, ["--batch-size", "2"])
        for (i, want) in exported.enumerated() {
            let key = "station 3/\(run)/batch-000\(i + 1).json"
            #expect(try await s3.getObject(bucket: bucket, key: key) == want, "\(key)")
        }
        let head = try #require(try await s3.headObject(bucket: bucket, key: "station 3/\(run)/batch-0002.json"))
        #expect(head.etag.hasSuffix("-3"), "the 12 MiB batch went as a three-part multipart upload: \(head.etag)")
        let small = try #require(try await s3.headObject(bucket: bucket, key: "station 3/\(run)/batch-0001.json"))
        #expect(!small.etag.contains("-"), "the small batch went as one PUT")
        #expect(s.run("log").out.contains("-> s3://\(bucket)/station 3"))
        #expect(!s.run("log").out.contains(SeaweedFS.secretKey))
    }

    @Test func aKilledUploadResumesWithTheStoresPartsAndSendsOnlyTheMissingOnes() async throws {
        let sw = try SeaweedFS.shared.get()
        let s3 = Self.client(sw)
        defer { Task { await s3.shutdown() } }
        let bucket = "resume-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let s = Sandbox()
        s.initVault()
        for i in 0..<3 {
            try s.writeLarge("d\(i).bin", mebibytes: 20, seed: UInt64(40 + i))
            #expect(s.run("add", "d\(i).bin").status == 0)
        }
        let args = ["upload", "--url", "s3://\(bucket)/p", "--part-size", "5M"]
        let pid = s.spawn(args, env: Self.env(sw))
        // Kill it once the journal names three confirmed parts.
        func confirmedParts() -> Int {
            guard let name = try? FileManager.default.contentsOfDirectory(atPath: s.path("vault/uploads")).first(where: { $0.hasSuffix(".json") }),
                  let data = FileManager.default.contents(atPath: s.path("vault/uploads/" + name)),
                  let j = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let b = (j["batches"] as? [[String: Any]])?.first else { return 0 }
            return (b["s3Parts"] as? [Any])?.count ?? 0
        }
        poll(6000, every: 2000) { confirmedParts() >= 3 || !HardeningCLITests.isRunning(pid) }
        try #require(HardeningCLITests.isRunning(pid), "the upload finished before it could be killed")
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let before = confirmedParts()
        let r = s.run(args + ["--resume", "--json", "--progress", "json"], env: Self.env(sw))
        #expect(r.status == 0, "\(r.stderr)")
        let resumed = r.events.compactMap { $0 }.first { $0["event"] as? String == "resumed" }
        #expect(resumed?["offset"] as? Int == before * (5 << 20), "the parts the store has are not sent again")
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        #expect(result["resumedBytes"] as? Int == before * (5 << 20))
        let key = "p/\(result["runId"] as! String)/batch-0001.json"
        #expect(try await s3.getObject(bucket: bucket, key: key) == Self.exported(s)[0])
    }

    @Test func wrongCredentialsAndAMissingBucketAreDistinctErrors() throws {
        let sw = try SeaweedFS.shared.get()
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(1000, seed: 9))
        #expect(s.run("add", "a.txt").status == 0)
        let wrong = s.run(["upload", "--url", "s3://anything/p"], env: Self.env(sw, secret: "wrong"))
        #expect(wrong.status == 76)
        #expect(wrong.stderr.contains("SignatureDoesNotMatch"))
        let missing = s.run(["upload", "--url", "s3://no-such-bucket-\(UUID().uuidString.prefix(6).lowercased())/p", "--new-run"], env: Self.env(sw))
        #expect(missing.status == 69)
        #expect(missing.stderr.contains("NoSuchBucket"))
        let noKeys = s.run(["upload", "--url", "s3://b/p"], env: ["AWS_ENDPOINT_URL": sw.endpoint.absoluteString])
        #expect(noKeys.status == 64 && noKeys.stderr.hasPrefix("vault: --protocol s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
        #expect(s.run(["upload", "--url", "s3://b/p", "--part-size", "1M"], env: Self.env(sw)).status == 64)
        let plain = s.run(["upload", "--url", "s3://b/p"], env: Self.env(sw).merging(["AWS_ENDPOINT_URL": "http://s3.example.com"]) { _, b in b })
        #expect(plain.status == 64 && plain.stderr.contains("refusing to send documents and signed requests unencrypted"))
    }
}

/// `vault upload --presign-url`: no S3 credentials on the station; scripts/presign-server.py
/// (boto3) holds them and hands out presigned part URLs for SeaweedFS.
@Suite struct PresignedS3UploadCLITests {
    /// The reference presign endpoint on 127.0.0.1 (a port the OS picks), stopped by PID.
    final class PresignServer {
        let pid: pid_t
        let url: String
        let log: String
        init(in s: Sandbox, sw: SeaweedFS, bucket: String, expires: Int) throws {
            let dir = s.path("presign-\(UUID().uuidString.prefix(6))")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            log = dir + "/log.jsonl"
            let python = Sandbox.repository.appendingPathComponent(".build-peers/venv/bin/python").path
            let args = [python, Sandbox.repository.appendingPathComponent("scripts/presign-server.py").path, "--bucket", bucket,
                        "--prefix", "office", "--token", "presign-token", "--expires", String(expires), "--port-file", dir + "/port", "--log", log]
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_addopen(&actions, 2, dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { posix_spawn_file_actions_destroy(&actions) }
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            Sandbox.resetSignals(&attributes)   // the test process blocks signals its children must not
            defer { posix_spawnattr_destroy(&attributes) }
            let environment = ["PATH=/usr/bin:/bin", "AWS_ACCESS_KEY_ID=\(SeaweedFS.accessKey)", "AWS_SECRET_ACCESS_KEY=\(SeaweedFS.secretKey)",
                               "AWS_ENDPOINT_URL=\(sw.endpoint.absoluteString)", "AWS_REGION=us-east-1"]
            let argv = args.map { strdup($0) } + [nil]
            let envp = environment.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
            var p: pid_t = 0
            guard posix_spawn(&p, python, &actions, &attributes, argv, envp) == 0 else { throw S3PeerError("cannot start the presign endpoint") }
            pid = p
            poll(400, every: 25_000) { FileManager.default.fileExists(atPath: dir + "/port") }
            guard let port = try? String(contentsOfFile: dir + "/port", encoding: .utf8) else {
                throw S3PeerError("the presign endpoint did not start: \((try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? "")")
            }
            url = "http://127.0.0.1:\(port)/"
        }
        deinit { kill(pid, SIGTERM); waitpid(pid, nil, 0) }
        var calls: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["path"] as? String
            }
        }
    }

    @Test(arguments: [604_800, 1])
    func batchesGoThroughPresignedURLsWithoutStationCredentials(expires: Int) async throws {
        let sw = try SeaweedFS.shared.get()
        let s3 = S3UploadCLITests.client(sw)
        defer { Task { await s3.shutdown() } }
        let bucket = "presigned-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(3000, seed: 61))
        try s.writeLarge("b.bin", mebibytes: 12, seed: 62)
        #expect(s.run("add", "a.txt", "b.bin").status == 0)
        let server = try PresignServer(in: s, sw: sw, bucket: bucket, expires: expires)
        // No AWS variables at all: only the back office's token.
        let r = s.run(["upload", "--presign-url", server.url, "--part-size", "5M", "--json"], env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        #expect(r.status == 0, "\(r.stderr)")
        let run = S3UploadCLITests.runID(r)
        #expect(try await s3.getObject(bucket: bucket, key: "office/\(run)/batch-0001.json") == S3UploadCLITests.exported(s)[0])
        let head = try #require(try await s3.headObject(bucket: bucket, key: "office/\(run)/batch-0001.json"))
        #expect(head.etag.hasSuffix("-4"), "16 MiB of payload in 5 MiB parts: \(head.etag)")
        if expires == 1 {
            // URLs that expire within a minute are asked for again, part by part.
            #expect(server.calls.filter { $0 == "/parts" }.count == 4, "\(server.calls)")
        } else {
            #expect(server.calls == ["/create", "/complete"])
        }
        let wrong = s.run(["upload", "--presign-url", server.url, "--new-run"], env: ["VAULT_UPLOAD_TOKEN": "wrong"])
        #expect(wrong.status == 76 && wrong.stderr.hasPrefix("vault: the presign endpoint refused the credentials (401"))
    }
}
