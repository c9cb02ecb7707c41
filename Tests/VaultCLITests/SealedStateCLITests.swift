import Crypto
import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The attacks a hostile review reproduced on the state around the envelopes (issue 21), each
/// on the built binary: an attacker who can write to the vault folder, with no password or only
/// an old one.
@Suite(.blocking) struct SealedStateCLITests {
    static func bytes(_ path: String) -> [UInt8] {
        Array((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data())
    }

    /// The documents a journal names (`vault uploads show`).
    static func documents(ofJob job: String, _ s: Sandbox) -> [String] {
        let r = s.run("uploads", "show", job)
        let j = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any]
        return ((j?["batches"] as? [[String: Any]]) ?? []).flatMap { ($0["documents"] as? [String]) ?? [] }
    }

    // MARK: Upload journals

    @Test func journalsThatWereEditedSwappedCutOrForeignAreRefusedAndNothingIsSent() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 2)
        let r = Receiver(
            in: s, token: nil, faults: #"[{"action": "status", "status": 503}, {"action": "status", "status": 503}]"#)
        #expect(s.run("upload", "--url", r.url, ids[0], "--retries", "0", "--no-credentials").status == 75)
        #expect(s.run("upload", "--url", r.url, ids[1], "--retries", "0", "--no-credentials").status == 75)
        let jobs = s.journalJobs
        try #require(jobs.count == 2)
        let job0 = try #require(jobs.first { Self.documents(ofJob: $0, s) == [ids[0]] })
        let job1 = try #require(jobs.first { $0 != job0 })
        let path0 = s.path("vault/uploads/\(job0).journal"), path1 = s.path("vault/uploads/\(job1).journal")
        let original = Self.bytes(path0)
        #expect(original.starts(with: Array("VAULTSTA".utf8)))
        let requests = r.log.count

        // A journal of another vault (same password, another vault id).
        let other = Sandbox()
        other.initVault()
        let (otherIDs, _) = Fixtures.addDocuments(other, count: 1)
        let r2 = Receiver(in: other, token: nil, faults: #"[{"action": "status", "status": 503}]"#)
        #expect(other.run("upload", "--url", r2.url, otherIDs[0], "--retries", "0", "--no-credentials").status == 75)
        let foreign = Self.bytes(other.path("vault/uploads/\(other.journalJobs[0]).journal"))

        var flipped = original
        flipped[flipped.count - 20] ^= 0x01
        let attacks: [(String, [UInt8], String)] = [
            ("edited", flipped, "fails authentication"),
            ("swapped", Self.bytes(path1), "fails authentication"),
            ("cut", Array(original.prefix(original.count / 2)), "fails authentication"),
            ("foreign", foreign, "fails authentication"),
            ("emptied", [], "is not a sealed upload journal")
        ]
        for (what, bytes, message) in attacks {
            _ = FileManager.default.createFile(atPath: path0, contents: Data(bytes))
            let up = s.run("upload", "--url", r.url, ids[0], "--no-credentials")
            #expect(up.status == 65, "\(what): \(up.stderr)")
            #expect(up.stderr.contains(message) && up.stderr.contains("nothing was sent"), "\(what): \(up.stderr)")
            #expect(up.stderr.contains("vault: hint: 'vault uploads prune' removes it"), "\(what): \(up.stderr)")
            #expect(r.log.count == requests, "\(what): nothing reached the server")
        }
        // `vault uploads` names it damaged; prune removes it (and keeps the healthy interrupted one).
        let listed = s.run("uploads", "--json")
        #expect(listed.status == 0, "\(listed.stderr)")
        let entries =
            (try JSONSerialization.jsonObject(with: Data(listed.stdout)) as! [String: Any])["journals"]
            as! [[String: Any]]
        #expect(entries.first { $0["job"] as? String == job0 }?["state"] as? String == "damaged")
        #expect(entries.first { $0["job"] as? String == job1 }?["state"] as? String == "interrupted")
        #expect(s.run("uploads").out.contains("\n\(job0.prefix(12))  damaged"))
        let pruned = s.run("uploads", "prune")
        #expect(pruned.status == 0 && pruned.stderr == "vault: removed 1 upload journal\n", "\(pruned.stderr)")
        #expect(s.journalJobs == [job1])
        // Then the upload starts afresh, and works.
        #expect(s.run("upload", "--url", r.url, ids[0], "--no-credentials").status == 0)
        #expect(r.accepted == [ids[0]])
    }

    @Test func anUnsealedJournalPointingAnotherOriginSendsNothingThere() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 1, size: { _ in 300_000 })
        let tus = try TusServer(in: s)
        let args = ["upload", "--url", tus.url, "--protocol", "tus", ids[0]]
        let env: [String: String?] = ["VAULT_UPLOAD_TOKEN": "secret-token"]
        #expect(s.run(args, env: env).status == 0)
        // What the review did: the journal, plain JSON as earlier versions wrote it, its batch
        // pending again and its upload URL on the attacker's server.
        let job = try #require(s.journalJobs.first)
        var journal = try #require(s.journal())
        var batches = journal["batches"] as! [[String: Any]]
        let attacker = try PythonPeer("hostile-s3.py", ["--mode", "log"], in: s)
        batches[0]["status"] = "pending"
        batches[0]["tusURL"] = "http://127.0.0.1:\(attacker.port)/files/stolen"
        batches[0]["tusOffset"] = 0
        journal["batches"] = batches
        try FileManager.default.removeItem(atPath: s.path("vault/uploads/\(job).journal"))
        _ = FileManager.default.createFile(
            atPath: s.path("vault/uploads/\(job).json"), contents: try JSONSerialization.data(withJSONObject: journal))
        let before = tus.log
        // The ledger alone sends nothing (the document was delivered); --all is the same job
        // again, which reads the journal: it is refused.
        let quiet = s.run(args, env: env)
        #expect(quiet.status == 0 && quiet.stderr.hasPrefix("vault: nothing new to send"), "\(quiet.stderr)")
        let r = s.run(args + ["--all"], env: env)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("is unsealed") && r.stderr.contains("nothing was sent"), "\(r.stderr)")
        #expect(attacker.entries.isEmpty, "no request, and so no token, went to the other origin")
        #expect(tus.log == before, "nothing was sent to the real server either")
        #expect(s.run("uploads").out.contains("\n\(job.prefix(12))  damaged"))
    }

    @Test func anEditedOrUnsealedRemoteListRedirectsNothing() throws {
        let s = Sandbox()
        s.initVault()
        let peer = try PythonPeer("hostile-s3.py", ["--mode", "log"], in: s)
        let env: [String: String?] = [
            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": "http://127.0.0.1:\(peer.port)"
        ]
        #expect(s.run(["remote", "add", "office", "s3://office/vault"], env: env).status == 0)
        let sealed = Self.bytes(s.path("vault/remotes.vlt"))
        #expect(
            sealed.starts(with: Array("VAULTSTA".utf8)) && !String(decoding: sealed, as: UTF8.self).contains("office"))
        #expect(s.run(["remote"], env: env).out == "office  s3://office/vault\n")
        // A plain list, as earlier versions wrote, naming the attacker's bucket.
        try FileManager.default.removeItem(atPath: s.path("vault/remotes.vlt"))
        s.write("vault/remotes.json", Array(#"{"remotes":[{"name":"office","url":"s3://attacker/loot"}]}"#.utf8))
        let plain = s.run(["push"], env: env)
        #expect(plain.status == 65 && plain.stderr.contains("is an unsealed remote list"), "\(plain.stderr)")
        try FileManager.default.removeItem(atPath: s.path("vault/remotes.json"))
        // An edited sealed list.
        var flipped = sealed
        flipped[flipped.count - 3] ^= 0x20
        _ = FileManager.default.createFile(atPath: s.path("vault/remotes.vlt"), contents: Data(flipped))
        let edited = s.run(["push"], env: env)
        #expect(edited.status == 65 && edited.stderr.contains("fails authentication"), "\(edited.stderr)")
        #expect(s.run(["--vault", "office", "list"], env: env).status == 65)
        #expect(peer.entries.isEmpty, "nothing was sent anywhere: \(peer.entries)")
    }

    // MARK: passwd rotates the key

    @Test func theOldVaultJsonAndPasswordLearnNothingAddedAfterAPasswordChange() throws {
        let s = Sandbox()
        s.initVault()
        s.write("before.txt", Array("before".utf8))
        #expect(s.run("add", "before.txt").status == 0)
        let kept = s.path("kept")
        try FileManager.default.copyItem(atPath: s.path("vault"), toPath: kept)  // the old vault.json, and all
        let change = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "a new password"])
        #expect(change.status == 0, "\(change.stderr)")
        let newPassword: [String: String?] = ["VAULT_PASSWORD": "a new password"]
        s.write("after.txt", Array("the merger with ACME".utf8))
        let added = s.run(["add", "after.txt", "--name", "acme-merger.txt"], env: newPassword)
        #expect(added.status == 0)
        let secretID = added.out.trimmingCharacters(in: .newlines)
        #expect(s.run(["audit"], env: newPassword).status == 0)
        #expect(s.run(["log"], env: newPassword).out.contains("key epoch 0 → 1"))
        // The attacker puts the current log, head and index beside the old vault.json.
        for name in ["log.vlt", "log.head", "log.anchor", "index.db"] {
            try? FileManager.default.removeItem(atPath: kept + "/" + name)
            try FileManager.default.copyItem(atPath: s.path("vault/" + name), toPath: kept + "/" + name)
        }
        let log = s.run(["--vault", kept, "log", "--json"])
        #expect(
            !log.out.contains("acme-merger") && !log.out.contains(secretID),
            "no name or id of a later document: \(log.out)")
        let digest = s.run(["list", "--json"], env: newPassword).out
        let sha =
            ((try JSONSerialization.jsonObject(with: Data(digest.utf8)) as! [[String: Any]]).first {
                $0["id"] as? String == secretID
            })?["sha256"] as? String
        #expect(sha != nil && !log.out.contains(sha!), "nor its SHA-256")
        #expect(!log.out.contains("\"size\":20"))
        let list = s.run(["--vault", kept, "list", "--json"])
        #expect(!list.out.contains("acme-merger"))
        // The new password reads every record, old and new.
        let full = s.run(["log", "--json"], env: newPassword)
        #expect(full.status == 0 && full.out.contains("acme-merger") && full.out.contains("before.txt"))
    }

    @Test func envelopesOfAnEarlierEpochAreRestoredWithTheNewPasswordOnlyOnPurpose() throws {
        let s = Sandbox()
        s.initVault()
        s.write("contract.txt", Array("the signed contract".utf8))
        let id = s.run("add", "contract.txt", "--tag", "legal").out.trimmingCharacters(in: .newlines)
        try FileManager.default.copyItem(atPath: s.path("vault/objects/\(id).vlt"), toPath: s.path("backup.vlt"))
        let env: [String: String?] = ["VAULT_PASSWORD": "rotated"]
        #expect(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "rotated"]).status == 0)
        #expect(s.run(["remove", id], env: env).status == 0)
        // Put back into objects/ as it was, it is not taken as one of the vault's own documents.
        try FileManager.default.copyItem(atPath: s.path("backup.vlt"), toPath: s.path("vault/objects/\(id).vlt"))
        let audit = s.run(["audit"], env: env)
        #expect(audit.status == 65 && audit.out.contains("sealed under the password of key epoch 0"), "\(audit.out)")
        try FileManager.default.removeItem(atPath: s.path("vault/objects/\(id).vlt"))
        // Restored on purpose, with the new password: a new document of the current epoch.
        let r = s.run(["restore", "backup.vlt", "--json"], env: env)
        #expect(r.status == 0, "\(r.stderr)")
        let restored =
            ((try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any])?["restored"]
            as? [[String: Any]]
        #expect(restored?.first?["name"] as? String == "contract.txt" && restored?.first?["id"] as? String != id)
        #expect(s.run(["get", "contract.txt"], env: env).stdout == Array("the signed contract".utf8))
        #expect(s.run(["list", "--tag", "legal"], env: env).out.contains("contract.txt"))
        #expect(s.run(["audit"], env: env).status == 0)
        // Twice is a duplicate; another vault's envelope is not taken.
        #expect(s.run(["restore", "backup.vlt"], env: env).status == 73)
        let other = Sandbox()
        other.initVault()
        other.write("x.txt", Array("x".utf8))
        let otherID = other.run("add", "x.txt").out.trimmingCharacters(in: .newlines)
        let foreign = s.run(["restore", other.path("vault/objects/\(otherID).vlt")], env: env)
        #expect(
            foreign.status == 65
                && foreign.stderr.contains("was not restored: its password block does not match this vault"),
            "\(foreign.stderr)")
    }

    @Test func aPasswdKilledBetweenItsRecordAndItsHeadAuditsClean() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 2)
        let head = Self.bytes(s.path("vault/log.head")), anchor = Self.bytes(s.path("vault/log.anchor"))
        #expect(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "rotated"]).status == 0)
        // What a kill after the passwd record's write and before its head leaves: the head and
        // anchor of the epoch before, naming the record before.
        _ = FileManager.default.createFile(atPath: s.path("vault/log.head"), contents: Data(head))
        _ = FileManager.default.createFile(atPath: s.path("vault/log.anchor"), contents: Data(anchor))
        let audit = s.run(["audit"], env: ["VAULT_PASSWORD": "rotated"])
        #expect(audit.status == 0, "\(audit.out)")
    }

    @Test func stateSealedUnderTheOldKeyMakesNoStationRemoveADocument() throws {
        let s = Sandbox()
        s.initVault()
        let kept = s.path("kept")
        try FileManager.default.copyItem(atPath: s.path("vault"), toPath: kept)
        #expect(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "new one"]).status == 0)
        let env: [String: String?] = ["VAULT_PASSWORD": "new one"]
        s.write("victim.txt", Array("keep me".utf8))
        let id = s.run(["add", "victim.txt"], env: env).out.trimmingCharacters(in: .newlines)
        let holder = try OldKeyHolder(folder: kept, password: "correct horse battery")
        for pending in [
            try holder.pendingRemoval([(id, "victim.txt")]), try holder.legacyPendingRemoval([(id, "victim.txt")])
        ] {
            _ = FileManager.default.createFile(atPath: s.path("vault/remove.pending"), contents: Data(pending))
            s.write("other.txt", [UInt8].random(100, seed: UInt64(pending.count)))
            let r = s.run(["add", "other.txt"], env: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(s.objects.contains("\(id).vlt"), "the victim's document is still there")
            let audit = s.run(["audit"], env: env)
            #expect(audit.status == 65 && audit.out.contains("pending-removal-refused"), "\(audit.out)")
            #expect(!s.run(["log", "--json"], env: env).out.contains("\"op\":\"remove\""))
        }
    }

    @Test func aPlantedPasswordJournalCannotUndoARotation() throws {
        let s = Sandbox()
        s.initVault()
        let old = Self.bytes(s.path("vault/vault.json"))
        #expect(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "rotated"]).status == 0)
        let current = Self.bytes(s.path("vault/vault.json"))
        // passwd.journal needs no password to be acted on: one naming the old vault.json as
        // "old" and anything else as "new" used to put the old vault.json back.
        func u32(_ n: Int) -> [UInt8] {
            [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
        let other = Array("{}".utf8)
        var journal = Array("VAULTPWJ".utf8) + u32(old.count) + old + u32(other.count) + other + u32(0)
        journal += Array(SHA256.hash(data: journal))
        _ = FileManager.default.createFile(atPath: s.path("vault/passwd.journal"), contents: Data(journal))
        let r = s.run(["list"], env: ["VAULT_PASSWORD": "rotated"])
        #expect(
            r.status == 65 && r.stderr.contains("names neither the vault.json there nor the one it would write"),
            "\(r.stderr)")
        #expect(Self.bytes(s.path("vault/vault.json")) == current, "vault.json was not put back")
        try FileManager.default.removeItem(atPath: s.path("vault/passwd.journal"))
        #expect(s.run(["list"]).status == 77, "the old password still does not open it")
        #expect(s.run(["audit"], env: ["VAULT_PASSWORD": "rotated"]).status == 0)
    }

    // MARK: The history cannot be erased or cut quietly

    @Test func aDeletedHistoryIsReportedOnEveryAuditUntilAPasswordHolderAcceptsIt() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        #expect(s.run("audit").status == 0)
        // Delete the history and a document.
        for name in ["log.vlt", "log.head", "log.anchor", "objects/\(ids[1]).vlt"] {
            try FileManager.default.removeItem(atPath: s.path("vault/" + name))
        }
        let first = s.run("audit")
        #expect(first.status == 65 && first.out.contains("log-missing"), "\(first.out)")
        // The next ordinary change does not bless what is there: no 'begin'.
        s.write("new.txt", Array("new".utf8))
        #expect(s.run("add", "new.txt").status == 0)
        for _ in 0..<2 {
            let again = s.run("audit")
            #expect(again.status == 65 && again.out.contains("log-missing"), "\(again.out)")
        }
        #expect(!s.run("log", "--json").out.contains("\"op\":\"begin\""))
        // Accepting it is a sealed decision, recorded; then audits are clean.
        let accept = s.run("audit", "--accept-loss")
        #expect(accept.status == 0 && accept.out.hasPrefix("accepted "), "\(accept.out)")
        #expect(accept.out.contains("log-missing"))
        #expect(s.run("audit").status == 0)
        #expect(s.run("log", "--json").out.contains("\"op\":\"accept\""))
    }

    @Test func cuttingTheLogAndPuttingBackAnOlderHeadIsCaughtWithoutAKeptHead() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let oldHead = Self.bytes(s.path("vault/log.head"))
        let oldEnd = Self.bytes(s.path("vault/log.vlt")).count
        let (ids, _) = Fixtures.addDocuments(s, count: 2, size: { 5000 + $0 })
        #expect(s.run("remove", ids[0]).status == 0)
        #expect(s.run("audit").status == 0)
        // Cut the tail (the removal among it) and put the older head back.
        let log = Self.bytes(s.path("vault/log.vlt"))
        _ = FileManager.default.createFile(atPath: s.path("vault/log.vlt"), contents: Data(log.prefix(oldEnd)))
        _ = FileManager.default.createFile(atPath: s.path("vault/log.head"), contents: Data(oldHead))
        let audit = s.run("audit")
        #expect(
            audit.status == 65 && audit.out.contains("log-truncated") && audit.out.contains("log.anchor says"),
            "\(audit.out)")
        // And the next change does not launder it.
        s.write("x.txt", Array("x".utf8))
        #expect(s.run("add", "x.txt").status == 0)
        #expect(s.run("audit").out.contains("log-truncated"))
    }

    // MARK: The low findings

    @Test func aFileWhoseNameIsNotUTF8IsReportedAndTheOthersAreAdded() throws {
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("inbox"), withIntermediateDirectories: true)
        s.write("inbox/a.txt", Array("a".utf8))
        s.write("inbox/c.txt", Array("c".utf8))
        // A name with the byte 0xFF, made below Foundation (which would not pass it through).
        let path = Array(s.path("inbox/b").utf8) + [0xFF] + Array(".txt".utf8) + [0]
        let fd = path.withUnsafeBufferPointer {
            open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o600)
        }
        try #require(fd >= 0)
        close(fd)
        let r = s.run("add", "-r", "inbox")
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.out.split(separator: "\n").count == 2, "a.txt and c.txt were added")
        #expect(r.stderr.contains("inbox/b\\xFF.txt was not added: its name is not valid UTF-8"), "\(r.stderr)")
        #expect(r.stderr.contains("vault: 1 of 3 files was not added"))
        let names = s.run("list", "--json").out
        #expect(names.contains("\"a.txt\"") && names.contains("\"c.txt\""))
    }

    @Test func getToATerminalWritesOnlyPrintableText() throws {
        let s = Sandbox()
        s.initVault()
        s.write("plain.txt", Array("hello\tworld\r\nsecond line ü\n".utf8))
        s.write("hostile.txt", Array("title\u{1B}]0;pwned\u{07}\u{1B}[2J".utf8))
        s.write("c1.txt", Array("a\u{9B}2Jb".utf8))
        // Typed text on purpose, as a document from another station can be.
        for name in ["plain.txt", "hostile.txt", "c1.txt"] {
            #expect(s.run("add", name, "--type", "text/plain").status == 0)
        }
        // script(1) gives the command a terminal as standard output.
        func onTerminal(_ name: String) -> CLIResult {
            s.shell("script -qefc '\(Sandbox.binary) get \(name) 2>\(s.path("err.txt"))' /dev/null")
        }
        let plain = onTerminal("plain.txt")
        #expect(plain.status == 0 && plain.out.contains("second line ü"), "\(plain.out)")
        for name in ["hostile.txt", "c1.txt"] {
            let r = onTerminal(name)
            let err = (try? String(contentsOfFile: s.path("err.txt"), encoding: .utf8)) ?? ""
            #expect(r.status == 64, "\(name): \(r.status) \(err)")
            #expect(err.contains("refusing to write \(name) to a terminal: it holds a control character"), "\(err)")
            #expect(!r.out.contains("\u{1B}"), "no escape sequence reached the terminal")
        }
        // Redirected, the bytes are the document's, exactly.
        #expect(s.run("get", "hostile.txt").stdout == Array("title\u{1B}]0;pwned\u{07}\u{1B}[2J".utf8))
    }
}
