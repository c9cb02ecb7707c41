import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Previews, on the built binary: what `remove` and `upload --dry-run` say they would do is what
/// the command then does; a removal is confirmed on a terminal and says what it removed.
@Suite(.blocking) struct PreviewCLITests {
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
        let no = Fixtures.atTerminal(
            s, "\"$1\" remove " + ids.map { String($0.prefix(8)) }.joined(separator: " "), typed: "n\n")
        #expect(no.status == 64, "\(no.out) \(no.stderr)")
        #expect(
            no.out.contains("about to remove 7 documents (70 B)") && no.out.contains("doc6.txt")
                && no.out.contains("remove them? [y/N]"), "\(no.out)")
        #expect(no.out.contains("nothing was removed (not confirmed)"), "\(no.out)")
        #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count == 8)
        let yes = Fixtures.atTerminal(
            s, "\"$1\" remove " + ids.prefix(6).map { String($0.prefix(8)) }.joined(separator: " "), typed: "y\n")
        #expect(
            yes.status == 0 && yes.out.contains("vault: removed 6 documents (60 B): doc0.txt, doc1.txt"), "\(yes.out)")
        // A script (no terminal) is not asked; ids on stdout, what they were on stderr.
        let scripted = s.run("remove", String(ids[6].prefix(8)))
        #expect(
            scripted.status == 0 && scripted.out == ids[6] + "\n"
                && scripted.stderr == "vault: removed 1 document (10 B): doc6.txt\n", "\(scripted.stderr)")
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

    /// `--exclude` of a document not in the vault (removed since the cron line was written) is
    /// a warning, said once, not an error that stops a scheduled command.
    @Test func anExcludeOfADocumentNotInTheVaultIsAWarning() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        #expect(s.run("add", "a.txt").status == 0)
        let gone = s.run("export", "--out", "x", "--exclude", "a.txt", "--exclude", "removed.pdf")
        #expect(
            gone.status == 0
                && gone.stderr
                    == """
                        vault: warning: --exclude removed.pdf: no document matches 'removed.pdf'; there is nothing \
                        to leave out
                        vault: nothing to export: --exclude leaves out every selected document (nothing was written \
                        to x)\n
                        """,
            "\(gone.stderr)")
        let r = Receiver(in: s)
        let up = s.run(["upload", "--url", r.url, "--exclude", "gone.pdf"], env: Fixtures.uploadToken)
        #expect(up.status == 0 && r.statuses == ["200"], "\(up.stderr)")
        #expect(
            up.stderr.hasPrefix("vault: warning: --exclude gone.pdf: no document matches 'gone.pdf'; there is nothing"),
            "\(up.stderr)")
    }
}
