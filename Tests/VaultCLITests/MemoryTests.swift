import Foundation
import VaultTestSupport
import Testing
import VaultS3

/// Peak memory of whole `vault` processes (measured with wait4, so tests running in parallel
/// in this process do not affect it): it must not grow with the document's size.
///
/// `make test` runs them at a quarter of the data (256 MiB; 20 x 12 MiB), `make long` at full
/// size (1 GiB; 20 x 50 MiB), with the same bounds: they hold the constant part (buffers of a
/// large file's chunk batches, a tus PATCH, S3 parts in flight), and a command that held a
/// whole document would exceed them at either size.
@Suite(.serialized, .blocking) struct MemoryTests {
    /// The size of the large document of the add and get test, in MiB.
    static let large = TestSize.pick(256, long: 1024)
    /// The size of each of the 20 documents of the export and upload test, in MiB.
    static let each = TestSize.pick(12, long: 50)

    @Test func addAndGetOfALargeDocumentUseAtMost16MiBMoreThanOfOneKiB() throws {
        let s = Sandbox()
        s.initVault(kdf: "interactive")
        s.write("small.bin", .random(1024))
        try s.writeLarge("big.bin", mebibytes: Self.large, seed: 9)
        let big = s.path("big.bin")

        let addSmall = s.measure("add", "small.bin")
        let addBig = s.measure("add", "big.bin")
        #expect(addSmall.status == 0 && addBig.status == 0)
        try FileManager.default.removeItem(atPath: big)
        let getSmall = s.measure("get", "small.bin", "-o", s.path("small.out"))
        let getBig = s.measure("get", "big.bin", "-o", s.path("big.out"))
        #expect(getSmall.status == 0 && getBig.status == 0, "\(getBig.stderr)")
        let size = try FileManager.default.attributesOfItem(atPath: s.path("big.out"))[.size] as? Int
        #expect(size == Self.large << 20)
        let addDelta = addBig.maxRSSKiB - addSmall.maxRSSKiB, getDelta = getBig.maxRSSKiB - getSmall.maxRSSKiB
        print(
            "peak RSS: add 1 KiB \(addSmall.maxRSSKiB) KiB, \(Self.large) MiB \(addBig.maxRSSKiB) KiB (+\(addDelta)); "
                + "get 1 KiB \(getSmall.maxRSSKiB) KiB, \(Self.large) MiB \(getBig.maxRSSKiB) KiB (+\(getDelta))")
        #expect(addSmall.maxRSSKiB > 60 * 1024, "the figure includes Argon2id's 64 MiB, so it is vault's own")
        #expect(addDelta <= 16 * 1024)
        #expect(getDelta <= 16 * 1024)
    }

    /// Creates a bucket through the S3 client (synchronously, for a synchronous test).
    static func createBucket(_ bucket: String, _ sw: SeaweedFS) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: Error?
        Task {
            let c = S3Fixtures.client(sw)
            do { try await c.createBucket(bucket) } catch { failure = error }
            await c.shutdown()
            done.signal()
        }
        done.wait()
        if let failure { throw failure }
    }

    // Long: every protocol in turn against one peak-memory bound, in one process tree.
    @Test func exportingAndUploadingTwentyLargeDocumentsInEveryProtocolUseAtMost8MiBMoreThanOneOf1MiB() throws {
        let s = Sandbox()
        s.initVault(kdf: "interactive")
        for i in 0..<21 {
            let path = s.path("d\(i).bin")
            try s.writeLarge("d\(i).bin", mebibytes: i == 0 ? 1 : Self.each, seed: UInt64(i + 3))
            #expect(s.run("add", path, "--tag", i == 0 ? "small" : "big").status == 0)
            try FileManager.default.removeItem(atPath: path)
        }
        let small = s.measure("export", "--tag", "small", "--out", "small", "--progress", "none")
        let big = s.measure("export", "--tag", "big", "--out", "big", "--progress", "none")
        // Upload the same selections to the receiver (it only hashes bodies, in sink mode).
        let r = Receiver(in: s, token: nil, mode: "sink")
        let open = ["--progress", "none", "--no-credentials"]  // the receiver takes no token
        let upSmall = s.measureWith(["upload", "--tag", "small", "--url", r.url] + open, env: [:])
        let upBig = s.measureWith(["upload", "--tag", "big", "--url", r.url] + open, env: [:])
        #expect(upSmall.status == 0 && upBig.status == 0, "\(upBig.stderr)")
        #expect(r.statuses == ["200", "200"])
        #expect((r.log.last?["bytes"] as? Int ?? 0) > 20 * Self.each << 20 * 4 / 3)
        print(
            """
                peak RSS: upload 1 x 1 MiB \(upSmall.maxRSSKiB) KiB, 20 x \(Self.each) MiB \(upBig.maxRSSKiB) KiB \
                (+\(upBig.maxRSSKiB - upSmall.maxRSSKiB))
                """
        )
        #expect(upBig.maxRSSKiB - upSmall.maxRSSKiB <= 8 * 1024)
        // The same as multipart/form-data (raw bytes), to the same sink.
        let formSmall = s.measureWith(
            ["upload", "--tag", "small", "--url", r.url, "--protocol", "form"] + open, env: [:])
        let formBig = s.measureWith(
            ["upload", "--tag", "big", "--url", r.url, "--protocol", "form"] + open, env: [:])
        #expect(formSmall.status == 0 && formBig.status == 0, "\(formBig.stderr)")
        let formBytes: Int = r.log.last?["bytes"] as? Int ?? 0
        #expect(formBytes > 20 * Self.each << 20)
        print(
            """
                peak RSS: form upload 1 x 1 MiB \(formSmall.maxRSSKiB) KiB, 20 x \(Self.each) MiB \
                \(formBig.maxRSSKiB) KiB (+\(formBig.maxRSSKiB - formSmall.maxRSSKiB))
                """
        )
        #expect(formBig.maxRSSKiB - formSmall.maxRSSKiB <= 8 * 1024)
        // And over tus, in 4 MiB checksummed PATCHes, to resumable-upload.
        let tus = try TusServer(in: s, checksums: "sha256")
        let tusSmall = s.measureWith(
            ["upload", "--tag", "small", "--url", tus.url, "--protocol", "tus"] + open, env: [:])
        let tusBig = s.measureWith(
            ["upload", "--tag", "big", "--url", tus.url, "--protocol", "tus"] + open, env: [:])
        #expect(tusSmall.status == 0 && tusBig.status == 0, "\(tusBig.stderr)")
        let tusWritten: Int = tus.written.reduce(0, +)
        let bigPayload: Int = 20 * Self.each << 20 * 4 / 3
        #expect(tusWritten > bigPayload)
        print(
            """
                peak RSS: tus upload 1 x 1 MiB \(tusSmall.maxRSSKiB) KiB, 20 x \(Self.each) MiB \(tusBig.maxRSSKiB) \
                KiB (+\(tusBig.maxRSSKiB - tusSmall.maxRSSKiB))
                """
        )
        #expect(tusBig.maxRSSKiB - tusSmall.maxRSSKiB <= 8 * 1024)
        // And to S3 (SeaweedFS) with two 8 MiB parts in flight: at most 16 MiB more.
        let sw = try SeaweedFS.shared.get()
        let bucket = "memory-\(UUID().uuidString.prefix(8).lowercased())"
        let make = s.run(["upload", "--url", "s3://\(bucket)/probe", "--tag", "small"], env: S3Fixtures.env(sw))
        #expect(make.status == 69, "the bucket does not exist yet: \(make.stderr)")
        try Self.createBucket(bucket, sw)
        let s3Small = s.measureWith(
            ["upload", "--tag", "small", "--url", "s3://\(bucket)/m", "--parallel", "2", "--progress", "none"],
            env: S3Fixtures.env(sw))
        let s3Big = s.measureWith(
            ["upload", "--tag", "big", "--url", "s3://\(bucket)/m", "--parallel", "2", "--progress", "none"],
            env: S3Fixtures.env(sw))
        #expect(s3Small.status == 0 && s3Big.status == 0, "\(s3Big.stderr)")
        print(
            """
                peak RSS: s3 upload (--parallel 2) 1 x 1 MiB \(s3Small.maxRSSKiB) KiB, 20 x \(Self.each) MiB \
                \(s3Big.maxRSSKiB) KiB (+\(s3Big.maxRSSKiB - s3Small.maxRSSKiB))
                """
        )
        #expect(s3Big.maxRSSKiB - s3Small.maxRSSKiB <= 16 * 1024)
        // And the same export read in place from the store (push first), with a 16 MiB cache:
        // at most 8 MiB more than for 1 MiB, plus the cache.
        let push = s.run(["push", "s3://\(bucket)/vault"], env: S3Fixtures.env(sw))
        #expect(push.status == 0, "\(push.stderr)")
        let remote = ["--vault", "s3://\(bucket)/vault", "--cache-size", "16M", "export", "--progress", "none"]
        let directSmall = s.measureWith(
            remote + ["--tag", "small", "--out", "direct-small"], env: S3Fixtures.env(sw))
        let directBig = s.measureWith(remote + ["--tag", "big", "--out", "direct-big"], env: S3Fixtures.env(sw))
        #expect(directSmall.status == 0 && directBig.status == 0, "\(directBig.stderr)")
        #expect(
            FileManager.default.contents(atPath: s.path("direct-big/batch-0001.json"))
                == FileManager.default.contents(atPath: s.path("big/batch-0001.json")))
        print(
            """
                peak RSS: direct export from the store (--cache-size 16M) 1 x 1 MiB \(directSmall.maxRSSKiB) KiB, 20 \
                x \(Self.each) MiB \(directBig.maxRSSKiB) KiB (+\(directBig.maxRSSKiB - directSmall.maxRSSKiB))
                """
        )
        #expect(directBig.maxRSSKiB - directSmall.maxRSSKiB <= (8 + 16) * 1024)
        #expect(small.status == 0 && big.status == 0, "\(big.stderr)")
        let size = try FileManager.default.attributesOfItem(atPath: s.path("big/batch-0001.json"))[.size] as? Int ?? 0
        #expect(size > 20 * Self.each << 20 * 4 / 3)
        print(
            """
                peak RSS: export 1 x 1 MiB \(small.maxRSSKiB) KiB, 20 x \(Self.each) MiB \(big.maxRSSKiB) KiB \
                (+\(big.maxRSSKiB - small.maxRSSKiB))
                """
        )
        #expect(small.maxRSSKiB > 60 * 1024)
        #expect(big.maxRSSKiB - small.maxRSSKiB <= 8 * 1024)
        // Sealed to an age recipient (one more AEAD pass, base64 of the age files): the same bound.
        let recipient = s.run("keygen", "--out", s.path("office.key")).out.trimmingCharacters(in: .newlines)
        let sealedSmall = s.measure(
            "export", "--tag", "small", "--out", "sealed-small", "--recipient", recipient, "--progress", "none")
        let sealedBig = s.measure(
            "export", "--tag", "big", "--out", "sealed-big", "--recipient", recipient, "--progress", "none")
        #expect(sealedSmall.status == 0 && sealedBig.status == 0, "\(sealedBig.stderr)")
        let sealedSize =
            try FileManager.default.attributesOfItem(atPath: s.path("sealed-big/batch-0001.json"))[.size] as? Int ?? 0
        #expect(sealedSize > size)
        print(
            """
                peak RSS: sealed export 1 x 1 MiB \(sealedSmall.maxRSSKiB) KiB, 20 x \(Self.each) MiB \
                \(sealedBig.maxRSSKiB) KiB (+\(sealedBig.maxRSSKiB - sealedSmall.maxRSSKiB))
                """
        )
        #expect(sealedBig.maxRSSKiB - sealedSmall.maxRSSKiB <= 8 * 1024)
    }

    /// Issue 57, point 2: a server that refuses documents by their place. A batch of a 300 MiB
    /// document and 20 small ones, 20 of them refused (the first in the batch, the others one by
    /// one as they go alone): the large one goes twice, as it may, and the upload's peak memory
    /// is that of an upload of the same batch that nothing refused (before: each refusal sent
    /// the batch again minus one, 19 times the large document, at three times the memory).
    @Test func twentyDocumentsRefusedByPlaceBesideALargeOneCostNoMemory() throws {
        let s = Sandbox()
        s.initVault(kdf: "interactive")
        try s.writeLarge("big.bin", mebibytes: 300, seed: 12)
        #expect(s.run("add", "big.bin").status == 0)
        try FileManager.default.removeItem(atPath: s.path("big.bin"))
        for i in 0..<20 {
            s.write("small \(i).txt", .random(1000 + i, seed: UInt64(300 + i)))
            #expect(s.run("add", "small \(i).txt").status == 0)
        }
        let batch = ["--batch-size", "21"]
        let plain = Receiver(in: s, mode: "sink")
        let normal = s.measureWith(["upload", "--url", plain.url] + batch, env: Fixtures.uploadToken)
        #expect(normal.status == 0, "\(normal.stderr)")
        #expect(plain.statuses == ["200"])
        let refuse = #"{"action": "status", "status": 400, "error": {"code": "no", "document": PLACE}}"#
        let plan =
            "[" + refuse.replacingOccurrences(of: "PLACE", with: "2") + #", {"action": "ok"}, "#
            + Array(repeating: refuse.replacingOccurrences(of: "PLACE", with: "1"), count: 19).joined(separator: ", ")
            + "]"
        let refusing = Receiver(in: s, faults: plan, mode: "sink")
        let refused = s.measureWith(["upload", "--url", refusing.url, "--new-run"] + batch, env: Fixtures.uploadToken)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.components(separatedBy: "the server refused it").count - 1 == 20, "\(refused.stderr)")
        #expect(refusing.statuses == ["400", "200"] + Array(repeating: "400", count: 19), "\(refusing.statuses)")
        let delta = refused.maxRSSKiB - normal.maxRSSKiB
        print(
            "peak RSS: upload of 300 MiB + 20 \(normal.maxRSSKiB) KiB; "
                + "with 20 refused by place \(refused.maxRSSKiB) KiB")
        #expect(delta <= 8 * 1024, "\(delta) KiB more than an upload nothing refused")
    }
}
