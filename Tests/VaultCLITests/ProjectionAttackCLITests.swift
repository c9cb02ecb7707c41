import Foundation
import Testing
import VaultS3
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The hostile review of the index, the ledger and the destination list (issue 39), each attack
/// on the built binary by someone who can write to the vault folder, with no password or only
/// one from before a `passwd`: the history is the one truth, and every other file is a
/// projection that vault checks against it and rebuilds when it does not verify.
@Suite(.blocking) struct ProjectionAttackCLITests {
    static let office: [String: String?] = ["VAULT_UPLOAD_TOKEN": "test-token"]

    /// Adds one small document named `name`; its id.
    static func add(
        _ s: Sandbox, _ name: String, seed: UInt64, tags: [String] = [], env: [String: String?] = [:]
    ) throws -> String {
        let r = s.run(
            ["add", "-", "--name", name] + tags.flatMap { ["--tag", $0] }, env: env, stdin: .random(2000, seed: seed))
        try #require(r.status == 0, "\(r.stderr)")
        return r.out.trimmingCharacters(in: .newlines)
    }

    /// The ids `list --json` shows (with repeats, if a row is listed twice).
    static func listed(
        _ s: Sandbox, _ args: [String] = [], env: [String: String?] = [:]
    ) -> (ids: [String], result: CLIResult) {
        let r = s.run(["list", "--json"] + args, env: env)
        let rows = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [[String: Any]] ?? []
        return (rows.compactMap { $0["id"] as? String }, r)
    }

    /// Runs an SQL script on the vault's index with the sqlite3 shell, as the attacker would.
    static func sql(_ s: Sandbox, _ script: String) -> CLIResult {
        s.write("attack.sql", Array(script.utf8))
        return s.shell("sqlite3 vault/index.db < attack.sql")
    }

    static func blob(_ hex: String) -> String { "X'\(hex)'" }

    // MARK: The ledger and the history

    /// Critical: a record sealed under the key a `passwd` retired, appended to the log, slipped
    /// into the ledger when an older index.db was put back (the catch-up opened records under
    /// any known epoch), and `remove --delivered-to` then deleted a document the destination
    /// never received.
    @Test func anOldPasswordCannotGetAnUndeliveredDocumentDeleted() throws {
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "before.txt", seed: 3901)
        // The attacker keeps the vault folder as it is now, and knows this password.
        #expect(s.shell("cp -a vault kept").status == 0)
        let changed = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "the new password"])
        try #require(changed.status == 0, "\(changed.stderr)")
        s.env["VAULT_PASSWORD"] = "the new password"
        #expect(s.run("destination", "add", "office", "http://127.0.0.1:9/office").status == 0)
        let undelivered = try Self.add(s, "after.txt", seed: 3902)
        // The attacker copies index.db, then appends an upload record naming the new document,
        // sealed under the retired key.
        #expect(s.shell("mkdir saved && cp vault/index.db* saved/").status == 0)
        let holder = try OldKeyHolder(folder: s.path("kept"), password: "correct horse battery")
        try holder.appendForgedRecord(
            .upload, documents: [(undelivered, "after.txt")], destinations: ["http://127.0.0.1:9/office"],
            toLogIn: s.path("vault"))
        // The owner goes on: an ordinary add.
        let owner = s.run(["add", "-", "--name", "later.txt"], stdin: .random(2000, seed: 3903))
        #expect(owner.status == 0, "\(owner.stderr)")
        #expect(
            owner.stderr.contains("warning") && owner.stderr.contains("history"),
            "the owner hears of it: \(owner.stderr)")
        // The attacker puts the old index.db back.
        #expect(s.shell("rm -f vault/index.db-wal vault/index.db-shm && cp saved/index.db* vault/").status == 0)

        let status = Fixtures.json(s.run("status", "--json"))
        let office = (status["destinations"] as? [[String: Any]])?.first { $0["name"] as? String == "office" }
        #expect(office?["delivered"] as? Int == 0 && office?["pending"] as? Int == 3, "\(status)")
        let undeliveredList = Self.listed(s, ["--undelivered", "--to", "office"])
        #expect(undeliveredList.ids.contains(undelivered), "\(undeliveredList.result.stderr)")
        let removed = s.run("remove", "--delivered-to", "office", "--json")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(Fixtures.json(removed)["removed"] as? [String] == [], "\(removed.out)")
        #expect(Self.listed(s).ids.contains(undelivered), "the document the office never got is still there")
        // The audit names the forgery.
        let audit = s.run("audit", "--json")
        #expect(audit.status == 65 && audit.out.contains("log-record-superseded"), "\(audit.out)")
    }

    /// An older copy of the destination list (before `archive` was required), or none at all,
    /// made `remove --delivered-to office` delete documents `archive` never got, and the audit
    /// was clean: the list was outside the history.
    @Test(arguments: ["older", "deleted"])
    func anOlderOrMissingDestinationListDropsNoRequiredDestination(attack: String) throws {
        let s = Sandbox()
        s.initVault()
        let receiver = Receiver(in: s)
        #expect(s.run("destination", "add", "office", receiver.url).status == 0)
        let older = s.path("vault/destinations.vlt")
        let snapshot =
            FileManager.default.fileExists(atPath: older) ? try Data(contentsOf: URL(fileURLWithPath: older)) : nil
        #expect(s.run("destination", "add", "archive", "http://127.0.0.1:9/archive").status == 0)
        let ids = [try Self.add(s, "a.txt", seed: 3911), try Self.add(s, "b.txt", seed: 3912)]
        let sent = s.run(["upload", "--to", "office"], env: Self.office)
        try #require(sent.status == 0, "\(sent.stderr)")
        if attack == "older", let snapshot {
            try snapshot.write(to: URL(fileURLWithPath: older))
        } else {
            try? FileManager.default.removeItem(atPath: older)
        }
        let removed = s.run("remove", "--delivered-to", "office", "--json")
        #expect(
            Fixtures.json(removed)["removed"] as? [String] == [],
            "archive never got them: \(removed.out) \(removed.stderr)")
        let everything = s.run("remove", "--delivered", "--json")
        #expect(
            Fixtures.json(everything)["removed"] as? [String] == [], "\(everything.out) \(everything.stderr)")
        #expect(Set(Self.listed(s).ids) == Set(ids))
        let list = Fixtures.json(s.run("destination", "list", "--json"))
        let names = (list["destinations"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(names == ["office", "archive"], "the destinations come from the history: \(list)")
    }

    // MARK: index.db edited behind vault's back

    /// A view in place of the `documents` table, or an object that is a FIFO, hung `list`,
    /// `verify` and `audit` forever. (Each run is bounded by `timeout`: a hang is a failure, not
    /// a stuck suite.)
    @Test func aViewInPlaceOfATableAndAFIFOObjectHangNothing() throws {
        let s = Sandbox()
        s.initVault()
        let a = try Self.add(s, "a.txt", seed: 3961), b = try Self.add(s, "b.txt", seed: 3962)
        let bounded = ["/usr/bin/timeout", "-s", "KILL", "60"]
        _ = Self.sql(
            s,
            "ALTER TABLE documents RENAME TO kept;\n"
                + "CREATE VIEW documents AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
                + "SELECT k.added, k.id, k.name, k.digest, k.logged, k.record FROM kept k, n;\n")
        let viewed = s.wait(s.spawn(["list", "--json"], wrapper: bounded))
        #expect(viewed.status == 0, "\(viewed.status) \(viewed.stderr)")
        #expect(
            Set(
                ((try? JSONSerialization.jsonObject(with: Data(viewed.stdout))) as? [[String: Any]] ?? []).compactMap {
                    $0["id"] as? String
                })
                == [a, b], "\(viewed.out)")
        // B's object replaced by a FIFO.
        try FileManager.default.removeItem(atPath: s.path("vault/objects/\(b).vlt"))
        #expect(mkfifo(s.path("vault/objects/\(b).vlt"), 0o600) == 0)
        for command in [["list"], ["verify"], ["audit"]] {
            let r = s.wait(s.spawn(command, wrapper: bounded))
            #expect(r.status != 137, "\(command) hung on a FIFO")
            #expect(r.status == 0 || r.status == 65, "\(command): \(r.status) \(r.stderr)")
        }
        let verify = s.wait(s.spawn(["verify"], wrapper: bounded))
        #expect(
            verify.status == 65 && verify.out.contains(b), "verify names the object that is not a file: \(verify.out)")
    }

    /// One flipped bit in a sealed row made `list`, `verify` and `status` fail with exit 65
    /// until index.db was deleted by hand.
    @Test func aDamagedRowIsRebuiltNotAFailure() throws {
        let s = Sandbox()
        s.initVault()
        let a = try Self.add(s, "a.txt", seed: 3981), b = try Self.add(s, "b.txt", seed: 3982)
        #expect(
            Self.sql(
                s,
                "UPDATE documents SET record = CAST(substr(record, 1, 40) || X'FF' || substr(record, 42) AS BLOB) "
                    + "WHERE id = \(Self.blob(b));\n"
            ).status == 0)
        let (ids, r) = Self.listed(s)
        #expect(r.status == 0 && ids.sorted() == [a, b].sorted(), "\(ids) \(r.stderr)")
        #expect(s.run("status").status == 0)
        #expect(
            Self.sql(
                s,
                "UPDATE documents SET record = CAST(substr(record, 1, 40) || X'FF' || substr(record, 42) AS BLOB) "
                    + "WHERE id = \(Self.blob(a));\n"
            ).status == 0)
        // verify says what it found (exit 65: someone changed the vault folder) and that it was
        // rebuilt; the next one finds nothing.
        let verify = s.run("verify")
        #expect(verify.status == 65 && verify.out.contains("index damaged"), "\(verify.out)\(verify.stderr)")
        #expect(
            verify.stderr.contains("rebuilt"),
            "verify says what it found and that it was rebuilt: \(verify.out)\(verify.stderr)")
        let again = s.run("verify")
        #expect(again.status == 0 && again.out.contains("index ok"), "\(again.out)\(again.stderr)")
    }

    // MARK: Destinations

    /// The ledger knew a destination by scheme, host, port and path: after an upload to
    /// `…/in?tenant=a`, `upload --url …/in?tenant=b --remove-delivered` sent nothing and deleted.
    @Test func aDeliveryToOneQueryDoesNotCountForAnother() throws {
        let s = Sandbox()
        s.initVault()
        let a = try Self.add(s, "a.txt", seed: 3991)
        let receiver = Receiver(in: s)
        let first = s.run(["upload", "--url", receiver.url + "?tenant=a"], env: Self.office)
        #expect(first.status == 0, "\(first.stderr)")
        let second = s.run(["upload", "--url", receiver.url + "?tenant=b", "--remove-delivered"], env: Self.office)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            receiver.log.filter { ($0["status"] as? Int) == 200 }.count == 2,
            "sent to tenant b too: \(receiver.statuses)")
        #expect(Self.listed(s).ids == [] && receiver.accepted == [a, a], "removed once tenant b confirmed it")
    }

    /// For S3 only `s3://BUCKET/PREFIX` counted: a delivery through a test endpoint counted for
    /// production too. The endpoint is part of the identity now.
    @Test func aDeliveryThroughOneS3EndpointDoesNotCountForAnother() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("identity")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "a.txt", seed: 3995)
        let path = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString], in: s)
        let direct = S3Fixtures.env(sw)
        let other = direct.merging(["AWS_ENDPOINT_URL": path.url]) { _, b in b }
        #expect(s.run(["upload", "--url", "s3://\(bucket)/in"], env: direct).status == 0)
        let again = s.run(["upload", "--url", "s3://\(bucket)/in"], env: other)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!again.stderr.contains("nothing new"), "another endpoint is another destination: \(again.stderr)")
        path.waitUntilIdle()
        #expect(
            path.entries.contains { $0["method"] as? String == "PUT" || $0["method"] as? String == "POST" },
            "it went through the other endpoint")
    }

    // MARK: passwd

    /// `passwd` re-sealed the remote list but not the destination list or the upload journals:
    /// afterwards every command that reads destinations failed as if they were forged, and
    /// `vault uploads` showed every journal as damaged.
    @Test func passwdLeavesDestinationsAndJournalsWorking() throws {
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "a.txt", seed: 4001)
        let busy = Receiver(in: s, faults: #"[{"action": "status", "status": 503}]"#)
        #expect(s.run("destination", "add", "office", busy.url).status == 0)
        // An upload that fails after reaching the server leaves a journal.
        #expect(s.run(["upload", "--to", "office", "--retries", "0"], env: Self.office).status != 0)
        #expect(s.journalJobs.count == 1)
        let changed = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "another password"])
        try #require(changed.status == 0, "\(changed.stderr)")
        s.env["VAULT_PASSWORD"] = "another password"
        for command in [["status"], ["destination", "list"], ["list", "--undelivered"], ["uploads"], ["audit"]] {
            let r = s.run(command)
            #expect(r.status == 0, "\(command): \(r.status) \(r.stderr)")
            #expect(!r.stderr.contains("old password") && !r.out.contains("damaged"), "\(command): \(r.out)\(r.stderr)")
        }
        let receiver = Receiver(in: s)
        #expect(s.run("destination", "add", "office2", receiver.url).status == 0)
        let up = s.run(["upload", "--to", "office2"], env: Self.office)
        #expect(up.status == 0 && receiver.accepted.count == 1, "\(up.stderr)")
    }

    /// `passwd` during a running upload recorded the upload's confirmed batch under the retired
    /// epoch: the ledger lost it and `audit` reported an old-password forgery forever. A
    /// password change now waits for no one: it refuses while another command uses the vault.
    @Test func passwdCannotInterleaveWithARunningUpload() throws {
        let s = Sandbox()
        s.initVault()
        for i in 0..<2 { _ = try Self.add(s, "d\(i).bin", seed: 4011 + UInt64(i)) }
        // The body is read slowly (about 3 s a batch), so passwd comes while the upload runs.
        let receiver = Receiver(in: s, faults: #"[{"action": "slow", "rate": 1500}, {"action": "slow", "rate": 1500}]"#)
        let pid = s.spawn(["upload", "--url", receiver.url, "--batch-size", "1"], env: Self.office)
        poll(every: 20_000) {
            FileManager.default.fileExists(atPath: s.path("vault/uploads")) || !Peer.isRunning(pid)
        }
        try #require(Peer.isRunning(pid), "the upload ended before passwd could be tried")
        let passwd = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "during the upload"])
        #expect(passwd.status == 75, "\(passwd.status) \(passwd.stderr)")
        #expect(passwd.stderr.contains("another vault command"), "\(passwd.stderr)")
        let upload = s.wait(pid)
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(s.run("passwd", env: ["VAULT_NEW_PASSWORD": "after the upload"]).status == 0)
        s.env["VAULT_PASSWORD"] = "after the upload"
        let audit = s.run("audit")
        #expect(audit.status == 0, "\(audit.out)")
        let status = Fixtures.json(s.run("status", "--json"))
        let entry = (status["destinations"] as? [[String: Any]])?.first
        #expect(entry?["delivered"] as? Int == 2, "\(status)")
    }

    // MARK: Files that lead elsewhere

    /// `add -r` takes regular files only: a FIFO in the folder does not hang it and a symbolic
    /// link is not followed (the user named the folder, not what the link points to).
    @Test func aRecursiveAddTakesNoFIFOAndFollowsNoLink() throws {
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("inbox"), withIntermediateDirectories: true)
        s.write("inbox/page.txt", Array("a page".utf8))
        s.write("secret.txt", Array("not for the vault".utf8))
        #expect(mkfifo(s.path("inbox/pipe"), 0o600) == 0)
        #expect(symlink(s.path("secret.txt"), s.path("inbox/link.txt")) == 0)
        let r = s.wait(s.spawn(["add", "-r", "inbox"], wrapper: ["/usr/bin/timeout", "-s", "KILL", "60"]))
        #expect(r.status == 2, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("pipe") && r.stderr.contains("link.txt"), "both are named: \(r.stderr)")
        let names =
            ((try? JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout))) as? [[String: Any]] ?? [])
            .compactMap { $0["name"] as? String }
        #expect(names == ["page.txt"], "\(names)")
    }

    // MARK: Found by the independent review of the fixes

    /// The session lock is a file the attacker can remove: a password change then ran beside an
    /// add, whose document was committed under the retired key (refused as an old password's
    /// ever after). The add checks the key epoch under the writer lock before it commits.
    @Test func aPasswordChangeBehindARemovedSessionLockLosesNoDocument() throws {
        let s = Sandbox()
        s.initVault()
        let a = try Self.add(s, "a.txt", seed: 4101)
        #expect(mkfifo(s.path("slow"), 0o600) == 0)
        let writer = open(s.path("slow"), O_RDWR)  // a writer exists: the add's open does not block
        try #require(writer >= 0)
        let pid = s.spawn(["add", "-", "--name", "slow.txt"], stdinPath: s.path("slow"))
        let holding = poll(every: 20_000) {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return fds.contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasSuffix(
                    "session.lock") == true
            }
                || !Peer.isRunning(pid)
        }
        try #require(holding && Peer.isRunning(pid), "the add never held the session lock")
        try FileManager.default.removeItem(atPath: s.path("vault/session.lock"))
        let changed = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "changed beside an add"])
        #expect(changed.status == 0, "\(changed.stderr)")
        _ = Array("written after the change".utf8).withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        close(writer)
        let added = s.wait(pid)
        #expect(
            added.status == 75 && added.stderr.contains("the password changed while this command ran"),
            "\(added.status) \(added.stderr)")
        s.env["VAULT_PASSWORD"] = "changed beside an add"
        let (ids, r) = Self.listed(s)
        #expect(r.status == 0 && ids == [a], "nothing under the retired key: \(ids) \(r.stderr)")
        #expect(s.run("audit").status == 0)
    }

    /// Clearing the `logged` column (not covered by the commitment) made the next writer append
    /// an `adopt` record for documents the history already named.
    @Test func aClearedLoggedColumnAddsNoFalseRecord() throws {
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "a.txt", seed: 4111)
        _ = try Self.add(s, "b.txt", seed: 4112)
        #expect(Self.sql(s, "UPDATE documents SET logged = 0;\n").status == 0)
        _ = try Self.add(s, "c.txt", seed: 4113)
        let log = Fixtures.json(s.run("log", "--json"))
        let ops = (log["records"] as? [[String: Any]] ?? []).compactMap { $0["op"] as? String }
        #expect(ops == ["init", "add", "add", "add"], "\(ops)")
    }

    /// A folder in index.db's (or its WAL's) place made every command fail with exit 64.
    @Test(arguments: ["index.db", "index.db-wal"])
    func aFolderInTheIndexsPlaceIsReplaced(name: String) throws {
        let s = Sandbox()
        s.initVault()
        let a = try Self.add(s, "a.txt", seed: 4121)
        #expect(
            s.shell("rm -f vault/index.db vault/index.db-wal vault/index.db-shm && mkdir -p vault/\(name)/inner").status
                == 0)
        let (ids, r) = Self.listed(s)
        #expect(r.status == 0 && ids == [a], "\(ids) \(r.status) \(r.stderr)")
        #expect(r.stderr.contains("not a regular file"), "\(r.stderr)")
        #expect(s.run("list").status == 0 && s.run("verify").status == 0)
    }

    /// log.vlt and its heads put back from an older copy: the index had applied more records,
    /// and the user is told (the records after are gone: the back office's kept head says which).
    @Test func aHistoryPutBackFromAnOlderCopyIsTold() throws {
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "a.txt", seed: 4131)
        #expect(s.shell("mkdir kept && cp vault/log.vlt vault/log.head vault/log.anchor kept/").status == 0)
        _ = try Self.add(s, "b.txt", seed: 4132)
        #expect(s.shell("cp kept/* vault/").status == 0)
        let r = s.run("list")
        #expect(r.stderr.contains("put back from an older copy"), "\(r.stderr)")
    }

    /// Someone who knew the password before a `passwd` and kept a copy of the vault extended
    /// that copy's history with a `destination remove` sealed under the old key, put the history
    /// back and deleted index.db: the required destination was gone and `remove --delivered`
    /// deleted what it never got. The keyring now keeps where the history stood when each epoch
    /// was retired: the forged record counts for nothing, and nothing is removed.
    @Test func anOldPasswordsForkOfTheHistoryDropsNoRequiredDestination() throws {
        let s = Sandbox()
        s.initVault()
        let receiver = Receiver(in: s)
        #expect(s.run("destination", "add", "office", receiver.url).status == 0)
        #expect(s.run("destination", "add", "archive", "http://127.0.0.1:9/archive").status == 0)
        let ids = [try Self.add(s, "a.txt", seed: 4141), try Self.add(s, "b.txt", seed: 4142)]
        #expect(s.run(["upload", "--to", "office"], env: Self.office).status == 0)
        #expect(s.shell("cp -a vault kept").status == 0)
        let changed = s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "the new password"])
        try #require(changed.status == 0, "\(changed.stderr)")
        // The attacker, with the old password, on the old copy.
        let forged = s.run(["--vault", s.path("kept"), "destination", "remove", "archive"])
        try #require(forged.status == 0, "\(forged.stderr)")
        #expect(
            s.shell(
                """
                    cp kept/log.vlt kept/log.head kept/log.anchor vault/ && rm -f vault/index.db vault/index.db-wal \
                    vault/index.db-shm
                    """
            ).status == 0)
        s.env["VAULT_PASSWORD"] = "the new password"
        let list = Fixtures.json(s.run("destination", "list", "--json"))
        let names = (list["destinations"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(names == ["office", "archive"], "the forged record counts for nothing: \(list)")
        let removed = s.run("remove", "--delivered", "--json")
        #expect(
            removed.status == 0 && Fixtures.json(removed)["removed"] as? [String] == [],
            "archive never got them: \(removed.out)\(removed.stderr)")
        // Even once the owner drops archive, a history with findings removes nothing.
        let dropped = s.run("destination", "remove", "archive")
        #expect(
            dropped.status == 0 && dropped.stderr.contains("the history has"),
            "the owner hears of the findings: \(dropped.stderr)")
        let byOffice = s.run("remove", "--delivered", "--json")
        #expect(
            byOffice.status == 65 && byOffice.stderr.contains("nothing was removed"),
            "\(byOffice.status) \(byOffice.out)\(byOffice.stderr)")
        #expect(Set(Self.listed(s).ids) == Set(ids))
        let audit = s.run("audit", "--json")
        #expect(audit.status == 65 && audit.out.contains("log-record-superseded"), "\(audit.out)")
    }

    /// The history put back from a copy taken at the very point of a `passwd` (nothing of the
    /// attacker's in it), index.db kept: the index had applied more records and kept a
    /// destination the copy lacks. The index is a witness: the user is told, the audit says
    /// rolled back, and nothing is removed by delivery. (Without index.db, only a head kept
    /// elsewhere tells: docs/SECURITY.md.)
    @Test func aHistoryPutBackAtAPasswordChangeBesideTheIndexIsARollback() throws {
        let s = Sandbox()
        s.initVault()
        let receiver = Receiver(in: s)
        #expect(s.run("destination", "add", "office", receiver.url).status == 0)
        let ids = [try Self.add(s, "a.txt", seed: 4151), try Self.add(s, "b.txt", seed: 4152)]
        #expect(s.run(["upload", "--to", "office"], env: Self.office).status == 0)
        #expect(s.shell("mkdir kept && cp vault/log.vlt vault/log.head vault/log.anchor kept/").status == 0)
        try #require(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "the new password"]).status == 0)
        s.env["VAULT_PASSWORD"] = "the new password"
        #expect(s.run("destination", "add", "backup", "http://127.0.0.1:9/backup").status == 0)
        #expect(s.shell("cp kept/* vault/").status == 0)
        let listed = s.run("destination", "list")
        #expect(listed.stderr.contains("put back from an older copy"), "\(listed.stderr)")
        let removed = s.run("remove", "--delivered", "--json")
        #expect(
            (Fixtures.json(removed)["removed"] as? [String] ?? []).isEmpty, "\(removed.out)\(removed.stderr)")
        #expect(Set(Self.listed(s).ids) == Set(ids))
        let audit = s.run("audit", "--json")
        #expect(audit.status == 65 && audit.out.contains("rolled-back"), "\(audit.out)")
    }

    /// A link or a FIFO in the place of `session.lock` made commands run without it (and passwd
    /// fail with exit 74): it is replaced by a regular file, and the link's target is untouched.
    @Test(arguments: ["link", "fifo"])
    func aSessionLockThatIsNotAFileIsReplaced(kind: String) throws {
        let s = Sandbox()
        s.initVault()
        _ = try Self.add(s, "a.txt", seed: 4161)
        s.write("target", Array("untouched".utf8))
        try FileManager.default.removeItem(atPath: s.path("vault/session.lock"))
        if kind == "link" {
            #expect(symlink(s.path("target"), s.path("vault/session.lock")) == 0)
        } else {
            #expect(mkfifo(s.path("vault/session.lock"), 0o600) == 0)
        }
        #expect(s.run("list").status == 0)
        var st = stat()
        #expect(
            lstat(s.path("vault/session.lock"), &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG,
            "a regular file took its place")
        #expect(FileManager.default.contents(atPath: s.path("target")) == Data("untouched".utf8))
        #expect(s.run(["passwd"], env: ["VAULT_NEW_PASSWORD": "another"]).status == 0)
    }
}
