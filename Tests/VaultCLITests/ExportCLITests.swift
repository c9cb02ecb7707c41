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
}
