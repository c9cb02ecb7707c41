import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the commands print, on the built binary: the progress bar on a terminal, `--progress json`,
/// `--quiet` and `--json` (each result validated against its schema), names and hosts shown not
/// obeyed, hints that say what is true, whole warning lines, and no binary on a terminal.
@Suite(.blocking) struct OutputCLITests {
    @Test func theBarFitsTheTerminalAndShortensTheName() throws {
        let s = Sandbox()
        s.initVault()
        let name = "a very long document name that goes on and on past any terminal.pdf"
        try s.writeLarge("big.bin", mebibytes: 64, seed: 5)
        #expect(s.run("add", "big.bin", "--name", name).status == 0)
        for columns in [40, 60, 80, 100] {
            let screen = Fixtures.onTerminal(
                s, columns: columns, "export --out out\(columns) --progress bar", env: ["TERM": "xterm"])
            let bars = Fixtures.redraws(screen).filter { $0.hasPrefix("batch ") }
            #expect(!bars.isEmpty, "\(screen)")
            for line in bars { #expect(line.count <= columns - 1, "\(columns) columns: '\(line)' (\(line.count))") }
            #expect(screen.contains("\u{1B}[2K"))
            if columns == 100 {
                #expect(bars.contains { $0.contains(" a very long document") && $0.contains("…") }, "\(bars)")
            }
            // At 80 columns the ETA keeps its place (a redraw midway, with bytes done and a rate, shows it).
            if columns >= 80 && bars.count > 2 { #expect(bars.contains { $0.contains("  ETA ") }, "\(bars)") }
            // One unit system: the bar and the summary both count in binary units.
            #expect(bars.allSatisfy { $0.contains(" MiB") && !$0.contains(" MB") })
            #expect(screen.contains("vault: exported 1 document (64 MiB) in 1 batch (85 MiB of payload)"), "\(screen)")
        }
    }

    @Test(arguments: [["TERM": "dumb"], ["TERM": "xterm", "NO_COLOR": "1"]] as [[String: String?]])
    func plainTerminalsGetNoEscapeCodes(env: [String: String?]) throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: 32, seed: 6)
        #expect(s.run("add", "big.bin").status == 0)
        let screen = Fixtures.onTerminal(s, columns: 80, "export --out out --progress bar", env: env)
        #expect(!screen.contains("\u{1B}"), "\(screen.debugDescription)")
        #expect(
            Fixtures.redraws(screen).contains { $0.hasPrefix("batch 1/1  doc 1/1 big.bin") },
            "\(screen.debugDescription)")
    }

    @Test func aSlowServerDoesNotFreezeTheBar() throws {
        let s = Sandbox()
        s.initVault()
        s.write("doc.bin", .random(1 << 20, seed: 9))
        #expect(s.run("add", "doc.bin").status == 0)
        // 1.4 MB of payload read at 400 kB/s: about 3.5 s with few blocks sent.
        let r = Receiver(in: s, token: nil, faults: #"[{"action": "slow", "rate": 400000}]"#)
        let started = Date()
        let screen = Fixtures.onTerminal(
            s, columns: 100, "upload --url \(r.url) --progress bar --no-credentials", env: ["TERM": "xterm"])
        let seconds = Date().timeIntervalSince(started)
        let bars = Fixtures.redraws(screen).filter { $0.hasPrefix("batch 1/1  upload") }
        #expect(screen.contains("vault: uploaded 1 document"), "\(screen)")
        // A redraw every 200 ms while the upload runs (events alone gave two or three).
        #expect(Double(bars.count) >= (seconds - 1) / 0.25, "\(bars.count) redraws in \(seconds) s")
    }

    @Test func jsonProgressIsOnlyJSONAndQuietIsQuiet() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 3)
        let json = s.run("export", "--out", "o", "--progress", "json")
        #expect(json.status == 0)
        let lines = json.stderr.split(separator: "\n")
        for line in lines {
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any],
                "not a JSON object: \(line)")
        }
        let last = try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as! [String: Any]
        #expect(last["event"] as? String == "finished" && last["documents"] as? Int == 3 && last["seconds"] is Double)
        let quiet = s.run("export", "--out", "q", "-q")
        #expect(quiet.status == 0 && quiet.stderr.isEmpty && quiet.stdout.isEmpty)
    }

    @Test func jsonResultsOnStdout() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        s.write("b.txt", Array("beta".utf8))
        func object(_ r: CLIResult) -> [String: Any]? {
            #expect(r.out.hasSuffix("\n") && r.out.split(separator: "\n").count == 1, "one line: \(r.out)")
            return try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any]
        }
        let add = object(s.run("add", "a.txt", "b.txt", "--json"))
        let added = add?["added"] as? [[String: Any]] ?? []
        #expect(added.map { $0["name"] as? String } == ["a.txt", "b.txt"])
        #expect(added.first?["contentType"] as? String == "text/plain" && added.first?["size"] as? Int == 5)
        let ids = added.compactMap { $0["id"] as? String }
        let r = Receiver(in: s, token: nil)
        let upload = object(s.run("upload", "--url", r.url, "--json", "--no-credentials"))
        #expect(
            upload?["documents"] as? Int == 2 && upload?["batches"] as? Int == 1
                && upload?["target"] as? String == r.url)
        let export = object(s.run("export", "--out", "o", "--json"))
        // Added in one command, the two may share a millisecond; the batch holds both either way.
        #expect(Set((export?["batches"] as? [[String: Any]])?.first?["documents"] as? [String] ?? []) == Set(ids))
        #expect(export?["out"] as? String == "o" && export?["payloadBytes"] as? Int != nil)
        let remove = object(s.run("remove", ids[0], "--json"))
        #expect(remove?["removed"] as? [String] == [ids[0]])
        let bad = s.run("export", "--out", "-", "--json")
        #expect(bad.status == 64 && bad.stderr.hasPrefix("vault: --json needs --out DIR"))
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
            Fixtures.write(s.path("out.json"), r.stdout)
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

    @Test func binaryIsNeverWrittenToATerminal() throws {
        let s = Sandbox()
        s.initVault()
        s.write("img.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 1, 2])
        s.write("note.txt", Array("hello terminal\n".utf8))
        #expect(s.run("add", "img.png", "note.txt").status == 0)
        // `script` gives the command a pseudo-terminal as its stdout.
        func onTTY(_ args: String) -> String {
            let r = Process()
            r.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            r.arguments = ["-qec", "\(Sandbox.binary) \(args); echo \"[exit $?]\"", "/dev/null"]
            r.environment = s.env
            let pipe = Pipe()
            r.standardOutput = pipe
            r.standardInput = FileHandle.nullDevice
            try? r.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            r.waitUntilExit()
            return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
        }
        let bin = onTTY("get img.png")
        #expect(
            bin.contains(
                """
                    vault: refusing to write image/png data to a terminal\nvault: hint: use -o FILE, or redirect \
                    standard output\n[exit 64]
                    """
            ), "\(bin)")
        #expect(!bin.contains("PNG"))
        #expect(onTTY("get note.txt").contains("hello terminal\n[exit 0]"))
        #expect(onTTY("export --out -").contains("vault: refusing to write the payload to a terminal"))
    }
}
