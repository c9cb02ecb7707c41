import Foundation
import Testing

/// A vault written by the version before sealed state (`Fixtures/legacy/vault-1`) opens with
/// today's binary, is upgraded to the current format (`vault/3`) without loss, and keeps working
/// (issue 21); so do vaults of the versions after it (`vault/2`).
@Suite(.blocking) struct LegacyVaultCLITests {
    static let password: [String: String?] = ["VAULT_PASSWORD": "legacy fixture password"]

    /// A copy of the fixture vault in a new sandbox, as `vault/` (files 0600, folders 0700).
    static func copy(_ fixture: String = "vault-1") throws -> Sandbox {
        let s = Sandbox()
        let source = Sandbox.repository.appendingPathComponent("Fixtures/legacy/\(fixture)").path
        try FileManager.default.copyItem(atPath: source, toPath: s.path("vault"))
        for name in FileManager.default.enumerator(atPath: s.path("vault"))!.allObjects as! [String] {
            let path = s.path("vault/" + name)
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
            try FileManager.default.setAttributes(
                [.posixPermissions: isDir.boolValue ? 0o700 : 0o600], ofItemAtPath: path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: s.path("vault"))
        return s
    }

    static func json(_ r: CLIResult) -> Any? { try? JSONSerialization.jsonObject(with: Data(r.stdout)) }

    @Test func aVaultOfTheEarlierFormatOpensUpgradesAndLosesNothing() throws {
        let s = try Self.copy()
        let before = try String(contentsOfFile: s.path("vault/vault.json"), encoding: .utf8)
        #expect(before.contains("\"vault\\/1\""))
        let list = s.run(["list", "--json"], env: Self.password)
        #expect(list.status == 0, "\(list.stderr)")
        let docs = (Self.json(list) as? [[String: Any]]) ?? []
        #expect(Set(docs.compactMap { $0["name"] as? String }) == ["notes.txt", "empty.txt"])
        // Upgraded in place: vault/3, epoch 0, the same keys; the remote list sealed.
        let after =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: s.path("vault/vault.json"))))
            as! [String: Any]
        #expect(after["format"] as? String == "vault/3" && after["epoch"] as? Int == 0)
        #expect(!FileManager.default.fileExists(atPath: s.path("vault/remotes.json")))
        #expect(s.run(["remote"], env: Self.password).out == "office  s3://backoffice/vault\n")
        // The history is whole, old records and the upgrade's; the documents are the originals.
        let log = s.run(["log", "--json"], env: Self.password)
        let ops =
            ((Self.json(log) as? [String: Any])?["records"] as? [[String: Any]])?.compactMap { $0["op"] as? String }
            ?? []
        #expect(ops == ["init", "add", "add", "add", "remove", "upgrade"], "\(ops)")
        let audit = s.run(["audit", "--deep"], env: Self.password)
        #expect(audit.status == 0, "\(audit.out)")
        #expect(s.run(["verify"], env: Self.password).status == 0)
        let notes = Array(
            try Data(contentsOf: Sandbox.repository.appendingPathComponent("Fixtures/documents/notes.txt")))
        #expect(s.run(["get", "notes.txt"], env: Self.password).stdout == notes)
        // The unsealed journal of its interrupted upload is not trusted: listed damaged, pruned.
        let uploads = s.run(["uploads", "--json"], env: Self.password)
        let journals = ((Self.json(uploads) as? [String: Any])?["journals"] as? [[String: Any]]) ?? []
        #expect(journals.count == 1 && journals.first?["state"] as? String == "damaged", "\(uploads.out)")
        #expect(s.run(["uploads", "prune"], env: Self.password).stderr == "vault: removed 1 upload journal\n")
        // And it goes on: add, a password change (a new key epoch), audit.
        s.write("new.txt", Array("after the upgrade".utf8))
        #expect(s.run(["add", "new.txt"], env: Self.password).status == 0)
        #expect(
            s.run(["passwd"], env: Self.password.merging(["VAULT_NEW_PASSWORD": "rotated"]) { _, b in b }).status == 0)
        let rotated: [String: String?] = ["VAULT_PASSWORD": "rotated"]
        #expect(s.run(["audit", "--deep"], env: rotated).status == 0)
        #expect(
            Set(
                ((Self.json(s.run(["list", "--json"], env: rotated)) as? [[String: Any]]) ?? []).compactMap {
                    $0["name"] as? String
                })
                == ["notes.txt", "empty.txt", "new.txt"])
        #expect(s.run(["log"], env: rotated).out.contains("key epoch 0 → 1"))
    }

    @Test func itsHistoryCannotBeErasedOnceUpgraded() throws {
        let s = try Self.copy()
        #expect(s.run(["list"], env: Self.password).status == 0)  // upgrades it
        for name in ["log.vlt", "log.head", "log.anchor"] {
            try FileManager.default.removeItem(atPath: s.path("vault/" + name))
        }
        s.write("x.txt", Array("x".utf8))
        #expect(s.run(["add", "x.txt"], env: Self.password).status == 0)
        let audit = s.run(["audit"], env: Self.password)
        #expect(audit.status == 65 && audit.out.contains("log-missing"), "\(audit.out)")
        #expect(!s.run(["log", "--json"], env: Self.password).out.contains("\"op\":\"begin\""))
    }

    /// A vault written by the version before the delivery ledger (`Fixtures/legacy/vault-2-ledger`,
    /// index.db version 2, one `upload` record per run): its upload counts as deliveries at once.
    @Test func aVaultOfTheVersionBeforeTheLedgerKnowsWhatItDelivered() throws {
        let s = try Self.copy("vault-2-ledger")
        let env: [String: String?] = ["VAULT_PASSWORD": "ledger fixture password"]
        let office = "http://127.0.0.1:47001/batches"
        let list = s.run(["list", "--json"], env: env)
        #expect(list.status == 0, "\(list.stderr)")
        let names = (Self.json(list) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names == ["empty.txt", "a report (final) é.txt", "notes.txt", "later.txt"])
        let notes = Array(
            try Data(contentsOf: Sandbox.repository.appendingPathComponent("Fixtures/documents/notes.txt")))
        #expect(s.run(["get", "notes.txt"], env: env).stdout == notes)
        #expect(s.run(["get", "empty.txt"], env: env).stdout.isEmpty)
        #expect(s.run(["get", "a report (final) é.txt"], env: env).out == "first document\n")
        let delivered = s.run(["list", "--delivered-to", office, "--json"], env: env)
        #expect(
            (Self.json(delivered) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } == [
                "empty.txt", "a report (final) é.txt", "notes.txt"
            ])
        let pending = s.run(["list", "--undelivered", "--to", office, "--json"], env: env)
        #expect((Self.json(pending) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } == ["later.txt"])
        let status = Self.json(s.run(["status", "--json"], env: env)) as? [String: Any]
        let entry = (status?["destinations"] as? [[String: Any]])?.first
        #expect(
            entry?["destination"] as? String == office && entry?["delivered"] as? Int == 3
                && entry?["pending"] as? Int == 1, "\(String(describing: status))")
        #expect(s.run(["audit", "--deep", "--require-delivered", office], env: env).status == 0)
        let freed = s.run(["remove", "--delivered-to", office, "--json"], env: env)
        #expect(
            Set((Self.json(freed) as? [String: Any])?["removed"] as? [String] ?? [])
                == [
                    "5ab1dd1866d4c3f2862bc1d0c8be4400", "e6e12c9efb413eb8f2aae5cc3f4f1b00",
                    "84aead89a57e4840ca7f69bc4c157212"
                ])
        #expect(s.objects == ["aedf6da49b36c98b1cf26e5d747a2bf9.vlt"], "only the undelivered document stays")
    }

    /// `vault tag` on a vault of the previous format (a committed fixture): the vault is
    /// upgraded first (a `tag` record is of vault/3), its destinations and documents kept, and
    /// the change applied.
    @Test func tagUpgradesAVaultOfThePreviousFormatWithoutLoss() throws {
        let s = try Self.copy("vault-2-destinations")
        let env: [String: String?] = ["VAULT_PASSWORD": "destinations fixture password 2"]
        let before = s.run(["list", "--json"], env: env)
        let names = (Self.json(before) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names.count == 3, "\(before.out)")
        let tagged = s.run(["tag", "a.txt", "--add", "kept"], env: env)
        #expect(tagged.status == 0 && tagged.out.contains("a.txt") && tagged.out.contains("kept"), "\(tagged.stderr)")
        let after = Self.json(LegacyVaultCLITests.read(s, "vault/vault.json")) as? [String: Any]
        #expect(after?["format"] as? String == "vault/3")
        #expect(
            (Self.json(s.run(["list", "--json"], env: env)) as? [[String: Any]] ?? []).compactMap {
                $0["name"] as? String
            } == names)
        #expect(
            (Self.json(s.run(["list", "--tag", "kept", "--json"], env: env)) as? [[String: Any]] ?? []).compactMap {
                $0["name"] as? String
            } == ["a.txt"])
        let destinations =
            (Self.json(s.run(["destination", "list", "--json"], env: env)) as? [String: Any])?["destinations"]
            as? [[String: Any]] ?? []
        #expect(destinations.compactMap { $0["name"] as? String } == ["office", "archive", "spare"])
        let audit = s.run(["audit"], env: env)
        #expect(audit.status == 0, "\(audit.out)\(audit.stderr)")
    }

    /// A `vault/2` vault whose destination list is in `destinations.vlt` (required office and
    /// archive, optional spare), sealed under the key of the epoch before a `passwd` (that
    /// version did not seal it again): upgraded, its destinations are history records, the file
    /// is gone, nothing reads as forged, and removal by delivery still needs the archive.
    @Test func aVaultWhoseDestinationsWereAFileKeepsThemInItsHistory() throws {
        let s = try Self.copy("vault-2-destinations")
        let env: [String: String?] = ["VAULT_PASSWORD": "destinations fixture password 2"]
        let before = try String(contentsOfFile: s.path("vault/vault.json"), encoding: .utf8)
        #expect(before.contains("\"vault\\/2\""))
        let listed = s.run(["destination", "list", "--json"], env: env)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(
            listed.stderr.contains("destinations.vlt was sealed under the key of epoch 0"),
            "the user is told: \(listed.stderr)")
        let entries = (Self.json(listed) as? [String: Any])?["destinations"] as? [[String: Any]] ?? []
        #expect(entries.compactMap { $0["name"] as? String } == ["office", "archive", "spare"], "\(listed.out)")
        #expect(entries.compactMap { $0["required"] as? Bool } == [true, true, false], "\(listed.out)")
        let after = Self.json(LegacyVaultCLITests.read(s, "vault/vault.json")) as? [String: Any]
        #expect(
            after?["format"] as? String == "vault/3" && after?["epoch"] as? Int == 1, "\(String(describing: after))")
        #expect(
            !FileManager.default.fileExists(atPath: s.path("vault/destinations.vlt")),
            "the file is gone: the history holds the list")
        let log = s.run(["log", "--json"], env: env)
        let ops = ((Self.json(log) as? [String: Any])?["records"] as? [[String: Any]] ?? []).compactMap {
            $0["op"] as? String
        }
        #expect(ops.suffix(4) == ["destination", "destination", "destination", "upgrade"], "\(ops)")
        for command in [["status"], ["list", "--undelivered"], ["audit"]] {
            let r = s.run(command, env: env)
            #expect(r.status == 0 && !r.stderr.contains("old password"), "\(command): \(r.status) \(r.out)\(r.stderr)")
        }
        let office = s.run(["list", "--delivered-to", "office", "--json"], env: env)
        #expect(
            (Self.json(office) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } == ["a.txt", "b.txt"],
            "\(office.out)")
        let freed = s.run(["remove", "--delivered", "--json"], env: env)
        #expect(
            (Self.json(freed) as? [String: Any])?["removed"] as? [String] == [],
            "the archive never got them: \(freed.out)\(freed.stderr)")
        #expect(s.objects.count == 3)
        // A destination changed now is one more record, and the projection follows it.
        #expect(s.run(["destination", "remove", "archive"], env: env).status == 0)
        let gone = s.run(["remove", "--delivered", "--json"], env: env)
        #expect(
            Set((Self.json(gone) as? [String: Any])?["removed"] as? [String] ?? []).count == 2,
            "\(gone.out)\(gone.stderr)")
    }

    /// The bytes of a file in the sandbox, as a result `json` reads.
    static func read(_ s: Sandbox, _ path: String) -> CLIResult {
        s.shell("cat \(path)")
    }
    /// The format baseline (docs/FORMAT.md, "What this version reads"): a vault of a format this
    /// build does not know is refused, naming the formats it reads, and is left as it was.
    @Test func aVaultOfALaterFormatIsRefusedAndLeftAsItWas() throws {
        let s = Sandbox()
        s.initVault()
        let path = s.path("vault/vault.json")
        let current = try String(contentsOfFile: path, encoding: .utf8)
        let later = current.replacingOccurrences(
            of: #""format"\s*:\s*"vault\\?/3""#, with: #""format": "vault/9""#, options: .regularExpression)
        try #require(later != current, "vault.json names its format: \(current)")
        try later.write(toFile: path, atomically: true, encoding: .utf8)
        for command in [["list"], ["audit"], ["status"]] {
            let r = s.run(command)
            #expect(r.status == 65, "\(command): \(r.stderr)")
            #expect(
                r.stderr
                    == """
                        vault: \(s.path("vault"))/vault.json has format 'vault/9'; this build reads 'vault/3', \
                        'vault/2' and 'vault/1'
                        vault: hint: a later version of vault wrote it: open it with that version (nothing was changed)

                        """, "\(command): \(r.stderr)")
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == later)
    }
}
