import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Friction a first week of use turned up, on the built binary: the first run, repeated
/// options.
@Suite(.blocking) struct DailyUseCLITests {
    @Test func initOnAFreshAccountMakesTheMissingFoldersPrivateAndWarnsOnceAboutThePassword() throws {
        let s = Sandbox()
        let home = s.path("home")  // does not exist: a fresh account without ~/.local/share
        let r = s.run(["init", "--kdf", "insecure-test"], env: ["HOME": home, "VAULT_DIR": nil, "XDG_DATA_HOME": nil])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.stderr.hasPrefix("vault: created \(home)/.local/share/vault (Argon2id insecure-test, id "), "\(r.stderr)")
        #expect(
            r.stderr.components(separatedBy: "without it the documents cannot be recovered").count == 2,
            "said once: \(r.stderr)")
        for dir in [home, home + "/.local", home + "/.local/share", home + "/.local/share/vault"] {
            let mode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(dir): \(String(mode ?? 0, radix: 8))")
        }
        #expect(s.run(["list"], env: ["HOME": home, "VAULT_DIR": nil, "XDG_DATA_HOME": nil]).status == 0)
    }

    @Test func initChecksTheFolderBeforeAskingForThePassword() throws {
        let s = Sandbox()
        try FileManager.default.createDirectory(atPath: s.path("busy"), withIntermediateDirectories: true)
        s.write("busy/keep.txt", [1])
        s.write("file.txt", [1])
        // No password anywhere and no terminal: a prompt would fail differently.
        let busy = s.run(["init"], env: ["VAULT_DIR": s.path("busy"), "VAULT_PASSWORD": nil])
        #expect(
            busy.status == 73 && busy.stderr.hasPrefix("vault: \(s.path("busy")) exists and is not empty\n"),
            "\(busy.stderr)")
        let under = s.run(["init"], env: ["VAULT_DIR": s.path("file.txt/vault"), "VAULT_PASSWORD": nil])
        #expect(
            under.status == 73
                && under.stderr.hasPrefix(
                    """
                        vault: cannot create a vault in \(s.path("file.txt/vault")): \(s.path("file.txt")) is not a \
                        directory\n
                        """
                ),
            "\(under.stderr)")
    }

    @Test func exportChecksItsFolderFirstMakesMissingOnesAndLeavesNoneBehindWhenItFails() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(70_000, seed: 61))
        let added = s.run("add", "a.txt")
        try #require(added.status == 0)
        // Missing folders are made (0700), parents too.
        let deep = s.run("export", "--out", "new/deeper/outbox", "-q")
        #expect(deep.status == 0, "\(deep.stderr)")
        #expect(FileManager.default.fileExists(atPath: s.path("new/deeper/outbox/batch-0001.json")))
        #expect(
            (try FileManager.default.attributesOfItem(atPath: s.path("new/deeper"))[.posixPermissions] as? Int) == 0o700
        )
        // A folder holding batches is refused before the password is asked (there is none here).
        let again = s.run(["export", "--out", "new/deeper/outbox"], env: ["VAULT_PASSWORD": nil])
        #expect(
            again.status == 73 && again.stderr.hasPrefix("vault: new/deeper/outbox already holds batch-0001.json"),
            "\(again.stderr)")
        // A failed export into a new folder leaves no folder behind.
        let id = added.out.trimmingCharacters(in: .newlines)
        let object = s.path("vault/objects/\(id).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let failed = s.run("export", "--out", "fresh/outbox", "-q")
        #expect(failed.status == 65, "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("fresh")), "no empty folder is left behind")
    }

    @Test func passwordsComeFromAPasswordManagersCommandWithoutAShell() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(100, seed: 91))
        #expect(s.run("add", "a.txt").status == 0)
        let noPassword: [String: String?] = ["VAULT_PASSWORD": nil]
        // Quoted words, no shell: '$HOME' stays as written, and one trailing newline is dropped.
        let right = noPassword.merging(["VAULT_PASSWORD_COMMAND": "printf '%s\\n' 'correct horse battery'"]) { _, b in b
        }
        let listed = s.run(["list", "--json"], env: right)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(!listed.stderr.contains("correct horse") && !listed.out.contains("correct horse"))
        let option = s.run(["--password-command", "printf %s \"correct horse battery\"", "list"], env: noPassword)
        #expect(option.status == 0, "\(option.stderr)")
        let wrong = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "printf '%s' '$HOME'"]) { _, b in b })
        #expect(wrong.status == 77, "\(wrong.stderr)")
        let failing = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "sh -c 'exit 3'"]) { _, b in b })
        #expect(
            failing.status == 64
                && failing.stderr.hasPrefix(
                    "vault: VAULT_PASSWORD_COMMAND failed (exit status 3); nothing was unlocked\n"),
            "\(failing.stderr)")
        let missing = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "no-such-manager get vault"]) { _, b in b })
        #expect(
            missing.status == 3
                && missing.stderr.hasPrefix("vault: VAULT_PASSWORD_COMMAND: 'no-such-manager' was not found on PATH\n"),
            "\(missing.stderr)")
        let unmatched = s.run(["--password-command", "printf 'x", "list"], env: noPassword)
        #expect(
            unmatched.status == 64
                && unmatched.stderr.hasPrefix("vault: the password command is empty or has an unmatched quote\n"),
            "\(unmatched.stderr)")
        // The new password of passwd, from its own command.
        let changed = s.run(
            ["passwd", "--kdf", "interactive"],
            env: right.merging(["VAULT_NEW_PASSWORD_COMMAND": "printf 'a new one'"]) { _, b in b })
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(s.run(["list"], env: ["VAULT_PASSWORD": "a new one"]).status == 0)
    }

    /// Found by a review of the password command once `posix_spawn` replaced Foundation's
    /// `Process`: the command inherited vault's interrupt pipe (it could fake a Ctrl-C), one that
    /// never stops printing (`yes`) hung vault, and a password of 4,097 bytes was taken from a
    /// file or a command though `VAULT_PASSWORD` refuses it (while 4,096 and a CRLF was refused).
    @Test func aPasswordCommandGetsNoDescriptorOfVaultsAndIsStoppedWhenItPrintsTooMuch() throws {
        let s = Sandbox()
        let longest = String(repeating: "p", count: 4096)
        #expect(s.run(["init", "--kdf", "insecure-test"], env: ["VAULT_PASSWORD": longest]).status == 0)
        let noPassword: [String: String?] = ["VAULT_PASSWORD": nil]
        func command(_ c: String) -> [String: String?] {
            noPassword.merging(["VAULT_PASSWORD_COMMAND": c]) { _, b in b }
        }
        // Only standard input, output and error reach the command.
        let fds = s.path("fds.txt")
        let listed = s.run(["list"], env: command("sh -c 'ls /proc/$$/fd > \(fds); printf %s \(longest)'"))
        #expect(listed.status == 0, "\(listed.stderr)")
        let open = (try? String(contentsOfFile: fds, encoding: .utf8))?.split(separator: "\n").compactMap { Int($0) }
        // 0, 1 and 2, and the shell's own copy of its output while it redirects (10 and up in
        // dash); vault's interrupt pipe was 3 and 4.
        #expect(
            open.map { Set([0, 1, 2]).isSubset(of: $0) && $0.allSatisfy { $0 < 3 || $0 >= 10 } } == true,
            "descriptors the command inherited: \(open ?? [])")
        // A command that prints for ever is stopped, and vault says why.
        let endless = s.run(["list"], env: command("yes"))
        #expect(
            endless.status == 64
                && endless.stderr.hasPrefix("vault: VAULT_PASSWORD_COMMAND printed more than 4096 bytes\n"),
            "\(endless.stderr)")
        let tooLong = s.run(["list"], env: command("printf %s \(longest)p"))
        #expect(tooLong.status == 64, "\(tooLong.stderr)")
        // The longest password, with a CRLF after it, from a file and from a command.
        s.write("pw-crlf", Array((longest + "\r\n").utf8))
        let crlf = s.run(["list"], env: noPassword.merging(["VAULT_PASSWORD_FILE": s.path("pw-crlf")]) { _, b in b })
        #expect(crlf.status == 0, "\(crlf.stderr)")
        #expect(s.run(["list"], env: command("printf '%s\\r\\n' \(longest)")).status == 0)
        s.write("pw-long", Array((longest + "p").utf8))
        let file = s.run(["list"], env: noPassword.merging(["VAULT_PASSWORD_FILE": s.path("pw-long")]) { _, b in b })
        #expect(file.status == 64 && file.stderr.contains("is longer than 4096 bytes"), "\(file.stderr)")
    }

    @Test func aReadOnlyVaultSendsNothingItsHistoryCannotRecord() throws {
        let s = Sandbox()
        chmod(s.dir, 0o711)
        let box = s.path("box")
        try FileManager.default.createDirectory(atPath: box, withIntermediateDirectories: true)
        s.write("box/a.txt", .random(300, seed: 97))
        for p in [box, box + "/a.txt"] { chown(p, 65534, 65534) }
        let env: [String: String?] = ["VAULT_DIR": box + "/v", "HOME": box]
        #expect(s.runAsNobody(["init", "--kdf", "insecure-test"], env: env).status == 0)
        #expect(s.runAsNobody(["add", box + "/a.txt"], env: env).status == 0)
        // The history read-only to its owner: reading works, sending does not.
        chmod(box + "/v/log.vlt", 0o400)
        let list = s.runAsNobody(["list"], env: env)
        #expect(list.status == 0, "reading still works: \(list.stderr)")
        let export = s.runAsNobody(["export", "--out", box + "/out"], env: env)
        #expect(
            export.status == 74
                && export.stderr.hasPrefix(
                    "vault: the history cannot be recorded: \(box)/v/log.vlt is not writable; nothing was sent\n"),
            "\(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box + "/out"))
        let receiver = Receiver(in: s)
        let upload = s.runAsNobody(
            ["upload", "--url", receiver.url], env: env.merging(["VAULT_UPLOAD_TOKEN": "test-token"]) { _, b in b })
        #expect(upload.status == 74 && upload.stderr.contains("nothing was sent"), "\(upload.stderr)")
        #expect(receiver.log.isEmpty, "no request was made")
        // The whole folder read-only: a change fails with a hint that says why.
        chmod(box + "/v", 0o500)
        defer { chmod(box + "/v", 0o700) }
        let remove = s.runAsNobody(["remove", "a.txt"], env: env)
        #expect(
            remove.status == 74
                && remove.stderr.hasSuffix(
                    """
                        vault: hint: this user cannot write to the vault folder: is it read-only (or on a read-only \
                        file system)?\n
                        """
                ),
            "\(remove.stderr)")
    }

    @Test func repeatedTagsSelectTheDocumentsWithAnyOfThem() throws {
        let s = Sandbox()
        s.initVault()
        var ids: [String: String] = [:]
        for (name, tags) in [("a", ["dmg"]), ("b", ["big"]), ("c", ["dmg", "big"]), ("d", ["other"])] {
            let r = s.run(
                ["add", "-", "--name", name] + tags.flatMap { ["--tag", $0] },
                stdin: .random(100, seed: UInt64(name.unicodeScalars.first!.value)))
            try #require(r.status == 0, "\(r.stderr)")
            ids[name] = r.out.trimmingCharacters(in: .newlines)
        }
        func names(_ r: CLIResult) -> [String] {
            ((try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [[String: Any]] ?? []).compactMap {
                $0["name"] as? String
            }
        }
        #expect(names(s.run("list", "--tag", "dmg", "--tag", "big", "--json")) == ["a", "b", "c"])
        #expect(names(s.run("list", "--tag", "big", "--json")) == ["b", "c"])
        let exported = s.run("export", "--tag", "dmg", "--tag", "big", "--out", "-")
        let files =
            ((try? JSONSerialization.jsonObject(with: Data(exported.stdout))) as? [String: Any])?["Files"]
            as? [[String: Any]] ?? []
        #expect(files.compactMap { $0["Name"] as? String } == ["a", "b", "c"], "\(exported.stderr)")
        // Named documents and tags: the named ones with any of the tags.
        let named = s.run("export", "a", "b", "d", "--tag", "dmg", "--tag", "other", "--out", "-")
        let some =
            ((try? JSONSerialization.jsonObject(with: Data(named.stdout))) as? [String: Any])?["Files"]
            as? [[String: Any]] ?? []
        #expect(some.compactMap { $0["Name"] as? String } == ["a", "d"])
        let none = s.run("list", "--tag", "nope", "--tag", "none")
        #expect(
            none.status == 3 && none.stderr == "vault: no documents have any of the tags 'nope', 'none'\n",
            "\(none.stderr)")
    }

    /// The newest history record, from `vault log --json`.
    static func lastRecord(_ s: Sandbox) -> [String: Any]? {
        let log = s.run("log", "--json")
        let records =
            ((try? JSONSerialization.jsonObject(with: Data(log.stdout))) as? [String: Any])?["records"]
            as? [[String: Any]]
        return records?.last
    }

    @Test func anAddThatStopsAfterStoringSomeFilesSaysWhatWasAddedAndExitsPartial() throws {
        let s = Sandbox()
        s.initVault()
        s.write("r1.txt", Array("first".utf8))
        s.write("r3m.bin", .random(3 << 20, seed: 3))
        s.write("r4.txt", Array("fourth".utf8))
        // A file-size limit of 1 MiB: r1 is stored, r3m cannot be written, r4 is not tried.
        let r = s.run(["add", "r1.txt", "r3m.bin", "r4.txt"], fileSizeLimitKiB: 1024)
        #expect(r.status == 2, "\(r.stderr)")
        let ids = r.out.split(separator: "\n").map(String.init)
        #expect(ids.count == 1)
        #expect(
            r.stderr.hasPrefix("vault: cannot add r3m.bin: cannot write \(s.path("vault/objects/"))"), "\(r.stderr)")
        #expect(
            r.stderr.hasSuffix(
                ": file too large for this file system or limit\n"
                    + """
                        vault: hint: 1 of 3 files was added (their ids are above); 2 were not (1 more file not \
                        tried)\n
                        """),
            "\(r.stderr)")
        #expect(!r.stderr.contains("nothing was changed"))
        let record = try #require(Self.lastRecord(s))
        #expect(record["op"] as? String == "add" && record["outcome"] as? String == "partial")
        #expect((record["documents"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["r1.txt"])
        #expect((record["detail"] as? String)?.hasPrefix("stopped at r3m.bin: cannot write ") == true, "\(record)")
        #expect(s.run("get", ids[0], "-o", "-").stdout == Array("first".utf8))
        // Nothing stored yet: the error's own code, and nothing changed.
        let none = s.run(["add", "r3m.bin", "r4.txt"], fileSizeLimitKiB: 1024)
        #expect(none.status == 74 && none.stderr.hasSuffix("vault: hint: nothing was changed\n"), "\(none.stderr)")
        #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 2, "still one document")
    }

    @Test func emptyFilesWithDifferentNamesAreNotDuplicatesButEqualContentsAre() throws {
        let s = Sandbox()
        s.initVault()
        s.write("keep.marker", [])
        s.write("done.marker", [])
        s.write("a.txt", Array("same".utf8))
        s.write("b.txt", Array("same".utf8))
        let empties = s.run("add", "keep.marker", "done.marker")
        #expect(empties.status == 0 && empties.out.split(separator: "\n").count == 2, "\(empties.stderr)")
        #expect(s.run("add", "keep.marker").status == 73, "the same empty file again is a duplicate")
        let twins = s.run("add", "a.txt", "b.txt")
        #expect(twins.status == 2 && twins.out.split(separator: "\n").count == 1)
        #expect(
            twins.stderr.hasSuffix(
                "vault: 1 of 2 files was not added\n"
                    + """
                        vault: hint: they are named above; --allow-duplicate adds a file whose contents are already \
                        in the vault\n
                        """
            ), "\(twins.stderr)")
        // One file alone that is a duplicate: nothing was added, so it is not partial.
        let alone = s.run("add", "b.txt")
        #expect(
            alone.status == 73
                && alone.stderr.hasPrefix("vault: b.txt was not added: its contents are already in the vault as "))
    }

    @Test func severalDocumentsGoIntoAFolderWithSafeNamesAndNothingIsReplacedUnasked() throws {
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("inbox/sub"), withIntermediateDirectories: true)
        s.write("inbox/a.txt", Array("alpha".utf8))
        s.write("inbox/sub/b.txt", Array("beta".utf8))
        s.write("inbox/new\nline.txt", Array("newline".utf8))
        #expect(s.run("add", "-r", "inbox", "--tag", "t").status == 0)
        #expect(s.run(["add", "-", "--name", "../../escape.txt"], stdin: Array("escape".utf8)).status == 0)
        // A name list shows escaped can be given back as shown.
        let listed = s.run("list").out
        #expect(listed.contains("new\\nline.txt"))
        #expect(s.run("get", "new\\nline.txt").stdout == Array("newline".utf8))

        let tagged = s.run("get", "--tag", "t", "-o", "out")
        #expect(tagged.status == 0 && tagged.stderr == "vault: wrote 3 documents (16 B) to out\n", "\(tagged.stderr)")
        #expect(FileManager.default.contents(atPath: s.path("out/a.txt")) == Data("alpha".utf8))
        #expect(FileManager.default.contents(atPath: s.path("out/sub/b.txt")) == Data("beta".utf8))
        #expect(FileManager.default.contents(atPath: s.path("out/new_line.txt")) == Data("newline".utf8))
        // A name that climbs out of the folder stays inside it.
        let escape = s.run("get", "../../escape.txt", "-o", "out/", "--json")
        #expect(escape.status == 0, "\(escape.stderr)")
        #expect(FileManager.default.contents(atPath: s.path("out/escape.txt")) == Data("escape".utf8))
        #expect(!FileManager.default.fileExists(atPath: s.path("../escape.txt")))
        let written = (try? JSONSerialization.jsonObject(with: Data(escape.stdout))) as? [String: Any]
        #expect((written?["written"] as? [[String: Any]])?.first?["path"] as? String == "out/escape.txt")
        AuditCLITests.write(s.path("written.json"), escape.stdout)
        #expect(Fixtures.validate(s.path("written.json"), schema: "get").status == 0)

        // Existing files: refused before anything is written, unless --force.
        let again = s.run("get", "--all", "-o", "out", "-q")
        #expect(
            again.status == 73
                && again.stderr
                    == "vault: out/a.txt already exists; nothing was written\nvault: hint: use --force to replace it\n",
            "\(again.stderr)")
        #expect(s.run("get", "--all", "-o", "out", "-q", "--force").stderr.isEmpty)
        // Two documents with one name: refused before anything is written.
        s.write("a.txt", Array("another alpha".utf8))
        let twin = s.run("add", "a.txt").out.trimmingCharacters(in: .newlines)
        let clash = s.run("get", "--all", "-o", "fresh")
        #expect(
            clash.status == 73 && clash.stderr.contains("would both be written to a.txt; nothing was written"),
            "\(clash.stderr)")
        #expect(clash.stderr.contains(String(twin.prefix(12))))
        #expect(!FileManager.default.fileExists(atPath: s.path("fresh")), "no folder is left behind")
        // Several documents need a folder.
        let stdout = s.run("get", "a.txt", "sub/b.txt")
        #expect(
            stdout.status == 64
                && stdout.stderr
                    == "vault: several documents need a folder: -o DIR\nvault: hint: see 'vault get --help'\n"
        )
    }

    // Long: a table of cases, read down the page.
    @Test func messagesThatHelp() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.bin", .random(5000, seed: 9))
        #expect(s.run("add", "a.bin").status == 0)
        // Numbers: a negative count is refused as such; sizes take the usual forms.
        let negative = s.run("export", "--out", "o", "--batch-size", "-1")
        #expect(
            negative.status == 64
                && negative.stderr
                    == "vault: --batch-size must be at least 1, not -1\nvault: hint: see 'vault export --help'\n"
        )
        for size in ["300MB", "1.5M", "2GiB", "512k", "1048576"] {
            let r = s.run("export", "--out", "-", "--max-bytes", size)
            #expect(r.status == 0, "\(size): \(r.stderr)")
        }
        let bad = s.run("export", "--out", "o", "--max-bytes", "3XB")
        #expect(
            bad.status == 64
                && bad.stderr.hasSuffix(
                    """
                        give bytes (1048576) or a number with K, M or G (512K, 1.5M, 300MB, 2GiB; powers of \
                        1024)\nvault: hint: see 'vault export --help'\n
                        """
                ), "\(bad.stderr)")
        let small = s.run("export", "--out", "o", "--max-bytes", "2K")
        #expect(
            small.status == 64
                && small.stderr.hasSuffix(
                    """
                        needs a payload of 6.7 KiB, more than the limit of 2.0 KiB\nvault: hint: use --max-bytes 7K \
                        or more, or leave this document out\n
                        """
                ), "\(small.stderr)")
        // A mistyped command: did you mean.
        let typo = s.run("lst")
        #expect(
            typo.status == 64
                && typo.stderr
                    == """
                        vault: 'lst' is not a vault command\nvault: hint: did you mean 'vault list'? 'vault --help' \
                        lists the commands\n
                        """
        )
        let ftp = s.run("upload", "--url", "ftp://host/x")
        #expect(
            ftp.status == 64
                && ftp.stderr.hasPrefix(
                    """
                        vault: --url must be an http:// or https:// URL with a host, or s3://BUCKET/PREFIX with \
                        --protocol s3\n
                        """
                ))
        // A removed remote is said to be gone, not "create a vault".
        #expect(s.run("remote", "add", "office", "s3://bucket/vault").status == 0)
        #expect(s.run("remote", "remove", "office").status == 0)
        let gone = s.run("list", "--vault", "office")
        #expect(
            gone.status == 3
                && gone.stderr == "vault: no vault at office, and the vault has no remote named 'office'\n"
                    + "vault: hint: it has no remotes; a new vault folder is made with 'vault init --vault ./office'\n",
            "\(gone.stderr)")
        #expect(s.run("remote", "add", "home", "s3://bucket/home").status == 0)
        let local = s.run("add", "a.bin", "--vault", "home")
        #expect(
            local.status == 64
                && local.stderr
                    == """
                        vault: this command needs a local vault; 'home' is the remote s3://bucket/home\nvault: hint: \
                        make a replica with 'vault clone s3://bucket/home --vault NEW-FOLDER'\n
                        """,
            "\(local.stderr)")
        // A URL's scheme is read in any case: `S3://` was taken for a folder named `S3:`, and
        // the hint offered to make a vault there.
        for url in ["S3://bucket/x", "s3://bucket/x"] {
            let store = s.run("list", "--vault", url)
            #expect(
                store.status == 64
                    && store.stderr
                        == "vault: --vault \(url) needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n",
                "\(store.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: s.path("S3:")))
    }

    /// Every command that prints a result has -q (nothing but errors) and --json (one object,
    /// valid against docs/schemas/COMMAND.schema.json).
    // Long: a table of every command with a result, each checked the same way.
    @Test func everyResultHasQuietAndJSONAndTheJSONMatchesItsSchema() throws {
        let s = Sandbox()
        func check(_ schema: String, _ args: [String], env: [String: String?] = [:], status: Int32 = 0) -> [String: Any]
        {
            let r = s.run(args, env: env)
            #expect(r.status == status, "\(args): \(r.stderr)")
            // --json is a mode: the object on stdout, nothing on stderr but errors.
            if status == 0 { #expect(r.stderr.isEmpty, "\(args) --json said on stderr: \(r.stderr)") }
            AuditCLITests.write(s.path("out.json"), r.stdout)
            let v = Fixtures.validate(s.path("out.json"), schema: schema)
            #expect(v.status == 0, "\(args) against \(schema).schema.json: \(v.output)")
            return (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any] ?? [:]
        }
        let created = check("init", ["init", "--kdf", "interactive", "--json"])
        #expect(created["kdf"] as? String == "interactive" && created["vault"] as? String == s.path("vault"))
        s.write("a.txt", Array("alpha".utf8))
        s.write("b.txt", Array("beta".utf8))
        s.write("c.txt", Array("gamma".utf8))
        let added = check("add", ["add", "a.txt", "b.txt", "--json"])
        #expect((added["added"] as? [Any])?.count == 2)
        let quietAdd = s.run("add", "c.txt", "-q")
        #expect(quietAdd.status == 0 && quietAdd.stdout.isEmpty && quietAdd.stderr.isEmpty)
        _ = check("add", ["add", "a.txt", "b.txt", "--json"], status: 73)  // a duplicate alone: notAdded
        _ = check("get", ["get", "a.txt", "-o", "a-copy.txt", "--json"])
        let wouldExport = check("export", ["export", "--out", "out", "--dry-run", "--json"])
        #expect(
            (wouldExport["batches"] as? [[String: Any]])?.first?["file"] as? String == "batch-0001.json"
                && !FileManager.default.fileExists(atPath: s.path("out")))
        _ = check("export", ["export", "--out", "out", "--json"])
        let r = Receiver(in: s)
        let wouldSend = check("upload", ["upload", "--url", r.url, "--dry-run", "--json"], env: Fixtures.uploadToken)
        #expect((wouldSend["send"] as? [Any])?.count == 3 && r.accepted.isEmpty, "\(wouldSend)")
        _ = check("upload", ["upload", "--url", r.url, "--json"], env: Fixtures.uploadToken)
        _ = check("uploads", ["uploads", "--json"])
        _ = check("uploads-prune", ["uploads", "prune", "--json"])
        let wouldRemove = check("remove", ["remove", "a.txt", "--dry-run", "--json"])
        #expect((wouldRemove["documents"] as? [[String: Any]])?.first?["name"] as? String == "a.txt")
        try FileManager.default.createDirectory(atPath: s.path("inbox"), withIntermediateDirectories: true)
        s.write("inbox/x.txt", Array("x".utf8))
        s.write("inbox/.DS_Store", [0])
        let wouldAdd = check("add", ["add", "-r", "inbox", "--dry-run", "--json"])
        #expect(
            (wouldAdd["wouldAdd"] as? [[String: Any]])?.map { $0["name"] as? String } == ["x.txt"]
                && (wouldAdd["excluded"] as? [String])?.count == 1,
            "\(wouldAdd)")
        _ = check("verify", ["verify", "--json"])
        let quietVerify = s.run("verify", "-q")
        #expect(quietVerify.status == 0 && quietVerify.stdout.isEmpty && quietVerify.stderr.isEmpty)
        let copy = try FileManager.default.contentsOfDirectory(atPath: s.path("vault/objects")).filter {
            $0.hasSuffix(".vlt")
        }.sorted()[0]
        try FileManager.default.copyItem(atPath: s.path("vault/objects/" + copy), toPath: s.path("saved.vlt"))
        let removed = check("remove", ["remove", String(copy.prefix(32)), "--json"])
        #expect(removed["removed"] as? [String] == [String(copy.prefix(32))])
        let restored = check("restore", ["restore", "saved.vlt", "--json"])
        #expect((restored["restored"] as? [Any])?.count == 1)
        // a restored envelope gets a new id
        let restoredID = try #require((restored["restored"] as? [[String: Any]])?.first?["id"] as? String)
        let quietRemove = s.run("remove", restoredID, "-q")
        #expect(
            quietRemove.status == 0 && quietRemove.stdout.isEmpty && quietRemove.stderr.isEmpty, "\(quietRemove.stderr)"
        )
        let changed = check("passwd", ["passwd", "--json"], env: ["VAULT_NEW_PASSWORD": "a new password"])
        #expect(changed["documents"] as? Int == 2)
        let quietPasswd = s.run(
            ["passwd", "-q"], env: ["VAULT_PASSWORD": "a new password", "VAULT_NEW_PASSWORD": "correct horse battery"])
        #expect(
            quietPasswd.status == 0 && quietPasswd.stdout.isEmpty && quietPasswd.stderr.isEmpty, "\(quietPasswd.stderr)"
        )
        // Naming and forgetting a destination or a store: one line each, none with -q.
        let named = s.run("destination", "add", "office", "https://office.example/in")
        #expect(named.status == 0 && named.stderr == "vault: added destination office → https://office.example/in\n")
        for args in [
            ["destination", "remove", "office", "-q"],
            ["destination", "add", "office", "https://office.example/in", "-q"],
            ["remote", "add", "archive", "s3://archive/station", "-q"], ["remote", "remove", "archive", "-q"]
        ] {
            let quiet = s.run(args)
            #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(args): \(quiet.stderr)")
        }
        #expect(s.run("destination", "list").out.hasPrefix("office"))
        #expect(s.run("remote", "list").out.isEmpty)
        let both = s.run("verify", "-q", "--json")
        #expect(both.status == 64 && both.stderr.hasPrefix("vault: -q and --json contradict each other\n"))
        // An empty list says so, on stderr (a script reading the table gets nothing).
        let t = Sandbox()
        t.initVault()
        let empty = t.run("list")
        #expect(
            empty.status == 0 && empty.stdout.isEmpty
                && empty.stderr == "vault: the vault holds no documents (add some with 'vault add FILE')\n")
        #expect(t.run("list", "--json").out == "[]\n")
        let none = t.run("uploads")
        #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.hasPrefix("vault: no uploads"))
    }
}
