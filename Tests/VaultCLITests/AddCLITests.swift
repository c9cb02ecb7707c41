import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `vault add`, on the built binary: the writer lock, duplicates, types, unreadable folders, litter
/// and exclusions, tags, an add that stops partway, and concurrent adds.
@Suite(.blocking) struct AddCLITests {
    @Test func addThatCannotTakeTheLockAddsNothing() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        try FileManager.default.removeItem(atPath: s.path("vault/lock"))
        try FileManager.default.createDirectory(atPath: s.path("vault/lock"), withIntermediateDirectories: false)
        let r = s.run("add", "a.txt")
        #expect(r.status == 64, "\(r.stderr)")
        #expect(
            r.stderr
                == "vault: cannot add a.txt: \(s.path("vault/lock")) is a directory\nvault: hint: it was not added\n")
        #expect(
            Fixtures.entries(s.path("vault/objects")).isEmpty,
            "the object was not committed: \(Fixtures.entries(s.path("vault/objects")))")
    }

    @Test func duplicatesAreNamedAndAddedOnlyWhenAllowed() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("same".utf8))
        s.write("b.txt", Array("same".utf8))
        s.write("c.txt", Array("other".utf8))
        let first = s.run("add", "a.txt")
        let id = first.out.trimmingCharacters(in: .newlines)
        let r = s.run("add", "b.txt", "c.txt")
        #expect(r.status == 2, "partial: c.txt was added, b.txt was not")
        #expect(
            r.stderr == "vault: warning: b.txt was not added: its contents are already in the vault as \(id) (a.txt)\n"
                + """
                    vault: 1 of 2 files was not added\nvault: hint: they are named above; --allow-duplicate adds a \
                    file whose contents are already in the vault\n
                    """
        )
        #expect(Fixtures.lastRecord(s)?["outcome"] as? String == "partial")
        #expect(r.out.split(separator: "\n").count == 1, "c.txt was still added")
        #expect(s.run("add", "b.txt", "--allow-duplicate").status == 0)
        #expect(s.objects.filter { $0.hasSuffix(".vlt") }.count == 3)
    }

    @Test func anEmptyFileTakesItsTypeFromItsExtension() throws {
        let s = Sandbox()
        s.initVault()
        for name in ["notes.txt", "scan.PDF", "blob", "photo.jpeg", "archive.xyz"] { s.write(name, []) }
        #expect(
            s.run("add", "notes.txt", "scan.PDF", "blob", "photo.jpeg", "archive.xyz", "--allow-duplicate").status == 0)
        let list = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        let types = Dictionary(uniqueKeysWithValues: list.map { ($0["name"] as! String, $0["contentType"] as! String) })
        #expect(
            types == [
                "notes.txt": "text/plain", "scan.PDF": "application/pdf", "blob": "application/octet-stream",
                "photo.jpeg": "image/jpeg", "archive.xyz": "application/octet-stream"
            ])
    }

    /// Found in a week of a scanning station: `.docx` and `.mp4` were `application/octet-stream`
    /// (types came from magic bytes only). The extension now names a type the bytes agree with,
    /// and never makes binary bytes text nor text a container type.
    @Test func theExtensionNamesTheTypeWhenTheBytesAgree() throws {
        let s = Sandbox()
        s.initVault()
        let zip: [UInt8] = [0x50, 0x4B, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00]
        let media: [UInt8] = [0, 0, 0, 0x20] + Array("ftypisom".utf8) + [0, 0, 2, 0]
        let files: [(String, [UInt8], String)] = [
            ("report.docx", zip + [1], "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            ("sheet.XLSX", zip + [2], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            ("letter.odt", zip + [3], "application/vnd.oasis.opendocument.text"),
            ("clip.mp4", media + [4], "video/mp4"), ("clip.mov", media + [5], "video/quicktime"),
            ("voice.m4a", media + [6], "audio/mp4"), ("table.csv", Array("a,b\n1,2\n".utf8), "text/csv"),
            ("notes.md", Array("# Notes\n".utf8), "text/markdown"),
            ("data.json", Array("{\"a\":1}".utf8), "application/json"),
            // The bytes disagree: the extension is not believed.
            ("fake.docx", Array("just some text\n".utf8), "text/plain"),
            ("fake.csv", [0, 1, 2, 3, 0xFF], "application/octet-stream"),
            ("fake.mp4", zip + [7], "application/octet-stream"),
            ("scan.pdf.docx", Array("%PDF-1.7\n".utf8) + [0xE2, 0xE3], "application/pdf")
        ]
        try FileManager.default.createDirectory(atPath: s.path("in"), withIntermediateDirectories: true)
        for (name, bytes, _) in files { s.write("in/" + name, bytes) }
        let added = s.run("add", "-r", "in")
        #expect(added.status == 0, "\(added.stderr)")
        let list = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        let types = Dictionary(uniqueKeysWithValues: list.map { ($0["name"] as! String, $0["contentType"] as! String) })
        #expect(types == Dictionary(uniqueKeysWithValues: files.map { ($0.0, $0.2) }))
    }

    /// `add -r` from cron: Office's lock files are litter, and the one-line summary reaches the
    /// log even though standard error is not a terminal (`-q` silences it).
    @Test func aRecursiveAddLeavesOutOfficeLockFilesAndSaysWhatItDidInALog() throws {
        let s = Sandbox()
        s.initVault()
        for folder in ["inbox", "more"] {
            try FileManager.default.createDirectory(atPath: s.path(folder), withIntermediateDirectories: true)
        }
        s.write("inbox/report.docx", [0x50, 0x4B, 0x03, 0x04, 9])
        s.write("inbox/~$report.docx", Array("owner".utf8))
        s.write("inbox/b.txt", Array("beta".utf8))
        let added = s.run("add", "-r", "inbox")
        #expect(added.status == 0)
        #expect(added.stdout.filter { $0 == 0x0A }.count == 2, "two ids: \(added.out)")
        #expect(added.stderr == "vault: added 2 documents (9 B), 1 left out by exclusions\n", "\(added.stderr)")
        s.write("more/c.txt", Array("gamma".utf8))
        let quiet = s.run("add", "-r", "more", "-q")
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let names = s.run("list").out
        #expect(!names.contains("~$"), "\(names)")
    }

    @Test func anUnreadableFolderFailsARecursiveAddLikeAnUnreadableFile() throws {
        let s = Sandbox()
        chmod(s.dir, 0o711)
        let box = s.path("box")
        try FileManager.default.createDirectory(atPath: box + "/inbox/locked", withIntermediateDirectories: true)
        s.write("box/inbox/a.txt", Array("alpha".utf8))
        s.write("box/inbox/locked/b.txt", Array("beta".utf8))
        for p in [box, box + "/inbox", box + "/inbox/locked", box + "/inbox/a.txt", box + "/inbox/locked/b.txt"] {
            chown(p, 65534, 65534)
        }
        let env: [String: String?] = ["VAULT_DIR": box + "/v", "HOME": box]
        #expect(s.runAsNobody(["init", "--kdf", "insecure-test"], env: env).status == 0)
        chmod(box + "/inbox/locked", 0)
        let r = s.runAsNobody(["add", "-r", box + "/inbox"], env: env)
        let shown = box  // as the user wrote it
        #expect(r.status == 74, "\(r.stderr)")
        #expect(
            r.stderr == "vault: cannot list \(shown)/inbox/locked: permission denied\nvault: hint: nothing was added\n")
        #expect(Fixtures.entries(box + "/v/objects").isEmpty)
        chmod(box + "/inbox/locked", 0o700)
        chmod(box + "/inbox/a.txt", 0)
        let file = s.runAsNobody(["add", "-r", box + "/inbox"], env: env)
        #expect(file.status == 74)
        #expect(file.stderr == "vault: \(shown)/inbox/a.txt: permission denied\nvault: hint: nothing was added\n")
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
        Fixtures.write(s.path("tag.json"), tagged.stdout)
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
        let record = try #require(Fixtures.lastRecord(s))
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

    @Test func fourConcurrentAddsLoseNothingAndReadersSeeAConsistentVault() throws {
        let s = Sandbox()
        s.initVault()
        for p in 0..<4 {
            try FileManager.default.createDirectory(atPath: s.path("in\(p)"), withIntermediateDirectories: true)
            for i in 0..<25 { s.write("in\(p)/f\(i).bin", .random(5000 + i, seed: UInt64(p * 100 + i))) }
        }
        let pids = (0..<4).map { p in s.spawn(["add", "-r", "in\(p)"]) }
        // Readers start once the first document is committed (before that, "there are no
        // documents to export" is the right answer), run beside the writers, and must always see
        // a consistent vault.
        poll(every: 2000) { s.objects.contains(where: { $0.hasSuffix(".vlt") }) }
        var readerFailures: [String] = []
        for _ in 0..<5 {
            let l = s.run("list", "--json")
            if l.status != 0 {
                readerFailures.append("list: \(l.stderr)")
            } else if (try? JSONSerialization.jsonObject(with: Data(l.stdout))) == nil {
                readerFailures.append("list printed invalid JSON")
            }
            let e = s.run("export", "--out", "-", "--batch-size", "200")
            if e.status != 0 {
                readerFailures.append("export: \(e.stderr)")
            } else if (try? JSONSerialization.jsonObject(with: Data(e.stdout))) == nil {
                readerFailures.append("export printed invalid JSON")
            }
        }
        let results = pids.map { s.wait($0) }
        for r in results { #expect(r.status == 0, "\(r.stderr)") }
        #expect(readerFailures.isEmpty, "\(readerFailures)")
        let ids = results.flatMap { $0.out.split(separator: "\n").map(String.init) }
        #expect(ids.count == 100 && Set(ids).count == 100)
        let listed = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        #expect(Set(listed.map { $0["id"] as! String }) == Set(ids))
        Fixtures.vaultIsIntact(s, documents: 100)
    }
}
