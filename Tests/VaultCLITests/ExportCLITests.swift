import Crypto
import Foundation
import Testing

@Suite(.blocking) struct ExportCLITests {
    static func addSamples(_ s: Sandbox, count: Int, size: Int = 1000) -> [String] {
        (0..<count).map { i in
            let r = s.run(
                "add", "-", "--name", "doc \(i).bin", "--tag", i % 2 == 0 ? "even" : "odd",
                stdin: .random(size + i, seed: UInt64(i + 1)))
            precondition(r.status == 0, r.stderr)
            return r.out.trimmingCharacters(in: .newlines)
        }
    }

    static func payload(_ path: String) throws -> [[String: Any]] {
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        return json["Files"] as! [[String: Any]]
    }

    @Test func exportToAFolderWritesBatchesAndAManifest() throws {
        let s = Sandbox()
        s.initVault()
        let ids = Self.addSamples(s, count: 45)
        let r = s.run("export", "--out", "out", "--progress", "json")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.isEmpty, "nothing on stdout when writing to a folder")
        let names = try FileManager.default.contentsOfDirectory(atPath: s.path("out")).sorted()
        #expect(names == ["batch-0001.json", "batch-0002.json", "batch-0003.json", "manifest.json"])
        var seen: [String] = []
        for n in names.dropLast() {
            for file in try Self.payload(s.path("out/" + n)) {
                let data = Data(base64Encoded: file["Data"] as! String)!
                #expect(
                    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() == file["SHA256"] as? String)
                seen.append(file["Id"] as! String)
            }
        }
        #expect(seen == ids)
        // Only JSON lines: the `finished` event is the summary.
        let events = r.events
        #expect(!events.contains { $0 == nil }, "\(r.stderr)")
        #expect(events.first??["event"] as? String == "started")
        let finished = events.last ?? nil
        #expect(
            finished?["event"] as? String == "finished" && finished?["batches"] as? Int == 3
                && finished?["documents"] as? Int == 45
                && finished?["skipped"] as? Int == 0)

        let again = s.run("export", "--out", "out")
        #expect(again.status == 73)
        #expect(
            again.stderr
                == """
                    vault: out already holds batch-0001.json, batch-0002.json, batch-0003.json, …\nvault: hint: use \
                    --force to replace them, or another --out folder\n
                    """
        )
        #expect(s.run("export", "--out", "out", "--force").status == 0)
        let mode =
            try FileManager.default.attributesOfItem(atPath: s.path("out/batch-0001.json"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func stdoutTagSelectionShapeAndLimits() throws {
        let s = Sandbox()
        s.initVault()
        let ids = Self.addSamples(s, count: 6, size: 3000)
        let r = s.run("export", "--out", "-", "--tag", "odd", "--shape", "strings")
        #expect(r.status == 0, "\(r.stderr)")
        let files = (try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any])["Files"] as! [String]
        #expect(files.count == 3)
        #expect(files.map { Data(base64Encoded: $0)!.count } == [3001, 3003, 3005])
        let one = s.run("export", ids[1], ids[4].prefix(6).description, "--out", "-")
        #expect(
            try ((JSONSerialization.jsonObject(with: Data(one.stdout)) as! [String: Any])["Files"] as! [[String: Any]])
                .map { $0["Id"] as! String } == [ids[1], ids[4]])
        let split = s.run("export", "--out", "-", "--batch-size", "2")
        #expect(split.status == 64)
        #expect(
            split.stderr
                == """
                    vault: a stream holds a single batch, but the selection needs 3\nvault: hint: use --out DIR, \
                    raise --batch-size/--max-bytes, or select fewer documents\n
                    """
        )
        let k = s.run("export", "--out", "k", "--max-bytes", "9K")
        #expect(k.status == 0, "\(k.stderr)")
        let batches = try FileManager.default.contentsOfDirectory(atPath: s.path("k")).filter { $0.hasPrefix("batch-") }
        #expect(batches.count == 3)
        for b in batches {
            #expect((try FileManager.default.attributesOfItem(atPath: s.path("k/" + b))[.size] as! Int) <= 9 * 1024)
        }
        let tooSmall = s.run("export", "--out", "small", "--max-bytes", "1K")
        #expect(tooSmall.status == 64)
        #expect(
            tooSmall.stderr.hasPrefix(
                """
                    vault: document \(ids[0].prefix(12)) (doc 0.bin) needs a payload of 4.1 KiB, more than the limit \
                    of 1.0 KiB\nvault: hint: use --max-bytes 5K or more, or leave this document out\n
                    """
            ))
        #expect(!FileManager.default.fileExists(atPath: s.path("small/batch-0001.json")))
        for bad in [
            ["--batch-size", "0"], ["--max-bytes=-5"], ["--max-bytes", "12X"], ["--max-bytes", "0"], ["--shape", "xml"]
        ] {
            let u = s.run(["export", "--out", "u"] + bad)
            #expect(u.status == 64, "\(bad)")
            #expect(
                u.stderr.hasPrefix("vault: ") && u.stderr.contains("\nvault: hint: see 'vault export --help'\n"),
                "\(u.stderr)")
        }
        let none = s.run("export", "--out", "-", "--tag", "nope")
        #expect(none.status == 3)
        #expect(none.stderr == "vault: no documents have the tag 'nope'\n")
    }

    @Test func damagedDocumentStopsOrIsSkipped() throws {
        let s = Sandbox()
        s.initVault()
        let ids = Self.addSamples(s, count: 3, size: 200_000)
        let object = s.path("vault/objects/\(ids[1]).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 10] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))

        let stop = s.run("export", "--out", "stop")
        #expect(stop.status == 65)
        #expect(
            stop.stderr
                == """
                    vault: document \(ids[1]): chunk 3 failed authentication\nvault: hint: the document is damaged or \
                    was tampered with\n
                    """
        )
        #expect(!FileManager.default.fileExists(atPath: s.path("stop")), "the folder the export made goes with it")

        let skip = s.run("export", "--out", "skip", "--skip-bad")
        #expect(skip.status == 2)
        #expect(
            skip.stderr.contains(
                """
                    vault: warning: skipped \(ids[1].prefix(12)) doc 1.bin: document \(ids[1]): chunk 3 failed \
                    authentication\n
                    """
            ))
        #expect(
            skip.stderr.hasSuffix(
                "vault: 1 damaged document was left out\nvault: hint: run 'vault verify' for details\n"))
        #expect(try Self.payload(s.path("skip/batch-0001.json")).map { $0["Id"] as! String } == [ids[0], ids[2]])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: s.path("skip/manifest.json"))))
            as! [String: Any]
        let skipped = ((manifest["batches"] as! [[String: Any]])[0]["skipped"] as! [[String: Any]]).map {
            $0["id"] as! String
        }
        #expect(skipped == [ids[1]])

        let stream = s.run("export", "--out", "-", "--skip-bad")
        #expect(stream.status == 2)
        #expect(
            try
                ((JSONSerialization.jsonObject(with: Data(stream.stdout)) as! [String: Any])["Files"]
                as! [[String: Any]]).count == 2)
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
        Fixtures.write(s.path("written.json"), escape.stdout)
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

    @Test func forceRemovesBatchFilesOfAnEarlierRun() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 3)
        #expect(s.run("export", "--out", "out", "--batch-size", "1").status == 0)
        #expect(
            Fixtures.entries(s.path("out"))
                == ["batch-0001.json", "batch-0002.json", "batch-0003.json", "manifest.json"])
        let again = s.run("export", "--out", "out", "--batch-size", "3", "--force")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            Fixtures.entries(s.path("out")) == ["batch-0001.json", "manifest.json"],
            "no batch file the manifest does not list")
        // Without --force, any earlier batch file is refused, by name, not only those the plan reuses.
        try FileManager.default.moveItem(atPath: s.path("out/batch-0001.json"), toPath: s.path("out/batch-0007.json"))
        try FileManager.default.removeItem(atPath: s.path("out/manifest.json"))
        let refused = s.run("export", "--out", "out")
        #expect(refused.status == 73)
        #expect(
            refused.stderr
                == """
                    vault: out already holds batch-0007.json\nvault: hint: use --force to replace them, or another \
                    --out folder\n
                    """
        )
    }

    @Test func listAndExportAgreeOnATagNoDocumentHas() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let list = s.run("list", "--tag", "nosuch")
        let export = s.run("export", "--tag", "nosuch", "--out", "o")
        #expect(list.status == 3 && export.status == 3)
        #expect(list.stderr == "vault: no documents have the tag 'nosuch'\n")
        #expect(export.stderr == list.stderr)
        #expect(s.run("list", "--json").status == 0, "no filter: every document, even none, is fine")
    }
}
