import Crypto
import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sealed history, `vault audit` and `vault passwd` (issue 13), on the built binary.
@Suite(.blocking) struct AuditCLITests {
    /// A vault with three documents (a.txt, b.txt, c.txt), one of them (b.txt) removed.
    static func vaultWithHistory() -> (Sandbox, [String: String]) {
        let s = Sandbox()
        s.initVault()
        var ids: [String: String] = [:]
        for (i, name) in ["a.txt", "b.txt", "c.txt"].enumerated() {
            s.write(name, .random(3000 + i * 100, seed: UInt64(700 + i)))
            let r = s.run("add", name)
            precondition(r.status == 0, r.stderr)
            ids[name] = r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let r = s.run("remove", "b.txt")
        precondition(r.status == 0, r.stderr)
        return (s, ids)
    }

    /// `audit --json`, parsed: the finding codes, and the whole object.
    static func audit(
        _ s: Sandbox, _ extra: [String] = [], vault: String? = nil
    ) -> (status: Int32, codes: [String], json: [String: Any]) {
        let r = s.run(["audit", "--json"] + extra + (vault.map { ["--vault", s.path($0)] } ?? []))
        let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any] ?? [:]
        let codes = (json["findings"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        return (r.status, codes, json)
    }

    /// The byte ranges of `log.vlt`'s records (length-prefixed frames after a 9-byte header).
    static func recordRanges(_ log: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = [], at = 9
        while at + 4 <= log.count {
            let length = Int(log[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard at + 4 + length <= log.count else { break }
            ranges.append(at..<at + 4 + length)
            at += 4 + length
        }
        return ranges
    }

    // MARK: History

    @Test func everyChangeAndDeliveryIsRecordedAndPrinted() throws {
        let (s, ids) = Self.vaultWithHistory()
        #expect(s.run("export", "--out", "outbox", "-q").status == 0)
        let r = s.run("log", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])
        let records = try #require(json["records"] as? [[String: Any]])
        #expect(records.map { $0["op"] as? String } == ["init", "add", "add", "add", "remove", "export"])
        #expect(
            records.allSatisfy {
                $0["status"] as? String == "ok" && $0["outcome"] as? String == "ok"
                    && !($0["host"] as? String ?? "").isEmpty
            })
        let added = try #require(records[1]["documents"] as? [[String: Any]])
        let a = s.path("a.txt")
        #expect(added.first?["id"] as? String == ids["a.txt"])
        #expect(added.first?["size"] as? Int == 3000)
        #expect(
            added.first?["sha256"] as? String
                == SHA256.hash(data: Fixtures.read(a)).map { String(format: "%02x", $0) }.joined())
        let removed = try #require(records[4]["documents"] as? [[String: Any]])
        #expect(removed.map { $0["id"] as? String } == [ids["b.txt"]])
        let exported = try #require(records[5]["documents"] as? [[String: Any]])
        #expect(Set(exported.compactMap { $0["id"] as? String }) == [ids["a.txt"]!, ids["c.txt"]!])
        #expect(
            records[5]["destinations"] as? [String] == [
                URL(fileURLWithPath: s.path("outbox/batch-0001.json")).standardizedFileURL.absoluteString
            ])
        #expect(json["head"] as? String == s.run("audit", "--head").out.trimmingCharacters(in: .newlines))
        #expect((json["head"] as? String)?.hasPrefix("6-") == true)

        // Filters.
        let byDoc = s.run("log", "--doc", String(ids["b.txt"]!.prefix(8)))
        #expect(byDoc.status == 0)
        #expect(
            byDoc.out.split(separator: "\n").filter { $0.contains("  add ") || $0.contains("  remove ") }.count == 2)
        let future = s.run("log", "--since", "2999-01-01")
        #expect(future.status == 0 && future.out.isEmpty)
        let bad = s.run("log", "--since", "yesterday")
        #expect(bad.status == 64 && bad.stderr.contains("--since needs a date"))
        // No credentials in the history: an upload target is recorded as scheme, host and path.
        #expect(!s.run("log").out.contains("correct horse"))
    }

    /// 80 operations in `make test`, 200 in `make long`.
    @Test func aCleanVaultAfterManyMixedOperationsAuditsClean() throws {
        let s = Sandbox()
        s.initVault()
        let count = TestSize.pick(80, long: 200)
        var rng = SystemRandomNumberGenerator()
        var present: [String] = []
        var operations = 1
        var seed: UInt64 = 5000
        while operations < count {
            let roll = Int.random(in: 0..<10, using: &rng)
            if roll < 5 || present.count < 2 {
                let names = (0..<Int.random(in: 1...3, using: &rng)).map { i -> String in
                    seed += 1
                    s.write("f\(seed).bin", .random(Int.random(in: 0...20_000, using: &rng), seed: seed))
                    return "f\(seed).bin"
                }
                let r = s.run(["add", "--allow-duplicate"] + names)
                #expect(r.status == 0, "\(r.stderr)")
                present += r.out.split(separator: "\n").map(String.init)
            } else if roll < 8 {
                let id = present.remove(at: Int.random(in: 0..<present.count, using: &rng))
                #expect(s.run("remove", id).status == 0)
            } else {
                #expect(s.run("export", "--out", "out\(operations)", "-q").status == 0)
            }
            operations += 1
        }
        let (status, codes, json) = Self.audit(s, ["--deep"])
        #expect(status == 0, "\(codes)")
        #expect(codes.isEmpty)
        #expect(json["clean"] as? Bool == true)
        #expect(json["records"] as? Int == count)
        #expect(json["documents"] as? Int == present.count)
        #expect(json["objects"] as? Int == present.count)
    }

    // MARK: Findings

    @Test func aDeletedObjectIsReportedMissing() {
        let (s, ids) = Self.vaultWithHistory()
        try? FileManager.default.removeItem(atPath: s.path("vault/objects/\(ids["a.txt"]!).vlt"))
        let (status, codes, json) = Self.audit(s)
        #expect(status == 65)
        #expect(codes.contains("missing-object"))
        let finding = (json["findings"] as? [[String: Any]])?.first { $0["code"] as? String == "missing-object" }
        #expect(finding?["document"] as? String == ids["a.txt"])
        let text = s.run("audit")
        #expect(text.status == 65)
        #expect(text.out.contains("missing-object: \(ids["a.txt"]!) (a.txt), added by record 2, has no object"))
        #expect(text.stderr.contains("vault: the audit found"))
    }

    @Test func aResurrectedDocumentIsReportedAndNeverSent() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(5000, seed: 71))
        let id = s.run("add", "a.txt").out.trimmingCharacters(in: .newlines)
        let object = s.path("vault/objects/\(id).vlt")
        let copy = Fixtures.read(object)
        #expect(s.run("remove", id).status == 0)
        Fixtures.write(object, copy)  // restored behind the vault's back
        chmod(object, 0o600)
        let (status, codes, _) = Self.audit(s)
        #expect(status == 65)
        #expect(codes.contains("resurrected-object"))
        let export = s.run("export", "--out", "outbox")
        #expect(export.status == 65)
        #expect(
            export.stderr.contains(
                "vault: document \(id) (a.txt) was removed (history record 3) and its object is back; nothing was sent")
        )
        #expect(!FileManager.default.fileExists(atPath: s.path("outbox/batch-0001.json")))
        let upload = s.run("upload", "--url", "http://127.0.0.1:9/in", "--retries", "0", "--no-credentials")
        #expect(upload.status == 65)
        #expect(upload.stderr.contains("was removed (history record 3) and its object is back"))
        // The next change does not take it in: it stays a finding until removed again.
        s.write("b.txt", .random(10, seed: 72))
        #expect(s.run("add", "b.txt").status == 0)
        #expect(Self.audit(s).codes.contains("resurrected-object"))
        #expect(s.run("remove", id).status == 0)
        #expect(Self.audit(s).status == 0)
    }

    @Test func aVaultRolledBackToAnOlderCopyFailsTheExpectedHead() throws {
        let (s, _) = Self.vaultWithHistory()
        try FileManager.default.copyItem(atPath: s.path("vault"), toPath: s.path("older"))
        s.write("d.txt", .random(100, seed: 73))
        #expect(s.run("add", "d.txt").status == 0)
        let head = s.run("audit", "--head")
        #expect(head.status == 0)
        let h = head.out.trimmingCharacters(in: .newlines)
        #expect(h.range(of: #"^6-[0-9a-f]{32}$"#, options: .regularExpression) != nil)
        #expect(Self.audit(s, ["--expect-head", h]).status == 0)
        // The whole folder replaced by the older copy: clean on its own, caught against the head.
        try FileManager.default.removeItem(atPath: s.path("vault"))
        try FileManager.default.moveItem(atPath: s.path("older"), toPath: s.path("vault"))
        #expect(Self.audit(s).status == 0)
        let (status, codes, _) = Self.audit(s, ["--expect-head", h])
        #expect(status == 65)
        #expect(codes == ["rolled-back"])
        // A head of another log with the same count is caught too.
        let other = "5-" + String(repeating: "ab", count: 16)
        #expect(Self.audit(s, ["--expect-head", other]).codes == ["head-differs"])
        #expect(s.run("audit", "--expect-head", "nonsense").status == 64)
    }

    @Test(arguments: ["flip", "cut-inside", "cut-boundary", "reorder", "drop-head"])
    func tamperingWithTheLogIsAChainFinding(mode: String) throws {
        let (s, _) = Self.vaultWithHistory()
        let path = s.path("vault/log.vlt")
        var log = Fixtures.read(path)
        let r = Self.recordRanges(log)
        #expect(r.count == 5)
        let expected: [String]
        switch mode {
        case "flip":
            log[r[2].lowerBound + 50] ^= 0x01
            expected = ["log-record-damaged"]
        case "cut-inside":
            log = Array(log[..<(r[3].upperBound - 10)])
            expected = ["log-torn", "log-truncated"]
        case "cut-boundary":
            log = Array(log[..<r[3].upperBound])
            expected = ["log-truncated"]
        case "reorder":
            log = Array(log[..<r[1].lowerBound]) + log[r[2]] + log[r[1]] + log[r[2].upperBound...]
            expected = ["log-record-moved"]
        default:
            try FileManager.default.removeItem(atPath: s.path("vault/log.head"))
            expected = ["log-head-missing"]
        }
        Fixtures.write(path, log)
        let (status, codes, _) = Self.audit(s)
        #expect(status == 65)
        for code in expected { #expect(codes.contains(code), "\(mode): \(codes)") }
        #expect(s.run("log").status == 65)
        // The next change does not hide it: the problem is sealed into its record.
        s.write("e.txt", .random(10, seed: 74))
        #expect(s.run("add", "e.txt").status == 0)
        #expect(Self.audit(s).status == 65, "\(mode)")
    }

    @Test func aTornAppendIsCutByTheNextWriterAndTheLogStaysReadable() throws {
        let (s, _) = Self.vaultWithHistory()
        let path = s.path("vault/log.vlt")
        // What a crash in the middle of an append leaves: part of a frame past the head.
        Fixtures.write(path, Fixtures.read(path) + [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 1, 2, 3])
        #expect(Self.audit(s).status == 0)
        #expect(s.run("log").status == 0)
        s.write("e.txt", .random(10, seed: 75))
        #expect(s.run("add", "e.txt").status == 0)
        let (status, codes, json) = Self.audit(s)
        #expect(status == 0, "\(codes)")
        #expect(json["records"] as? Int == 6)
    }

    @Test func documentsOfAKilledAddAreAdoptedByTheNextChange() throws {
        let s = Sandbox()
        s.initVault()
        // 40 MiB in all, each committed (and synced) on its own: the add runs long enough to be
        // seen midway, on a loaded machine too.
        for i in 0..<40 { try s.writeLarge("f\(i).bin", mebibytes: 1, seed: UInt64(800 + i)) }
        let pid = s.spawn(["add"] + (0..<40).map { "f\($0).bin" })
        // Kill it once some documents are committed (before it can record them).
        poll(every: 1000) { s.objects.count >= 3 || !Peer.isRunning(pid) }
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let committed = s.objects.filter { $0.hasSuffix(".vlt") }
        try #require(committed.count >= 1 && committed.count < 40, "the add finished before the kill")
        let before = Self.audit(s)
        #expect(before.status == 65)
        #expect(before.codes.filter { $0 == "unlogged-object" }.count == committed.count)
        s.write("g.bin", .random(10, seed: 900))
        #expect(s.run("add", "g.bin").status == 0)
        let after = Self.audit(s)
        #expect(after.status == 0, "\(after.codes)")
        let log = s.run("log", "--json")
        let records =
            (try JSONSerialization.jsonObject(with: Data(log.stdout)) as? [String: Any])?["records"] as? [[String: Any]]
            ?? []
        #expect(records.map { $0["op"] as? String } == ["init", "adopt", "add"])
        #expect((records[1]["documents"] as? [Any])?.count == committed.count)
    }

    @Test func aRemovalKilledMidwayIsFinishedByTheNextChange() throws {
        let s = Sandbox()
        s.initVault()
        for i in 0..<300 { s.write("r\(i).bin", .random(100, seed: UInt64(3000 + i))) }
        let added = s.run(["add"] + (0..<300).map { "r\($0).bin" })
        try #require(added.status == 0, "\(added.stderr)")
        let ids = added.out.split(separator: "\n").map(String.init)
        // Killed once it has named the documents in remove.pending (before, during or after the
        // unlinks, the index update or the record: all of them must be finished the same way).
        let pending = s.path("vault/remove.pending")
        let pid = s.spawn(["remove"] + ids)
        while !FileManager.default.fileExists(atPath: pending) && Peer.isRunning(pid) { usleep(20) }
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        try #require(FileManager.default.fileExists(atPath: pending), "the removal finished before the kill")
        #expect(Self.audit(s).status == 0, "an interrupted removal is not a finding")
        s.write("after.bin", .random(10, seed: 3999))
        #expect(s.run("add", "after.bin").status == 0)
        #expect(s.objects.count == 1, "the next change finished the removal")
        #expect(!FileManager.default.fileExists(atPath: s.path("vault/remove.pending")))
        let (status, codes, json) = Self.audit(s, ["--deep"])
        #expect(status == 0, "\(codes)")
        #expect(json["documents"] as? Int == 1)
        let log = s.run("log", "--json")
        let records =
            (try JSONSerialization.jsonObject(with: Data(log.stdout)) as? [String: Any])?["records"] as? [[String: Any]]
            ?? []
        #expect(records.map { $0["op"] as? String } == ["init", "add", "remove", "add"])
        #expect((records[2]["documents"] as? [Any])?.count == 300)
        #expect(records[2]["detail"] as? String == "finished after the removing command was interrupted")
    }

    // MARK: passwd

    @Test func passwdChangesThePasswordAndTheLevelWithoutTouchingPayloads() throws {
        let (s, ids) = Self.vaultWithHistory()
        let object = s.path("vault/objects/\(ids["a.txt"]!).vlt")
        let before = Fixtures.read(object)
        let r = s.run(["passwd", "--kdf", "moderate"], env: ["VAULT_NEW_PASSWORD": "new password"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("vault: password changed (Argon2id moderate); 2 envelope headers re-sealed"))
        let after = Fixtures.read(object)
        #expect(after.count == before.count)
        let headerSize = 166 + 272
        #expect(after[headerSize...] == before[headerSize...], "the payload is not rewritten")
        #expect(after[..<headerSize] != before[..<headerSize])
        #expect(s.run("verify").status == 77)
        #expect(s.run(["verify"], env: ["VAULT_PASSWORD": "new password"]).status == 0)
        let get = s.run(["get", "a.txt", "-o", "-"], env: ["VAULT_PASSWORD": "new password"])
        #expect(get.stdout == Fixtures.read(s.path("a.txt")))
        let config = try String(contentsOfFile: s.path("vault/vault.json"), encoding: .utf8)
        #expect(config.contains("\"memLimitKiB\" : 262144"))
        let log = s.run(["log"], env: ["VAULT_PASSWORD": "new password"])
        #expect(log.out.contains("passwd      ok") && log.out.contains("argon2id moderate"), "\(log.out)")
        #expect(Self.audit(s, [], vault: nil).status == 77)
        #expect(s.run(["audit", "--deep"], env: ["VAULT_PASSWORD": "new password"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: s.path("vault/passwd.journal")))
    }

    @Test func passwdRefusesBadInputsAndChangesNothing() {
        let (s, _) = Self.vaultWithHistory()
        let config = Fixtures.read(s.path("vault/vault.json"))
        let wrong = s.run(["passwd"], env: ["VAULT_PASSWORD": "wrong", "VAULT_NEW_PASSWORD": "x"])
        #expect(wrong.status == 77 && wrong.stderr.hasPrefix("vault: wrong password"))
        let none = s.run(["passwd"])
        #expect(none.status == 64)
        #expect(
            none.stderr
                == """
                    vault: no new password given and no terminal to ask on\nvault: hint: set VAULT_NEW_PASSWORD, \
                    VAULT_NEW_PASSWORD_FILE or VAULT_NEW_PASSWORD_COMMAND, or pass --new-password-file FILE\n
                    """
        )
        s.write("empty.txt", [])
        let empty = s.run(["passwd", "--new-password-file", "empty.txt"])
        #expect(empty.status == 64 && empty.stderr.hasPrefix("vault: the new password is empty"))
        let missing = s.run(["passwd", "--new-password-file", "nope.txt"])
        #expect(missing.status == 3 && missing.stderr.hasPrefix("vault: password file: "))
        #expect(Fixtures.read(s.path("vault/vault.json")) == config)
    }

    /// Killed at every named moment of a change (a pause point in the debug build): before the
    /// journal, after it, after the first, a middle and the last header, at the commit, after the
    /// journal went. 40 documents in `make test`, 100 in `make long`. Each time exactly one of the
    /// two passwords opens the vault, every document is there, and the deep audit is clean.
    @Test func passwdKilledAtEveryMomentLeavesExactlyOnePasswordWorking() throws {
        let s = Sandbox()
        s.initVault()
        let documents = TestSize.pick(40, long: 100)
        for i in 0..<documents { s.write("d\(i).bin", .random(1000 + i * 37, seed: UInt64(1000 + i))) }
        #expect(s.run(["add"] + (0..<documents).map { "d\($0).bin" }).status == 0)
        // Where the journal is left (finished or undone by the next command) and which password
        // opens the vault after the kill.
        let moments: [(point: String, journal: Bool, committed: Bool)] = [
            ("passwd.resealed", false, false), ("passwd.journal-written", true, false),
            ("passwd.header#1", true, false), ("passwd.header#\(documents / 2)", true, false),
            ("passwd.header#\(documents)", true, false), ("passwd.committed", true, true),
            ("passwd.journal-removed", false, true)
        ]
        var current = "correct horse battery"
        for (n, moment) in moments.enumerated() {
            let new = "p-\(n)"
            let (pid, paused) = s.spawn(
                ["passwd"], env: ["VAULT_PASSWORD": current, "VAULT_NEW_PASSWORD": new], pausingAt: moment.point)
            #expect(paused, "passwd reached \(moment.point)")
            kill(pid, SIGKILL)
            _ = s.wait(pid)
            #expect(
                FileManager.default.fileExists(atPath: s.path("vault/passwd.journal")) == moment.journal,
                "\(moment.point): the journal is \(moment.journal ? "left" : "gone")")
            let old = s.run(["verify"], env: ["VAULT_PASSWORD": current])
            let fresh = s.run(["verify"], env: ["VAULT_PASSWORD": new])
            #expect(
                (old.status, fresh.status) == (moment.committed ? (77, 0) : (0, 77)),
                "\(moment.point): old \(old.status) \(old.stderr), new \(fresh.status) \(fresh.stderr)")
            if fresh.status == 0 { current = new }
            #expect(s.objects.count == documents)
            let audit = s.run(["audit", "--deep"], env: ["VAULT_PASSWORD": current])
            #expect(audit.status == 0, "\(moment.point): \(audit.out)")
        }
    }

    // MARK: JSON Schemas

    @Test func everyJSONOutputMatchesItsSchema() throws {
        let (s, _) = Self.vaultWithHistory()
        // An upload that fails after reaching the server leaves a journal for `uploads`.
        let r = Receiver(in: s, token: nil, faults: #"[{"action": "status", "status": 503}]"#)
        #expect(s.run("upload", "--url", r.url, "--retries", "0", "--no-credentials").status == 75)
        #expect(s.run("remote", "add", "office", "s3://backoffice/station one").status == 0)
        #expect(s.run("remote", "add", "archive", "s3://archive").status == 0)
        #expect(s.run("destination", "add", "office", "https://backoffice.example/batches").status == 0)
        #expect(s.run("destination", "add", "inbox", "s3://inbox/station", "--optional").status == 0)
        #expect(s.run("destination", "add", "lan", "http://127.0.0.1:9/in", "--no-credentials").status == 0)
        let outputs: [(String, [String])] = [
            ("remotes", ["remote", "--json"]), ("destinations", ["destination", "--json"]),
            ("status", ["status", "--json"]),
            ("log", ["log", "--json"]), ("audit", ["audit", "--json"]), ("audit", ["audit", "--json", "--deep"]),
            ("verify", ["verify", "--json"]), ("list", ["list", "--json"]), ("uploads", ["uploads", "--json"])
        ]
        for (schema, args) in outputs {
            let r = s.run(args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            Fixtures.write(s.path("out.json"), r.stdout)
            let v = Fixtures.validate(s.path("out.json"), schema: schema)
            #expect(v.status == 0, "\(args) against \(schema).schema.json: \(v.output)")
        }
        // And findings: a damaged vault's audit and log.
        try FileManager.default.removeItem(atPath: s.path("vault/log.head"))
        for (schema, args) in [("audit", ["audit", "--json"]), ("log", ["log", "--json"])] {
            let r = s.run(args)
            #expect(r.status == 65)
            Fixtures.write(s.path("out.json"), r.stdout)
            let v = Fixtures.validate(s.path("out.json"), schema: schema)
            #expect(v.status == 0, "\(args): \(v.output)")
        }
    }

    /// Validates a JSON file against `docs/schemas/<schema>.schema.json` with the `jsonschema`
    /// package (PyPI; installed by `make test` into .build-peers/).
}
