import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a second week of daily use tripped over (issue 40), on the built binary: folders with a
/// trailing slash, previews before anything is deleted or sent, exclusions, hints that say
/// what is true, interrupted exports that clean up, and the small words.
@Suite(.blocking) struct SecondWeekCLITests {
    /// Runs `command` (sh; `$1` is the vault binary) under util-linux's `script`, on a
    /// pseudo-terminal whose input is `typed`: what a user at a terminal sees and answers.
    static func atTerminal(_ s: Sandbox, _ command: String, typed: String, env: [String: String?] = [:]) -> CLIResult {
        s.write("typed.txt", Array(typed.utf8))
        s.write("cmd.sh", Array(command.utf8))
        return s.shell("script -qec \"sh cmd.sh '$1'\" /dev/null < typed.txt", env: env)
    }

    @Test func aTrailingSlashMakesTheFolderOnceForExportAndGet() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        #expect(s.run("add", "a.txt", "--tag", "2026").status == 0)
        let export = s.run("export", "--out", "outbox/", "-q")
        #expect(export.status == 0, "\(export.stderr)")
        #expect(FileManager.default.fileExists(atPath: s.path("outbox/batch-0001.json")))
        let nested = s.run("export", "--out", "deep/er//", "-q")
        #expect(
            nested.status == 0 && FileManager.default.fileExists(atPath: s.path("deep/er/manifest.json")),
            "\(nested.stderr)")
        let get = s.run("get", "--tag", "2026", "-o", "restored/", "-q")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: s.path("restored/a.txt"))) == Data("alpha".utf8))
    }

    @Test func removalsArePreviewedConfirmedOnATerminalAndSayWhatTheyRemoved() throws {
        let s = Sandbox()
        s.initVault()
        var ids: [String] = []
        for i in 0..<7 {
            s.write("doc\(i).txt", Array("document \(i)".utf8))
            ids.append(s.run("add", "doc\(i).txt").out.trimmingCharacters(in: .newlines))
        }
        let dry = s.run(["remove"] + ids.map { String($0.prefix(8)) } + ["--dry-run"])
        #expect(dry.status == 0 && dry.out.components(separatedBy: "would remove").count == 8, "\(dry.out)")
        #expect(
            dry.out.contains("doc3.txt")
                && dry.stderr == "vault: dry run: would remove 7 documents (70 B); nothing was removed\n",
            "\(dry.stderr)")
        #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 8, "a dry run removes nothing")
        // On a terminal, more than five ask first: "n" keeps them all.
        let no = Self.atTerminal(
            s, "\"$1\" remove " + ids.map { String($0.prefix(8)) }.joined(separator: " "), typed: "n\n")
        #expect(no.status == 64, "\(no.out) \(no.stderr)")
        #expect(
            no.out.contains("about to remove 7 documents (70 B)") && no.out.contains("doc6.txt")
                && no.out.contains("remove them? [y/N]"), "\(no.out)")
        #expect(no.out.contains("nothing was removed (not confirmed)"), "\(no.out)")
        #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 8)
        let yes = Self.atTerminal(
            s, "\"$1\" remove " + ids.prefix(6).map { String($0.prefix(8)) }.joined(separator: " "), typed: "y\n")
        #expect(
            yes.status == 0 && yes.out.contains("vault: removed 6 documents (60 B): doc0.txt, doc1.txt"), "\(yes.out)")
        // A script (no terminal) is not asked; ids on stdout, what they were on stderr.
        let scripted = s.run("remove", String(ids[6].prefix(8)))
        #expect(
            scripted.status == 0 && scripted.out == ids[6] + "\n"
                && scripted.stderr == "vault: removed 1 document (10 B): doc6.txt\n", "\(scripted.stderr)")
    }

    @Test func addLeavesOutLitterAndWhatIsExcludedAndPreviews() throws {
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("inbox/sub"), withIntermediateDirectories: true)
        for name in [
            "inbox/a.pdf", "inbox/sub/b.jpg", "inbox/.DS_Store", "inbox/sub/Thumbs.db", "inbox/._a.pdf",
            "inbox/scratch.tmp"
        ] {
            s.write(name, Array(name.utf8))
        }
        let dry = s.run("add", "-r", "inbox", "--exclude", "*.tmp", "--dry-run")
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.out.hasPrefix("would add a.pdf (11 B)\nwould add sub/b.jpg (15 B)\n"), "\(dry.out)")
        #expect(
            dry.out.contains("left out ") && dry.out.contains("scratch.tmp (excluded)")
                && dry.out.contains(".DS_Store (excluded)"), "\(dry.out)")
        #expect(
            dry.stderr.hasPrefix("vault: dry run: would add 2 files (26 B), leaving out 4; nothing was added"),
            "\(dry.stderr)")
        #expect(s.run("list", "--json").out == "[]\n")
        let added = s.run("add", "-r", "inbox", "--exclude", "*.tmp", "--json")
        #expect(added.status == 0 && added.stderr.isEmpty, "\(added.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(added.stdout)) as? [String: Any]
        #expect((json?["added"] as? [[String: Any]])?.map { $0["name"] as? String } == ["a.pdf", "sub/b.jpg"])
        #expect((json?["excluded"] as? [String])?.count == 4)
        let all = s.run("add", "-r", "inbox", "--no-default-excludes", "-q")
        #expect(
            all.status == 2
                && all.stderr.hasSuffix(
                    "vault: 2 of 6 files were not added\n"
                        + """
                            vault: hint: they are named above; --allow-duplicate adds a file whose contents are \
                            already in the vault\n
                            """
                ),
            "the litter is added on request, the others are twins: \(all.stderr)")
    }

    @Test func uploadPreviewsWhatItWouldSendAndRemoveAndReportsWhatItRemoved() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        let r = Receiver(in: s)
        let first = s.run(["upload", "--url", r.url, String(ids[0].prefix(8))], env: Fixtures.uploadToken)
        #expect(first.status == 0, "\(first.stderr)")
        let dry = s.run(["upload", "--url", r.url, "--remove-delivered", "--dry-run"], env: Fixtures.uploadToken)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.out
                == """
                    would send  \(ids[1].prefix(12))  1017 B  doc 1.bin\nwould send  \(ids[2].prefix(12))  1.0 KiB  \
                    doc 2.bin\n
                    """
                + "would remove  \(ids[0].prefix(12))  1000 B  doc 0.bin  (delivered)\n", "\(dry.out)")
        #expect(
            dry.stderr.hasPrefix(
                "vault: dry run: would send 2 documents (2.0 KiB) to \(r.url); would remove 1 document delivered before"
            ), "\(dry.stderr)")
        #expect(
            r.accepted == [ids[0]] && s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 4,
            "nothing sent or removed")
        let real = s.run(["upload", "--url", r.url, "--remove-delivered"], env: Fixtures.uploadToken)
        #expect(real.status == 0, "\(real.stderr)")
        #expect(
            real.stderr.contains("vault: removed 1 document (1000 B) delivered before this upload: doc 0.bin\n"),
            "\(real.stderr)")
        #expect(
            real.stderr.contains("vault: uploaded 2 documents in 1 batch")
                && real.stderr.contains("; removed 2 documents delivered now and 1 delivered before"), "\(real.stderr)")
        #expect(
            real.stderr.contains(
                "vault: removed 2 documents (2.0 KiB) delivered to \(r.url) now: doc 1.bin, doc 2.bin\n"),
            "\(real.stderr)")
        #expect(s.run("list", "--json").out == "[]\n")
        // --dry-run is an option, not a typo of --new-run.
        #expect(!dry.stderr.contains("Did you mean"))
    }

    /// A delivery whose plan fails removes nothing (the removal of what was delivered before
    /// comes once the plan stands), and a dry run words its errors as the real command does.
    @Test func aFailingPlanRemovesNothingAndADryRunSaysWhatTheCommandWouldSay() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 2)
        let r = Receiver(in: s)
        let first = s.run(["upload", "--url", r.url, String(ids[0].prefix(8))], env: Fixtures.uploadToken)
        #expect(first.status == 0, "\(first.stderr)")
        for dry in [false, true] {
            let resume = s.run(
                ["upload", "--url", r.url, "--remove-delivered", "--resume"] + (dry ? ["--dry-run"] : []),
                env: Fixtures.uploadToken)
            #expect(
                resume.status == 3
                    && resume.stderr
                        == "vault: there is no interrupted upload of these documents to \(r.url)\n"
                        + "vault: hint: run the upload without --resume to start one\n",
                "dry run \(dry): \(resume.stderr)")
            #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 3, "nothing was removed")
        }
        #expect(r.accepted == [ids[0]])
    }

    @Test func resumeNamesTheSettingsAnInterruptedRunWasStartedWith() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 4)
        let r = Receiver(in: s, faults: #"[{"action": "ok"}, {"action": "status", "status": 503}]"#)
        let first = s.run(["upload", "--url", r.url, "--batch-size", "2", "--retries", "0"], env: Fixtures.uploadToken)
        #expect(first.status == 75, "\(first.stderr)")
        let status = s.run("status")
        #expect(status.out.contains("1 interrupted upload"), "\(status.out)")
        let wrong = s.run(["upload", "--url", r.url, "--resume"], env: Fixtures.uploadToken)
        #expect(wrong.status == 3)
        #expect(
            wrong.stderr.hasPrefix("vault: the interrupted upload to \(r.url) (run ")
                && wrong.stderr.contains(") was started with --batch-size 2 (this command: 20)\n"),
            "\(wrong.stderr)")
        let right = s.run(["upload", "--url", r.url, "--resume", "--batch-size", "2"], env: Fixtures.uploadToken)
        #expect(
            right.status == 0 && right.stderr.contains("vault: uploaded 2 documents in 1 batch"),
            "this time's figures: \(right.stderr)")
    }

    @Test func namesAndHostsAreShownNotObeyed() throws {
        let s = Sandbox()
        s.initVault()
        let tricky = "invoice\u{202E}fdp.exe"
        #expect(s.run(["add", "-", "--name", tricky], stdin: Array("MZ".utf8)).status == 0)
        let list = s.run("list")
        #expect(list.out.contains("invoice\\u202efdp.exe") && !list.out.contains("\u{202E}"), "\(list.out)")
        // An escape sequence in a URL never reaches the terminal: refused before it is kept.
        let added = s.run("destination", "add", "x", "https://ex%1b%5b31mample.com/in")
        #expect(
            added.status == 64 && added.stderr.contains("ex%1b%5b31mample.com") && !added.stderr.contains("\u{1B}"),
            "\(added.stderr)")
        let raw = s.run("destination", "add", "y", "https://example.com/\u{1B}[31mred")
        #expect(
            raw.status == 64 && raw.stderr.contains("\\x1b[31mred") && !raw.stderr.contains("\u{1B}"), "\(raw.stderr)")
    }

    @Test func hintsSayWhatIsTrue() throws {
        let s = Sandbox()
        let missing = s.run("--vault", s.path("missing"), "list")
        #expect(
            missing.status == 3
                && missing.stderr
                    == """
                        vault: no vault at \(s.path("missing"))\nvault: hint: check the path, or create a vault there \
                        with 'vault init --vault \(s.path("missing"))'\n
                        """,
            "\(missing.stderr)")
        s.initVault()
        let typo = s.run("ad", "x")
        #expect(
            typo.status == 64
                && typo.stderr
                    == """
                        vault: 'ad' is not a vault command\nvault: hint: did you mean 'vault add'? 'vault --help' \
                        lists the commands\n
                        """,
            "\(typo.stderr)")
        s.write("a.txt", Array("a".utf8))
        let id = s.run("add", "a.txt").out.trimmingCharacters(in: .newlines)
        #expect(s.run("ls").out.contains("a.txt"))
        #expect(s.run("cat", "a.txt").out == "a")
        // An empty vault exports nothing, successfully (a daily cron on an empty day), as upload does.
        let t = Sandbox()
        t.initVault()
        let empty = t.run("export", "--out", "daily")
        #expect(
            empty.status == 0
                && empty.stderr == "vault: nothing to export: the vault is empty (nothing was written to daily)\n",
            "\(empty.stderr)")
        #expect(!FileManager.default.fileExists(atPath: t.path("daily")))
        // --since takes an age; --doc shows that document's lines only.
        #expect(s.run("log", "--since", "1h").out.contains("add"))
        #expect(
            s.run("log", "--since", "1h", "--doc", String(id.prefix(6))).out.components(separatedBy: "a.txt").count == 2
        )
        // --range -N: the last N bytes (a suffix range, as in HTTP).
        s.write("b.bin", .random(5000, seed: 3))
        #expect(s.run("add", "b.bin").status == 0)
        #expect(s.run("get", "b.bin", "--range", "-100").stdout == Array([UInt8].random(5000, seed: 3).suffix(100)))
        // VAULT_PASSWORD_FILE, as restic's RESTIC_PASSWORD_FILE.
        s.write("pw.txt", Array("correct horse battery\n".utf8))
        #expect(
            s.run(["list", "--json"], env: ["VAULT_PASSWORD": nil, "VAULT_PASSWORD_FILE": s.path("pw.txt")]).status == 0
        )
        s.write("wrong.txt", Array("nope".utf8))
        let wrong = s.run(["list"], env: ["VAULT_PASSWORD": nil, "VAULT_PASSWORD_FILE": s.path("wrong.txt")])
        #expect(
            wrong.status == 77
                && wrong.stderr.contains("check the password file \(s.path("wrong.txt")) (VAULT_PASSWORD_FILE)"),
            "\(wrong.stderr)")
    }

    @Test func anEmptyPasswordIsRefusedAtTheFirstPrompt() throws {
        let s = Sandbox()
        let r = Self.atTerminal(s, "\"$1\" init --kdf insecure-test", typed: "\n", env: ["VAULT_PASSWORD": nil])
        #expect(r.status == 64, "\(r.out)")
        #expect(r.out.contains("vault: the password is empty") && !r.out.contains("Repeat password"), "\(r.out)")
    }

    @Test func anInterruptedOrKilledExportLeavesNothingInTheWay() throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: 96, seed: 4)
        #expect(s.run("add", "big.bin").status == 0)
        for signal in [SIGTERM, SIGINT] {
            let pid = s.spawn(["export", "--out", "new/outbox/"])
            // Once the temporary payload exists, the first batch is under way.
            #expect(
                poll(every: 10_000) {
                    ((try? FileManager.default.contentsOfDirectory(atPath: s.path("new/outbox"))) ?? []).contains {
                        $0.hasPrefix(".vault-tmp-")
                    }
                })
            kill(pid, signal)
            let r = s.wait(pid)
            #expect(r.status == 130, "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: s.path("new")), "signal \(signal) left the folders it made")
        }
        // Ctrl-C after a batch completed: the manifest marks the rest interrupted, and the next
        // export replaces them (only a finished export's files need --force).
        // Batches go oldest first: big.bin's, then later.bin's, which is still being written when
        // the signal comes.
        try s.writeLarge("later.bin", mebibytes: 64, seed: 5)
        #expect(s.run("add", "later.bin").status == 0)
        let stopping = s.spawn(["export", "big.bin", "later.bin", "--batch-size", "1", "--out", "stopped"])
        // Batch 1 in place and batch 2's temporary payload begun: the signal lands mid-batch 2.
        #expect(
            poll(every: 5_000) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: s.path("stopped"))) ?? []
                return names.contains("batch-0001.json") && names.contains { $0.hasPrefix(".vault-tmp-") }
            })
        kill(stopping, SIGINT)
        #expect(s.wait(stopping).status == 130)
        let resumed = s.run("export", "big.bin", "later.bin", "--batch-size", "1", "--out", "stopped")
        #expect(
            resumed.status == 0 && resumed.stderr.hasPrefix("vault: warning: replaced what the unfinished export "),
            "\(resumed.stderr)")
        let finished = s.run("export", "--out", "stopped")
        #expect(finished.status == 73, "a finished export's files need --force: \(finished.stderr)")
        let pid = s.spawn(["export", "--out", "killed"])
        // The manifest in place and the payload's temporary file begun: killed mid-batch.
        #expect(
            poll(every: 10_000) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: s.path("killed"))) ?? []
                return names.contains("manifest.json") && names.contains { $0.hasPrefix(".vault-tmp-") }
            })
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let again = s.run("export", "--out", "killed")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.hasPrefix("vault: warning: replaced what the unfinished export "), "\(again.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: s.path("killed")).sorted()
        #expect(left == ["batch-0001.json", "manifest.json"], "no hidden payload stays: \(left)")
    }

    /// `vault tag`: tags change in the history; every selection, a rebuilt index and an audit
    /// see them.
    @Test func tagsChangeAfterAddAndSurviveARebuild() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        s.write("b.txt", Array("beta".utf8))
        #expect(s.run("add", "a.txt", "--tag", "inbox").status == 0)
        #expect(s.run("add", "b.txt").status == 0)
        let tagged = s.run("tag", "a.txt", "b.txt", "--add", "2026", "--remove", "inbox", "--json")
        #expect(tagged.status == 0 && tagged.stderr.isEmpty, "\(tagged.stderr)")
        AuditCLITests.write(s.path("tag.json"), tagged.stdout)
        #expect(Fixtures.validate(s.path("tag.json"), schema: "tag").status == 0)
        #expect(
            tagged.out.contains("\"name\":\"a.txt\",\"tags\":[\"2026\"]")
                && tagged.out.contains("\"name\":\"b.txt\",\"tags\":[\"2026\"]"), "\(tagged.out)")
        #expect(s.run("list", "--tag", "inbox").status == 3, "inbox is gone from a.txt")
        #expect(s.run("export", "--tag", "2026", "--out", "out", "-q").status == 0)
        #expect(s.run("log").out.contains("(+2026 -inbox)"))
        // The index is derived: deleted, it is rebuilt with the history's tags.
        try FileManager.default.removeItem(atPath: s.path("vault/index.db"))
        #expect(s.run("list", "--tag", "2026", "--json").out.components(separatedBy: "\"id\"").count == 3)
        let audit = s.run("audit")
        #expect(audit.status == 0 && audit.out.contains("clean"), "\(audit.out)")
        #expect(s.run("verify", "-q").status == 0)
        // Refused before anything changes.
        let both = s.run("tag", "a.txt", "--add", "x", "--remove", "x")
        #expect(both.status == 64 && both.stderr.hasPrefix("vault: the tag 'x' cannot be added and removed at once\n"))
        #expect(s.run("tag", "a.txt").status == 64)
    }

    /// A warning the bar prints is cut to the terminal's width on a terminal only: into a file
    /// (a cron job's log) it is whole.
    @Test func warningsAreWholeInAFile() throws {
        let s = Sandbox()
        s.initVault()
        let name = "a-rather-long-document-name-that-goes-on-past-eighty-columns-on-its-own.pdf"
        let id = s.run(["add", "-", "--name", name], stdin: .random(200_000, seed: 8)).out.trimmingCharacters(
            in: .newlines)
        s.write("ok.txt", Array("fine".utf8))
        #expect(s.run("add", "ok.txt").status == 0)
        let object = s.path("vault/objects/\(id).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let r = s.run(["export", "--out", "out", "--skip-bad", "--progress", "bar"], env: ["COLUMNS": "80"])
        #expect(r.status == 2, "\(r.stderr)")
        let warning = try #require(
            r.stderr.split(separator: "\n").first { $0.contains("warning: skipped") }, "\(r.stderr)")
        #expect(warning.count > 80 && warning.contains(name) && !warning.hasSuffix("…"), "cut in a file: \(warning)")
    }

    /// What a review through the binary found after the first pass: previews that must predict
    /// what the command does, exclusions, and what is shown.
    @Test func previewsPredictTheCommandAndExclusionsSayWhatTheyDid() throws {
        let s = Sandbox()
        // A dry run checks what the command would: the vault, the folder.
        try FileManager.default.createDirectory(atPath: s.path("inbox/.git"), withIntermediateDirectories: true)
        s.write("inbox/a.txt", Array("a".utf8))
        s.write("inbox/.git/HEAD", Array("ref".utf8))
        let noVault = s.run("add", "-r", "inbox", "--dry-run")
        #expect(noVault.status == 3 && noVault.stderr.hasPrefix("vault: no vault at "), "\(noVault.stderr)")
        s.initVault()
        let pruned = s.run("add", "-r", "inbox/", "--exclude", ".git", "--dry-run")
        #expect(
            pruned.status == 0 && pruned.out == "would add a.txt (1 B)\nleft out inbox/.git (excluded)\n",
            "paths as typed, a folder left out whole: \(pruned.out)")
        #expect(s.run("add", "-r", "inbox", "--exclude", ".git").status == 0)
        let emptyDry = Sandbox()
        emptyDry.initVault()
        let nothing = emptyDry.run("export", "--out", "o", "--dry-run")
        #expect(
            nothing.status == 0 && nothing.out.isEmpty
                && nothing.stderr == "vault: dry run: nothing to export: the vault is empty\n", "\(nothing.stderr)")
        #expect(s.run("export", "--out", "done", "-q").status == 0)
        let taken = s.run("export", "--out", "done", "--dry-run")
        #expect(
            taken.status == 73 && taken.stderr.hasPrefix("vault: done already holds batch-0001.json"),
            "a dry run checks the folder: \(taken.stderr)")
        // --exclude leaving out the whole selection is said as such, exit 0, by export and upload alike.
        let excluded = s.run("export", "--out", "x", "--exclude", "a.txt")
        #expect(
            excluded.status == 0
                && excluded.stderr
                    == """
                        vault: nothing to export: --exclude leaves out every selected document (nothing was written \
                        to x)\n
                        """,
            "\(excluded.stderr)")
        let r = Receiver(in: s)
        let up = s.run(["upload", "--url", r.url, "--exclude", "a.txt"], env: Fixtures.uploadToken)
        #expect(
            up.status == 0
                && up.stderr == "vault: nothing to send to \(r.url): --exclude leaves out every selected document\n",
            "\(up.stderr)")
        // A mistyped command with options gets the suggestion too.
        let typo = s.run("lst", "--json")
        #expect(
            typo.status == 64
                && typo.stderr
                    == """
                        vault: 'lst' is not a vault command\nvault: hint: did you mean 'vault list'? 'vault --help' \
                        lists the commands\n
                        """,
            "\(typo.stderr)")
        // A hidden file that is not one of vault's temporary files is left alone by an export.
        try FileManager.default.createDirectory(atPath: s.path("keep"), withIntermediateDirectories: true)
        s.write("keep/.vault-tmp-notes", Array("mine".utf8))
        #expect(s.run("export", "--out", "keep", "-q").status == 0)
        #expect(FileManager.default.fileExists(atPath: s.path("keep/.vault-tmp-notes")))
        // A host with a control character in it is no destination; JSON writes bidi controls escaped.
        let host = s.run("destination", "add", "x", "https://ex%1b%5b31mample.com/in")
        #expect(
            host.status == 64 && host.stderr.contains("its host holds a percent-encoded control character"),
            "\(host.stderr)")
        #expect(s.run(["add", "-", "--name", "in\u{202E}fdp.exe"], stdin: [1]).status == 0)
        let json = s.run("list", "--json")
        #expect(json.out.contains("in\\u202efdp.exe") && !json.out.contains("\u{202E}"), "\(json.out)")
        #expect(
            (try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [[String: Any]])?.contains {
                $0["name"] as? String == "in\u{202E}fdp.exe"
            } == true,
            "the same string to a parser")
        // A tag reads the same wherever tags are listed.
        let comma = s.run("tag", "a.txt", "--add", "a,b")
        #expect(
            comma.status == 64 && comma.stderr.contains("a tag has no control characters or commas"), "\(comma.stderr)")
        // VAULT_PASSWORD_FILE naming a folder: said so, with no advice meant for documents.
        let folder = s.run(["list"], env: ["VAULT_PASSWORD": nil, "VAULT_PASSWORD_FILE": s.path("inbox")])
        #expect(
            folder.status == 64 && folder.stderr.hasPrefix("vault: VAULT_PASSWORD_FILE: ")
                && !folder.stderr.contains("use -r"), "\(folder.stderr)")
    }
}
