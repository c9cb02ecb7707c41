import Crypto
import Foundation
import Testing
import VaultS3
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Receivers that share one remote vault on SeaweedFS (`vault receive --vault s3://…`): two of
/// them behind a balancer this project's test wrote (scripts/balance-proxy.py, round robin), one
/// killed mid-run; stations sending at once; the same batch sent to both receivers at once.
@Suite(.blocking) struct SharedReceiveCLITests {
    /// A station vault `name` with `count` documents (with `large`, the second is of 12 MiB, so the
    /// first batch's commit spans a while and its envelope goes by multipart upload): the
    /// documents' SHA-256 (hex) → bytes.
    static func station(
        _ s: Sandbox, _ name: String, count: Int, seed: UInt64, large: Bool = false
    ) -> [String: [UInt8]] {
        precondition(s.run(["init", "--vault", s.path(name), "--kdf", "insecure-test"]).status == 0)
        var originals: [String: [UInt8]] = [:]
        for i in 0..<count {
            let bytes = [UInt8].random(
                large && i == 1 ? 12 << 20 : [0, 7, 70_000, 300_001][i % 4] + i, seed: seed + UInt64(i))
            s.write("\(name)-\(i)", bytes)
            let r = s.run(["--vault", s.path(name), "add", s.path("\(name)-\(i)"), "--name", "\(name) scan \(i).pdf"])
            precondition(r.status == 0, r.stderr)
            originals[Fixtures.sha(bytes)] = bytes
        }
        return originals
    }

    /// `curl` of one JSON batch (the documents shape) as station `token`, in the background.
    static func curlBatch(
        _ s: Sandbox, url: String, token: String, key: String, head: String, text: String, rate: String = "0"
    ) throws -> (pid: pid_t, out: String) {
        let body =
            #"{"Files":["#
            + Fixtures.entry(
                String(Fixtures.sha(Array(key.utf8)).prefix(32)), "\(key).txt", text, as: text) + "]}"
        let file = s.path("body-\(UUID().uuidString.prefix(6))")
        s.write(String(file.split(separator: "/").last!), Array(body.utf8))
        let out = file + ".out"
        let pid = try Peer.spawn(
            [
                "curl", "-sS", "-o", out, "-w", "%{http_code}", "-H", "Authorization: Bearer \(token)", "-H",
                "Idempotency-Key: \(key)", "-H", "X-Vault-Log-Head: \(head)", "-H", "Content-Type: application/json",
                "--limit-rate", rate, "--data-binary", "@" + file, url + "/batches"
            ], stdout: out + ".status", stderr: out + ".err", searchPath: true)
        return (pid, out)
    }

    /// Waits for a `curlBatch`: its status and body.
    /// An office's vault made in `setup`, pushed to `url` (its remote `origin`), with one station
    /// added there: the station's token.
    static func officeOnStore(_ s: Sandbox, url: String, env: [String: String?], station: String = "desk") -> String {
        #expect(s.run(["init", "--vault", s.path("setup"), "--kdf", "insecure-test"], env: env).status == 0)
        #expect(s.run(["--vault", s.path("setup"), "remote", "add", "origin", url], env: env).status == 0)
        #expect(s.run(["--vault", s.path("setup"), "push", "-q"], env: env).status == 0)
        return s.run(["receive", "--vault", url, "station", "add", station], env: env).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func finish(_ c: (pid: pid_t, out: String)) -> (status: Int, body: String) {
        var status: Int32 = 0
        while waitpid(c.pid, &status, 0) < 0 && errno == EINTR {}
        let code = Int((try? String(contentsOfFile: c.out + ".status", encoding: .utf8)) ?? "") ?? 0
        return (code, (try? String(contentsOfFile: c.out, encoding: .utf8)) ?? "")
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func twoReceiversShareOneStoreAndAStationMovesFromOneToTheOtherMidRun() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("receivers")
        defer { Task { await s3.shutdown() } }
        let store = S3Fixtures.env(sw)
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        func env(_ cache: String, _ more: [String: String?] = [:]) -> [String: String?] {
            var e = store
            e["VAULT_PASSWORD"] = ReceiverProcess.password
            e["XDG_CACHE_HOME"] = s.path(cache)
            for (k, v) in more { e[k] = v }
            return e
        }
        // The back office's vault, made once and pushed: from then on it lives on the store only.
        let made = s.run(["init", "--vault", s.path("setup"), "--kdf", "insecure-test"], env: env("cache-admin"))
        #expect(made.status == 0, "\(made.stderr)")
        let pushed = s.run(["--vault", s.path("setup"), "push", url], env: env("cache-admin"))
        #expect(pushed.status == 0, "\(pushed.stderr)")
        // Stations and the key are the store's, whichever machine asks.
        let add = s.run(["receive", "--vault", url, "station", "add", "front-desk"], env: env("cache-admin"))
        #expect(add.status == 0, "\(add.stderr)")
        let frontDesk = add.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let scanner = s.run(["receive", "--vault", url, "station", "add", "scanner-2"], env: env("cache-other"))
            .out.trimmingCharacters(in: .whitespacesAndNewlines)
        let probe = s.run(["receive", "--vault", url, "station", "add", "probe"], env: env("cache-other"))
            .out.trimmingCharacters(in: .whitespacesAndNewlines)
        let taken = s.run(["receive", "--vault", url, "station", "add", "scanner-2"], env: env("cache-admin"))
        #expect(taken.status != 0 && taken.stderr.contains("already a station named 'scanner-2'"), "\(taken.stderr)")
        let key = s.run(["receive", "--vault", url, "key"], env: env("cache-admin")).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 64 && s.run(["receive", "--vault", url, "key"], env: env("cache-other")).out == key + "\n")

        // Two receivers, each with a cache folder of its own (as on two machines), behind a balancer.
        // r1 reaches the store through a path that holds each part of a multipart upload for 10 s
        // (and drops it if r1 is gone by then), so r1 can be killed mid-commit at a known moment.
        let path = try PythonPeer(
            "flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--delay", "partNumber=:10"], in: s)
        let r1 = try ReceiverProcess(
            s, vault: "r1", location: url, environment: env("cache-r1", ["AWS_ENDPOINT_URL": path.url]))
        let r2 = try ReceiverProcess(s, vault: "r2", location: url, environment: env("cache-r2"))
        let balancer = try PythonPeer("balance-proxy.py", ["--upstream", r1.url, "--upstream", r2.url], in: s)

        // The same batch to both receivers at once, each body taking about two seconds: both read
        // it whole, one commits it, the other finds it taken, takes its own envelopes back off the
        // store and answers the same receipt.
        let twin = String(repeating: "twin ", count: 40_000)
        let twins = try [r1, r2].map {
            try Self.curlBatch(
                s, url: $0.url, token: probe, key: "twin-1", head: "7-" + String(repeating: "ab", count: 16),
                text: twin,
                rate: "120k")
        }.map(Self.finish)
        #expect(twins.allSatisfy { $0.status == 200 } && twins[0].body == twins[1].body, "\(twins)")
        #expect((r1.log + r2.log).components(separatedBy: "result=200 duplicate sealed=false station=probe").count == 2)
        // Heads are shared: r1 refuses a head behind the one r2 (or r1) took.
        let behind = Self.finish(
            try Self.curlBatch(
                s, url: r1.url, token: probe, key: "late", head: "6-" + String(repeating: "cd", count: 16), text: "late"
            ))
        #expect(behind.status == 409 && behind.body.contains("station-rolled-back"), "\(behind)")

        // front-desk sends through the balancer (its batches alternate between the receivers); r1,
        // which the balancer hands the first batch, is killed while it puts that batch's envelopes
        // on the store. The station's retry reaches r2, which takes the batch (or, had r1 recorded
        // it, answers its receipt) and deletes what r1 left. scanner-2 sends to r2 by tus meanwhile.
        let frontDocs = Self.station(s, "front", count: 12, seed: 100, large: true)
        let scanDocs = Self.station(s, "scan", count: 6, seed: 200)
        #expect(
            s.run(
                [
                    "--vault", s.path("front"), "destination", "add", "office", balancer.url + "batches",
                    "--receipt-key", key
                ]
            ).status == 0)
        let front = s.spawn(
            ["--vault", s.path("front"), "upload", "--to", "office", "--batch-size", "2"],
            env: ["VAULT_UPLOAD_TOKEN": frontDesk])
        let sawNote = Peer.poll(every: 20_000) {
            path.entries.contains {
                $0["method"] as? String == "PUT" && ($0["path"] as? String ?? "").contains("/receivers/pending/")
            }
        }
        kill(r1.pid, SIGKILL)
        #expect(sawNote, "r1 never began to commit front-desk's first batch: \(r1.log)")
        let scan = s.spawn(
            [
                "--vault", s.path("scan"), "upload", "--url", r2.url + "/files/", "--protocol", "tus", "--batch-size",
                "2"
            ],
            env: ["VAULT_UPLOAD_TOKEN": scanner])
        let (f, sc) = (s.wait(front), s.wait(scan))
        #expect(f.status == 0, "\(f.stderr)")
        #expect(sc.status == 0, "\(sc.stderr)")
        #expect(!r1.log.contains("station=front-desk"), "r1 answered front-desk before it was killed: \(r1.log)")
        #expect(r2.log.contains("station=front-desk"), "\(r2.log)")
        // Every receipt front-desk got checked against the receivers' one key: all delivered.
        let status = s.run(["--vault", s.path("front"), "status", "--json"])
        #expect(status.out.contains(#""undelivered":0"#) || status.out.contains(#""undelivered": 0"#), "\(status.out)")

        // Each document once on the store, byte for byte; no note of a pending batch is left.
        let check = s.run(["clone", url, "--vault", s.path("check"), "-q"], env: env("cache-check"))
        #expect(check.status == 0, "\(check.stderr)")
        let listed = s.run(["--vault", s.path("check"), "list", "--json"], env: env("cache-check"))
        let docs = (try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
        let shas = docs.compactMap { $0["sha256"] as? String }
        let expected = Set(frontDocs.keys).union(scanDocs.keys).union([Fixtures.sha(Array(twin.utf8))])
        #expect(shas.count == frontDocs.count + scanDocs.count + 1, "\(shas.count) documents")
        #expect(Set(shas) == expected)
        for d in docs where (d["size"] as? Int ?? 0) > 0 {
            let got = s.run(
                ["--vault", s.path("check"), "get", d["id"] as? String ?? "", "-o", "-"], env: env("cache-check"))
            #expect(
                frontDocs[d["sha256"] as? String ?? ""] ?? scanDocs[d["sha256"] as? String ?? ""] ?? Array(twin.utf8)
                    == got.stdout)
        }
        let audit = s.run(["--vault", s.path("check"), "audit"], env: env("cache-check"))
        #expect(audit.status == 0, "\(audit.out)\(audit.stderr)")
        let objects = try await s3.listObjects(bucket: bucket, prefix: "office/objects/")
        #expect(objects.count == shas.count)
        let pending = try await s3.listObjects(bucket: bucket, prefix: "office/receivers/pending/")
        #expect(pending.isEmpty, "\(pending.map(\.key))")

        // Someone who can write to the store but has no password: every change to the receivers'
        // log or key is refused as a receiver starts (exit 65), named; put back, all is well.
        func refused(_ why: String) -> Bool {
            let r = s.run(["receive", "--vault", url, "station", "list"], env: env("cache-attacked"))
            return r.status == 65 && r.stderr.contains(why)
                || {
                    print(r.stderr); return false
                }()
        }
        let log = "office/receivers/log/"
        let third = try await s3.object(bucket: bucket, key: log + "000000000003")
        try await s3.deleteObject(bucket: bucket, key: log + "000000000003")
        #expect(refused("receivers/log/000000000003 is missing from the receivers' log"))
        let second = try await s3.object(bucket: bucket, key: log + "000000000002")
        try await s3.putObject(bucket: bucket, key: log + "000000000003", body: second, contentType: "a/b")
        #expect(refused("receivers/log/000000000003 is not an entry of this vault's receivers' log"))
        try await s3.putObject(bucket: bucket, key: log + "000000000003", body: third, contentType: "a/b")
        let entries = try await s3.listObjects(bucket: bucket, prefix: log).count
        let next = log + String(format: "%012d", entries + 1)
        try await s3.putObject(bucket: bucket, key: next, body: Array("junk".utf8), contentType: "a/b")
        #expect(refused(String(next.dropFirst("office/".count)) + " is not an entry"))
        try await s3.deleteObject(bucket: bucket, key: next)
        let sealedKey = try await s3.object(bucket: bucket, key: "office/receivers/key.vlt")
        try await s3.deleteObject(bucket: bucket, key: "office/receivers/key.vlt")
        #expect(refused("receivers/key.vlt is missing, and the receivers' log says their key is \(key)"))
        try await s3.putObject(bucket: bucket, key: "office/receivers/key.vlt", body: second, contentType: "a/b")
        #expect(refused("receivers/key.vlt"))
        try await s3.putObject(bucket: bucket, key: "office/receivers/key.vlt", body: sealedKey, contentType: "a/b")
        let healed = s.run(["receive", "--vault", url, "station", "list"], env: env("cache-attacked"))
        #expect(
            healed.status == 0 && healed.out.contains("front-desk  ") && healed.out.contains("probe  "), "\(healed)")

        // The newest entry deleted while r2 runs (it read it): r2 takes nothing until it is back.
        let newest = log + String(format: "%012d", entries)
        let kept = try await s3.object(bucket: bucket, key: newest)
        try await s3.deleteObject(bucket: bucket, key: newest)
        let cut = Self.finish(
            try Self.curlBatch(
                s, url: r2.url, token: probe, key: "after-cut", head: "8-" + String(repeating: "ab", count: 16),
                text: "x"))
        #expect(cut.status == 503 && cut.body.contains("history-unreadable"), "\(cut)")
        #expect(
            r2.log.contains("\(String(newest.dropFirst("office/".count))) was deleted after this receiver read it"),
            "\(r2.log)")
        try await s3.putObject(bucket: bucket, key: newest, body: kept, contentType: "a/b")
        let back = Self.finish(
            try Self.curlBatch(
                s, url: r2.url, token: probe, key: "after-cut", head: "8-" + String(repeating: "ab", count: 16),
                text: "x"))
        #expect(back.status == 200, "\(back)")
        // The receivers' objects copied under another prefix of the same vault do not open there.
        #expect(
            s.run(["--vault", s.path("setup"), "push", "s3://\(bucket)/copy", "-q"], env: env("cache-admin")).status
                == 0)
        for o in try await s3.listObjects(bucket: bucket, prefix: "office/receivers/") {
            let bytes = try await s3.object(bucket: bucket, key: o.key)
            try await s3.putObject(
                bucket: bucket, key: "copy/" + o.key.dropFirst("office/".count), body: bytes, contentType: "a/b")
        }
        let copied = s.run(["receive", "--vault", "s3://\(bucket)/copy", "station", "list"], env: env("cache-copy"))
        #expect(
            copied.status == 65 && copied.stderr.contains("receivers/log/000000000001 is not an entry"),
            "\(copied.stderr)")
    }

    /// A receiver that served a vault folder, moved to a store by `vault push`: receivers on the
    /// store sign with its key, know its stations, answer its batches' resends with their receipts
    /// and know each station's head.
    @Test func aReceiverMovedToAStoreByPushGoesOnWithItsKeyStationsAndBatches() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("moved")
        defer { Task { await s3.shutdown() } }
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache")
        let zeros = String(repeating: "0", count: 32)
        var local: ReceiverProcess? = try ReceiverProcess(s)
        let token = local!.addStation("desk")
        let key = local!.run("receive", "key").out
        let first = Self.finish(
            try Self.curlBatch(s, url: local!.url, token: token, key: "b1", head: "3-" + zeros, text: "one"))
        #expect(first.status == 200, "\(first)")
        local = nil  // stopped
        let pushed = s.run(["--vault", s.path("office"), "push", url], env: env)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect(
            pushed.stderr.contains("the receiver's key, 1 station record and 1 batch went to the store"),
            "\(pushed.stderr)")
        #expect(s.run(["receive", "--vault", url, "key"], env: env).out == key)
        let stations = s.run(["receive", "--vault", url, "station", "list"], env: env).out
        #expect(
            stations.hasPrefix("desk  last seen ")
                && stations.hasSuffix("  1 batch, 1 document, 3 B  head 3-\(zeros)\n"),
            "\(stations)")
        let r = try ReceiverProcess(s, vault: "r", location: url, environment: env)
        let again = Self.finish(
            try Self.curlBatch(s, url: r.url, token: token, key: "b1", head: "3-" + zeros, text: "one"))
        #expect(again.status == 200 && again.body == first.body, "\(again)")
        let behind = Self.finish(
            try Self.curlBatch(s, url: r.url, token: token, key: "b2", head: "2-" + zeros, text: "two"))
        #expect(behind.status == 409 && behind.body.contains("station-rolled-back"), "\(behind)")
        let next = Self.finish(
            try Self.curlBatch(s, url: r.url, token: token, key: "b3", head: "4-" + zeros, text: "three"))
        #expect(next.status == 200, "\(next)")
        // Pushed again: nothing more to carry, nothing said.
        let twice = s.run(["--vault", s.path("office"), "push", url], env: env)
        #expect(twice.status == 0 && !twice.stderr.contains("went to the store"), "\(twice.stderr)")
        // A store whose receivers made a key of their own is left alone, with a warning.
        let third = "s3://\(bucket)/third"
        #expect(s.run(["--vault", s.path("office"), "push", third, "-q"], env: env).status == 0)
        for o in try await s3.listObjects(bucket: bucket, prefix: "third/receivers/") {
            try await s3.deleteObject(bucket: bucket, key: o.key)
        }
        let theirs = s.run(["receive", "--vault", third, "key"], env: env).out
        #expect(theirs.count == 65 && theirs != key)
        let foreign = s.run(["--vault", s.path("office"), "push", third], env: env)
        #expect(
            foreign.status == 0
                && foreign.stderr.contains(
                    "vault: warning: the store's receivers sign with another key (\(theirs.prefix(16))…)"),
            "\(foreign.stderr)")
        #expect(s.run(["receive", "--vault", third, "key"], env: env).out == theirs)
    }

    /// What a new user gets wrong first, said plainly: a second receiver on a port in use, a
    /// vault made straight on a store, operators for a store.
    @Test func aPortInUseAVaultMadeOnAStoreAndAStoreWithoutCredentialsAreSaidPlainly() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s)
        let port = office.url.split(separator: ":").last.map(String.init) ?? ""
        let pw: [String: String?] = ["VAULT_PASSWORD": ReceiverProcess.password]
        #expect(s.run(["init", "--vault", "other", "--kdf", "insecure-test"], env: pw).status == 0)
        let second = s.run(["receive", "--vault", "other", "--listen", "127.0.0.1:\(port)"], env: pw)
        #expect(second.status == 75, "\(second.stderr)")
        #expect(
            second.stderr.hasPrefix("vault: cannot listen on 127.0.0.1:\(port): another process listens there\n"),
            "\(second.stderr)")
        let made = s.run(["init", "--vault", "s3://bucket/office"])
        #expect(made.status == 64 && made.stderr.contains("hint: a vault is made in a folder, then pushed"), "\(made)")
        // Operators are a store's too: asked without the store's credentials, it says which are missing.
        let op = s.run(["receive", "--vault", "s3://bucket/office", "operator", "add", "alice"])
        #expect(op.status == 64 && op.stderr.contains("needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "\(op)")
    }

    /// A log write that lands on the store but whose answer is lost (scripts/flip-proxy.py
    /// --lose-answers): the receiver answers 503 and keeps the batch's envelopes; the resend is
    /// answered with the receipt the log holds, and the documents are there.
    @Test func aLogWriteWhoseAnswerIsLostKeepsTheBatchForItsResend() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("lostanswer")
        defer { Task { await s3.shutdown() } }
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache-admin")
        let token = Self.officeOnStore(s, url: url, env: env)
        let proxy = try PythonPeer(
            "flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--lose-answers", "receivers/log/:4"], in: s)
        var through = env
        through["AWS_ENDPOINT_URL"] = proxy.url
        through["XDG_CACHE_HOME"] = s.path("cache-r")
        let r = try ReceiverProcess(s, vault: "r", location: url, environment: through)
        let text = "kept across a lost answer"
        let first = Self.finish(
            try Self.curlBatch(
                s, url: r.url, token: token, key: "b1", head: "1-" + String(repeating: "0", count: 32), text: text))
        #expect(first.status == 503 && first.body.contains("store-unavailable"), "\(first)")
        #expect(proxy.entries.contains { $0["fault"] as? String == "lost-answer" && $0["status"] as? Int == 200 })
        let again = Self.finish(
            try Self.curlBatch(
                s, url: r.url, token: token, key: "b1", head: "1-" + String(repeating: "0", count: 32), text: text))
        #expect(again.status == 200 && again.body.contains(#""batch":"b1""#), "\(again)")
        #expect(r.log.contains("result=200 duplicate"), "\(r.log)")
        env["XDG_CACHE_HOME"] = s.path("cache-check")
        #expect(s.run(["clone", url, "--vault", s.path("check"), "-q"], env: env).status == 0)
        let listed = s.run(["--vault", s.path("check"), "list", "--json"], env: env)
        let docs = (try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
        #expect(docs.count == 1 && docs.first?["sha256"] as? String == Fixtures.sha(Array(text.utf8)), "\(docs)")
        let pending = try await s3.listObjects(bucket: bucket, prefix: "office/receivers/pending/")
        #expect(pending.isEmpty, "\(pending.map(\.key))")
    }
}
