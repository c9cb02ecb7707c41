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
