import Foundation
import Testing
import VaultS3
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The delivery ledger on the built binary against the real peers: the receiver (json), PHP
/// (form), resumable-upload (tus) and SeaweedFS (s3). What each destination holds is counted on
/// its side, never taken from vault's word.
@Suite(.blocking) struct DeliveryCLITests {
    static let office: [String: String?] = ["VAULT_UPLOAD_TOKEN": "test-token"]
    static let forms: [String: String?] = ["VAULT_UPLOAD_TOKEN": "form-token"]

    /// Adds `count` documents of `size` bytes (distinct); returns their ids.
    static func add(_ s: Sandbox, _ count: Int, size: Int = 3_000, seed: UInt64) throws -> [String] {
        var ids: [String] = []
        for i in 0..<count {
            let r = s.run(
                "add", "-", "--name", "day-\(seed)-\(i).bin", stdin: .random(size + i, seed: seed * 100 + UInt64(i)))
            try #require(r.status == 0, "\(r.stderr)")
            ids.append(r.out.trimmingCharacters(in: .newlines))
        }
        return ids
    }


    /// The document ids inside `{"Files":[{"Id":…}]}` payloads.
    static func ids(inPayloads payloads: [[UInt8]]) -> [String] {
        payloads.flatMap { p -> [String] in
            let files =
                ((try? JSONSerialization.jsonObject(with: Data(p))) as? [String: Any])?["Files"] as? [[String: Any]]
                ?? []
            return files.compactMap { $0["Id"] as? String }
        }
    }

    /// The vault's documents now.
    static func present(_ s: Sandbox) -> Set<String> {
        let list =
            (try? JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout))) as? [[String: Any]] ?? []
        return Set(list.compactMap { $0["id"] as? String })
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func aWeekOfRoutineDeliversEveryDocumentOnceToEachDestinationAndFreesOnlyWhatAllConfirmed() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("week")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        let receiver = Receiver(
            in: s,
            faults: "[" + Array(repeating: #"{"action": "slow", "rate": 4000000}"#, count: 200).joined(separator: ",")
                + "]")
        let php = try PHPServer(in: s)
        let tus = try TusServer(in: s)
        let s3env = S3Fixtures.env(sw)
        for (name, url, extra) in [
            ("office", receiver.url, [String]()), ("forms", php.url, ["--protocol", "form"]),
            ("tus", tus.url, ["--protocol", "tus", "--no-credentials"]), ("archive", "s3://\(bucket)/station", [])
        ] {
            let r = s.run(["destination", "add", name, url] + extra, env: name == "archive" ? s3env : [:])
            try #require(r.status == 0, "\(r.stderr)")
        }
        let env: [String: [String: String?]] = [
            "office": Self.office, "forms": Self.forms, "tus": [:], "archive": s3env
        ]
        func ship(_ name: String, _ extra: [String] = []) -> CLIResult {
            s.run(["upload", "--to", name] + extra, env: env[name]!)
        }
        func held() async throws -> [String: [String]] {
            let keys = try await s3.listObjects(bucket: bucket, prefix: "station/")
            var s3payloads: [[UInt8]] = []
            for k in keys { s3payloads.append(try await s3.object(bucket: bucket, key: k.key)) }
            return [
                "office": receiver.accepted, "forms": php.stored, "tus": Self.ids(inPayloads: tus.uploads),
                "archive": Self.ids(inPayloads: s3payloads)
            ]
        }

        // Monday: three documents, shipped everywhere.
        let monday = try Self.add(s, 3, seed: 1)
        for name in ["office", "forms", "tus", "archive"] {
            let r = ship(name); #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        // Tuesday: four more; each destination gets only those.
        let tuesday = try Self.add(s, 4, seed: 2)
        #expect(
            Set(
                s.run("list", "--undelivered", "--to", "forms").out.split(separator: "\n").dropFirst().map {
                    String($0.prefix(12))
                })
                == Set(tuesday.map { String($0.prefix(12)) }))
        for name in ["office", "forms", "tus", "archive"] {
            let r = ship(name); #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        var now = try await held()
        for name in ["office", "forms", "tus", "archive"] {
            #expect(
                now[name]!.sorted() == (monday + tuesday).sorted(), "\(name) holds each document once: \(now[name]!)")
        }
        // Nothing new: nothing sent.
        let quiet = ship("office")
        #expect(
            quiet.status == 0 && quiet.stderr.hasPrefix("vault: nothing new to send to \(receiver.url)"),
            "\(quiet.stderr)")

        // Wednesday: six large documents; the office upload is killed once its first batch is confirmed.
        let wednesday = try Self.add(s, 6, size: 1 << 20, seed: 3)
        let pid = s.spawn(["upload", "--to", "office", "--batch-size", "2"], env: Self.office)
        let confirmed = poll(every: 20_000) {
            receiver.accepted.contains { wednesday.contains($0) } || !Peer.isRunning(pid)
        }
        try #require(confirmed && Peer.isRunning(pid), "the upload finished before it could be killed")
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let status = Fixtures.json(s.run("status", "--json"))
        let office = (status["destinations"] as? [[String: Any]])?.first { $0["name"] as? String == "office" }
        #expect(office?["interruptedRuns"] as? Int == 1, "\(status)")
        // Freeing space now removes only what every required destination confirmed: Monday's and Tuesday's.
        let freed = s.run("remove", "--delivered", "--json")
        #expect(freed.status == 0, "\(freed.stderr)")
        #expect(Set(Fixtures.json(freed)["removed"] as? [String] ?? []) == Set(monday + tuesday))
        #expect(Self.present(s) == Set(wednesday))
        // The same command finishes the interrupted run: no confirmed batch again.
        let resumed = ship("office", ["--batch-size", "2"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        for name in ["forms", "tus", "archive"] { let r = ship(name); #expect(r.status == 0, "\(name): \(r.stderr)") }
        now = try await held()
        for name in ["office", "forms", "tus", "archive"] {
            #expect(now[name]!.sorted() == (monday + tuesday + wednesday).sorted(), "\(name) holds each document once")
        }
        // The batch in flight at the kill went again under its Idempotency-Key: the office kept it once.
        let keys = receiver.log.filter { ($0["status"] as? Int) == 200 && $0["duplicate"] == nil }.compactMap {
            $0["key"] as? String
        }
        #expect(Set(keys).count == keys.count, "no batch was taken twice")

        // Thursday: shipped to the others first, then documents leave as soon as the office,
        // the last required destination, confirms them.
        let thursday = try Self.add(s, 2, seed: 4)
        for name in ["forms", "tus", "archive"] { let r = ship(name); #expect(r.status == 0, "\(name): \(r.stderr)") }
        let gone = s.run(["upload", "--to", "office", "--remove-delivered"], env: Self.office)
        #expect(gone.status == 0, "\(gone.stderr)")
        // Wednesday's went too: every required destination had them.
        #expect(Self.present(s).isEmpty)
        #expect(Set(receiver.accepted).isSuperset(of: thursday))
        // One removed by hand before any destination had it: the audit names it.
        let stray = try Self.add(s, 1, seed: 5)
        #expect(s.run("remove", stray[0]).status == 0)
        #expect(s.run("audit", "--require-delivered", "office").status == 65)
        let strict = s.run("audit", "--require-delivered", "forms", "--require-delivered", "office", "--json")
        #expect(strict.status == 65)
        let findings = Fixtures.json(strict)["findings"] as? [[String: Any]] ?? []
        #expect(findings.map { $0["code"] as? String } == ["removed-undelivered", "removed-undelivered"], "\(findings)")
        #expect(Set(findings.compactMap { $0["document"] as? String }) == Set(stray))
        // Where each document went, and when.
        let log = s.run("log", "--doc", String(monday[0].prefix(8)))
        for url in [receiver.url, php.url, tus.url, "s3://\(bucket)/station"] {
            #expect(log.out.contains("-> \(url)"), "\(log.out)")
        }
        // Friday: two more go everywhere, and are freed by age.
        let friday = try Self.add(s, 2, seed: 6)
        #expect(s.run("remove", "--delivered-to", "office").status == 0)
        #expect(Self.present(s) == Set(friday), "nothing is removed before every required destination confirmed it")
        for name in ["office", "forms", "tus", "archive"] {
            let r = ship(name); #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        let young = s.run("remove", "--delivered-to", "office", "--older-than", "1d")
        #expect(young.status == 0 && young.stderr.hasPrefix("vault: nothing to remove"), "\(young.stderr)")
        #expect(Self.present(s) == Set(friday))
        #expect(s.run("remove", "--delivered-to", "office", "--older-than", "0s").status == 0)
        #expect(Self.present(s).isEmpty)
        now = try await held()
        for name in ["office", "forms", "tus", "archive"] {
            #expect(
                now[name]!.sorted() == (monday + tuesday + wednesday + thursday + friday).sorted(),
                "\(name) holds each document once")
        }
        let final = Fixtures.json(s.run("status", "--json"))
        #expect(final["documents"] as? Int == 0 && final["undelivered"] as? Int == 0, "\(final)")
        #expect(receiver.accepted.count == Set(receiver.accepted).count, "the office got every document exactly once")
    }

    @Test func killsAroundConfirmationNeverRemoveAnUnconfirmedDocumentNorLoseAConfirmedOne() throws {
        let s = Sandbox()
        s.initVault()
        let ids = try Self.add(s, 8, size: 600_000, seed: 7)
        let receiver = Receiver(
            in: s,
            faults: "[" + Array(repeating: #"{"action": "slow", "rate": 3000000}"#, count: 100).joined(separator: ",")
                + "]")
        // Killed at each named moment around a confirmation in turn (debug builds stop there:
        // VAULT_PAUSE_AT), round after round until every document went.
        let moments = ["upload.attempt#2", "upload.journal-confirmed", "upload.delivery-recorded", "upload.removed"]
        var round = 0
        var held: Set<String> = []
        while !Self.present(s).isEmpty && round < 12 {
            let moment = moments[round % moments.count]
            let (pid, paused) = s.spawn(
                ["upload", "--url", receiver.url, "--batch-size", "1", "--remove-delivered"], env: Self.office,
                pausingAt: moment)
            round += 1
            if paused { held.insert(moment) }
            kill(pid, SIGKILL)
            _ = s.wait(pid)
            // Whatever is gone from the vault, the back office confirmed.
            let removed = Set(ids).subtracting(Self.present(s))
            #expect(
                removed.isSubset(of: Set(receiver.accepted)),
                "round \(round): removed without confirmation: \(removed.subtracting(receiver.accepted))")
        }
        #expect(held == Set(moments), "killed at every moment; not reached: \(Set(moments).subtracting(held))")
        let last = s.run(["upload", "--url", receiver.url, "--batch-size", "1", "--remove-delivered"], env: Self.office)
        #expect(last.status == 0, "\(last.stderr)")
        #expect(Self.present(s).isEmpty)
        #expect(receiver.accepted.sorted() == ids.sorted(), "every document reached the office exactly once")
        // Every removal is backed by a recorded delivery.
        let audit = s.run("audit", "--require-delivered", receiver.url)
        #expect(audit.status == 0, "\(audit.out)")
    }

    @Test func destinationsAreSealedNamedOnceAndCheckedLikeURLs() throws {
        let s = Sandbox()
        s.initVault()
        #expect(s.run("destination", "add", "office", "https://backoffice.example/batches").status == 0)
        let twice = s.run("destination", "add", "again", "HTTPS://BackOffice.example:443/batches")
        #expect(
            twice.status == 73
                && twice.stderr.hasPrefix(
                    "vault: https://backoffice.example/batches is the destination 'office' already"),
            "\(twice.stderr)")
        let credentials = s.run("destination", "add", "x", "https://user:pw@backoffice.example/")
        #expect(credentials.status == 64)
        let s3form = s.run("destination", "add", "x", "s3://bucket/p", "--protocol", "form")
        #expect(s3form.status == 64)
        // What an upload would refuse is not named: plain http:// off loopback, with the upload's words.
        let lan = s.run("destination", "add", "lan", "http://192.168.1.10/batches")
        #expect(
            lan.status == 64
                && lan.stderr == """
                    vault: refusing to send documents unencrypted over http:// to 192.168.1.10
                    vault: hint: use https://, or --insecure-http on a network you trust

                    """, "\(lan.stderr)")
        let trusted = s.run("destination", "add", "lan", "http://192.168.1.10/batches", "--insecure-http")
        #expect(
            trusted.status == 0
                && trusted.stderr.contains("added destination lan → http://192.168.1.10/batches")
                && trusted.stderr.contains("documents cross the network unencrypted"), "\(trusted.stderr)")
        #expect(s.run("destination", "add", "local", "http://127.0.0.1:8080/batches").status == 0)
        s.write("lan.token", Array("secret".utf8))
        let credentials2 = s.run("destination", "set", "lan", "--token-file", "lan.token")
        #expect(
            credentials2.status == 64
                && credentials2.stderr.hasPrefix(
                    "vault: refusing to send credentials unencrypted over http:// to 192.168.1.10\n"),
            "\(credentials2.stderr)")
        // The list is the history's (vault/3): no file stands for it, and one planted beside the
        // history is never read.
        let path = s.path("vault/destinations.vlt")
        #expect(!FileManager.default.fileExists(atPath: path))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let listed = s.run("destination", "list")
        #expect(
            listed.status == 0 && listed.out.hasPrefix("office  https://backoffice.example/batches"),
            "\(listed.out)\(listed.stderr)")
        let none = s.run(["upload", "--to", "nowhere"], env: Self.office)
        #expect(none.status == 3 && none.stderr.contains("no destination named 'nowhere'"), "\(none.stderr)")
        #expect(s.run("upload", "--to", "a", "--url", "https://x.example/").status == 64)
    }
}
