import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `vault upload --protocol tus` against `resumable-upload` 0.3.0, a tus 1.0 server this
/// project did not write: checksums, a chunk limit below vault's chunk size, a server killed
/// and restarted mid-PATCH, vault killed with SIGKILL mid-batch and resumed.
@Suite(.blocking) struct TusUploadCLITests {
    /// A vault with `count` documents of `mebibytes` MiB each.
    static func vault(count: Int, mebibytes: Int, seed: UInt64) throws -> Sandbox {
        let s = Sandbox()
        s.initVault()
        for i in 0..<count {
            try s.writeLarge("d\(i).bin", mebibytes: mebibytes, seed: seed + UInt64(i))
            let r = s.run("add", "d\(i).bin")
            precondition(r.status == 0, r.stderr)
        }
        return s
    }

    /// The batch files `vault export` writes for the same selection and batching.
    static func exported(_ s: Sandbox, _ extra: [String] = []) -> [[UInt8]] {
        let out = "export-\(UUID().uuidString.prefix(6))"
        let r = s.run(["export", "--out", out, "-q"] + extra)
        precondition(r.status == 0 || r.status == 2, r.stderr)
        return ((try? FileManager.default.contentsOfDirectory(atPath: s.path(out))) ?? []).filter {
            $0.hasPrefix("batch-")
        }.sorted()
            .map { Array(FileManager.default.contents(atPath: s.path(out + "/" + $0))!) }
    }

    static func sorted(_ payloads: [[UInt8]]) -> [[UInt8]] { payloads.sorted { $0.lexicographicallyPrecedes($1) } }

    @Test(arguments: ["sha1,sha256", ","])
    func uploadsAreByteIdenticalToTheExportWithAndWithoutChecksums(checksums: String) throws {
        let s = try Self.vault(count: 3, mebibytes: 3, seed: 300)
        // The server takes at most 1 MiB per PATCH; vault starts at 4 MiB and halves on 413.
        let tus = try TusServer(in: s, checksums: checksums, maxChunk: 1 << 20)
        let r = s.run([
            "upload", "--url", tus.url, "--protocol", "tus", "--no-credentials", "--batch-size", "2", "--progress",
            "json", "--json"
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let chunkEvents = r.events.compactMap { $0 }.filter { $0["event"] as? String == "chunkSize" }
        #expect(chunkEvents.map { $0["bytes"] as? Int } == [2 << 20, 1 << 20])
        #expect(Self.sorted(tus.uploads) == Self.sorted(Self.exported(s, ["--batch-size", "2"])))
        // Nothing was written twice: the bytes the server wrote add up to the payloads.
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        #expect(tus.written.reduce(0, +) == result["payloadBytes"] as? Int)
        #expect(result["resumedBytes"] as? Int == 0)
        if checksums == "," {
            #expect(!tus.log.contains("Checksum mismatch"))
        }
        // The server kept the metadata tus-js-client and Uppy send (filename, filetype), beside vault's own.
        let batch = try #require((s.journal()?["batches"] as? [[String: Any]])?.first)
        let url = try #require(batch["tusURL"] as? String)
        let head = s.shell(
            """
                python3 -c 'import sys, urllib.request as u; r = u.urlopen(u.Request(sys.argv[1], method=\"HEAD\", \
                headers={\"Tus-Resumable\": \"1.0.0\"})); print(\"upload-metadata: \" + \
                r.headers[\"Upload-Metadata\"])' '\(url)'
                """
        )
        let line = try #require(
            head.out.split(separator: "\n").first { $0.lowercased().hasPrefix("upload-metadata:") },
            "\(head.out) \(head.stderr)")
        var metadata: [String: String] = [:]
        for pair in line.dropFirst("upload-metadata:".count).split(separator: ",") {
            let kv = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            metadata[String(kv[0])] =
                kv.count > 1 ? Data(base64Encoded: String(kv[1])).map { String(decoding: $0, as: UTF8.self) } : ""
        }
        #expect(metadata["filename"] == "batch-0001.json" && metadata["filetype"] == "application/json", "\(metadata)")
        #expect(
            metadata["name"] == "batch-0001.json" && metadata["type"] == "application/json"
                && metadata["batch"] == "1/2", "\(metadata)")
    }

    @Test func aServerKilledMidPatchAndRestartedIsResumedFromItsOffset() throws {
        let s = try Self.vault(count: 1, mebibytes: 24, seed: 310)
        let tus = try TusServer(in: s)
        let pid = s.spawn([
            "upload", "--url", tus.url, "--protocol", "tus", "--no-credentials", "--chunk-size", "256K", "--progress",
            "json", "--retries", "8"
        ])
        poll(every: 2000) { tus.written.count >= 12 || !Peer.isRunning(pid) }
        guard Peer.isRunning(pid) else {
            let early = s.wait(pid)
            Issue.record(
                """
                    the upload ended before the server could be killed: \(early.status) \(early.stderr) \
                    \(tus.log.suffix(1500))
                    """
            )
            return
        }
        tus.crash()
        // The server comes back once the upload has met it gone (a retry is planned).
        #expect(
            poll(every: 20_000) { s.errorsSoFar(pid).contains(#""event":"retry""#) || !Peer.isRunning(pid) },
            "the upload retries while the server is down")
        try tus.start()
        let r = s.wait(pid)
        #expect(r.status == 0, "\(r.stderr)")
        let resumed = r.events.compactMap { $0 }.filter { $0["event"] as? String == "resumed" }
        #expect(resumed.count == 1)
        #expect((resumed.first?["offset"] as? Int ?? 0) >= 12 * (256 << 10))
        #expect(tus.uploads == Self.exported(s))
    }

    @Test func vaultKilledMidBatchResumesTheSameUploadWithoutResendingAnAcknowledgedByte() throws {
        let s = try Self.vault(count: 2, mebibytes: 12, seed: 320)
        let tus = try TusServer(in: s)
        let args = [
            "upload", "--url", tus.url, "--protocol", "tus", "--no-credentials", "--chunk-size", "256K"
        ]
        let pid = s.spawn(args)
        poll(every: 2000) { tus.written.count >= 16 || !Peer.isRunning(pid) }
        guard Peer.isRunning(pid) else {
            let early = s.wait(pid)
            Issue.record(
                "the upload ended before it could be killed: \(early.status) \(early.stderr) \(tus.log.suffix(1500))")
            return
        }
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(tus.waitUntilIdle(), "a PATCH in flight at the kill is written or dropped before the count")
        let batches = try #require(s.journal())["batches"] as! [[String: Any]]
        let tusURL = try #require(batches[0]["tusURL"] as? String)
        #expect(tusURL.hasPrefix(tus.url + "/"), "the upload URL is journaled")
        // A PATCH whose body had all arrived when vault was killed may be written after its
        // connection closed: the count is taken once the server's own offset (a tus HEAD) and
        // its log agree.
        var acknowledged = -1
        let settled = poll(every: 20_000) {
            let head = s.shell(
                "\"\(Peer.python)\" -c 'import sys, urllib.request as u; "
                    + """
                        print(u.urlopen(u.Request(sys.argv[1], method=\"HEAD\", headers={\"Tus-Resumable\": \
                        \"1.0.0\"})).headers[\"Upload-Offset\"])' '\(tusURL)'
                        """
            )
            acknowledged = Int(head.out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            return acknowledged >= 0 && acknowledged == tus.written.reduce(0, +)
        }
        #expect(settled, "the server's offset \(acknowledged) and its log \(tus.written.reduce(0, +)) agree")

        // The same command again (no --resume needed): the interrupted run is finished first.
        let r = s.run(args + ["--progress", "json", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let resumed = r.events.compactMap { $0 }.first { $0["event"] as? String == "resumed" }
        #expect(resumed?["offset"] as? Int == acknowledged, "continued from the server's offset, not from zero")
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        #expect(result["resumedBytes"] as? Int == acknowledged)
        // Measured from the server's log: every byte was written exactly once.
        #expect(tus.written.reduce(0, +) == result["payloadBytes"] as? Int)
        #expect(tus.uploads == Self.exported(s))
        #expect(tus.log.components(separatedBy: "Received POST").count - 1 == 1, "one tus upload for the batch")
    }

    @Test func aDamagedDocumentAbandonsTheUploadWithDeleteAndSkipBadStartsAnother() throws {
        let s = try Self.vault(count: 3, mebibytes: 2, seed: 330)
        let ids = (try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]).map
        { $0["id"] as! String }
        let object = s.path("vault/objects/\(ids[1]).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 100] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let tus = try TusServer(in: s)
        let r = s.run([
            "upload", "--url", tus.url, "--protocol", "tus", "--no-credentials", "--chunk-size", "512K", "--skip-bad"
        ])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(tus.log.contains("Received DELETE request"), "the abandoned upload was terminated")
        #expect(tus.log.components(separatedBy: "Received POST").count - 1 == 2)
        let completed = tus.uploads.filter { ($0.first ?? 0) == UInt8(ascii: "{") && $0.last == UInt8(ascii: "}") }
        #expect(completed == Self.exported(s, ["--skip-bad"]))
    }
}
