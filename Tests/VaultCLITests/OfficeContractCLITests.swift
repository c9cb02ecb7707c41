import Foundation
import Testing
import VaultTestSupport

/// One contract across the wire (docs/RECEIVE.md, "What a document is at the office"): what a
/// station adds with `add -r` — names with folders, tags — its own receiver takes and keeps the
/// same way in every protocol, plain and sealed; the office finds a document by the id its station
/// reported; a name no back office takes is known at the station before anything is sent.
@Suite(.blocking) struct OfficeContractCLITests {
    /// The station's files under `inbox/`: folders, a space, a name decomposed as macOS writes it.
    static let files: [(path: String, bytes: [UInt8])] = [
        ("2026/03/scan.pdf", .random(70_001, seed: 11)), ("clients/Acme GmbH/offer.pdf", .random(5, seed: 12)),
        ("cafe\u{301}/note.txt", Array("hello".utf8)), ("top.txt", [])
    ]

    /// What the office keeps as each file's name: the path under `inbox/`, in NFC.
    static func kept(_ path: String) -> String { path.replacingOccurrences(of: "e\u{301}", with: "\u{E9}") }

    /// A station of ``files`` added by `add -r` with two tags, and one document whose name holds
    /// a tab (added with a warning); its id, and the station's id of each file (by its path).
    static func station(_ s: Sandbox) throws -> (tab: String, ids: [String: String]) {
        s.initVault()
        for f in files {
            let path = s.path("inbox/" + f.path)
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            s.write("inbox/" + f.path, f.bytes)
        }
        let added = s.run("add", "-r", s.path("inbox"), "--tag", "acme", "--tag", "2026 Q1")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.out.split(separator: "\n").count == files.count)
        let listed = try #require(
            try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as? [[String: Any]])
        var ids: [String: String] = [:]
        for d in listed { ids[d["name"] as? String ?? ""] = d["id"] as? String }
        s.write("tab", Array("a tab in its name".utf8))
        let tab = s.run("add", "tab", "--name", "scan\t1.pdf")
        #expect(tab.status == 0, "\(tab.stderr)")
        let id = String(tab.out.prefix(12))
        #expect(
            tab.stderr
                == """
                    vault: warning: \(id) scan\\t1.pdf: its name has a control character, which no back office \
                    takes: uploads will leave it out (add the file again with --name NAME to deliver it)

                    """)
        return (id, ids)
    }

    @Test(arguments: [
        ["--protocol", "json"], ["--protocol", "form"], ["--protocol", "tus"], ["--protocol", "json", "--sealed"],
        ["--protocol", "form", "--sealed"]
    ])
    func foldersAndTagsArriveAsAddedAndTheStationsIdFindsTheDocument(wire: [String]) throws {
        let s = Sandbox()
        let (tab, ids) = try Self.station(s)
        let sealed = wire.contains("--sealed")
        var extra: [String] = []
        var args = wire.filter { $0 != "--sealed" }
        if sealed {
            #expect(s.run("keygen", "--out", s.path("office.key")).status == 0)
            let text = try String(contentsOfFile: s.path("office.key"), encoding: .utf8)
            let recipient = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("# public key: ") }.map { String($0.dropFirst(14)) })
            extra = ["--identity", s.path("office.key")]
            args += ["--recipient", recipient]
        }
        let office = try ReceiverProcess(s, extra: extra)
        let token: [String: String?] = ["VAULT_UPLOAD_TOKEN": office.addStation("warehouse")]
        let url = office.url + (wire.contains("tus") ? "/files/" : "/batches")
        // The dry run names what would be left out, and why.
        let dry = s.run(["upload", "--url", url, "--dry-run"] + args, env: token)
        #expect(dry.status == 0, "\(dry.stderr)")
        let leaving = dry.out.split(separator: "\n").first { $0.hasPrefix("would leave out") }
        #expect(
            leaving.map(String.init)
                == "would leave out  \(tab)  17 B  scan\\t1.pdf  "
                + "(its name has a control character, which no back office takes)",
            "\(dry.out)")
        let r = s.run(["upload", "--url", url] + args, env: token)
        #expect(r.status == 2, "\(r.stderr)")
        let notSent = "vault: 1 document was not sent, as no back office takes its name: \(tab) scan\\t1.pdf\n"
        #expect(r.stderr.contains(notSent), "\(r.stderr)")
        #expect(r.stderr.contains("sealed to 1 recipient") == sealed, "\(r.stderr)")
        // The office keeps every name with its folders, in NFC, with the station's tags.
        let stored = office.documents
        #expect(Set(stored.compactMap { $0["name"] as? String }) == Set(Self.files.map { Self.kept($0.path) }))
        for d in stored { #expect(d["tags"] as? [String] == ["acme", "2026 Q1"], "\(d)") }
        #expect(office.log.contains("sealed=\(sealed)"), "\(office.log)")
        // get -o DIR recreates the folders, byte for byte.
        let out = office.run("get", "--all", "-o", s.path("out"))
        #expect(out.status == 0, "\(out.stderr)")
        for f in Self.files {
            let written = FileManager.default.contents(atPath: s.path("out/" + Self.kept(f.path)))
            #expect(written == Data(f.bytes), "\(f.path)")
        }
        // The id the station reported finds the document at the office.
        for f in Self.files {
            let id = try #require(ids[Self.kept(f.path)])
            let got = office.run("get", String(id.prefix(12)), "-o", "-")
            #expect(got.status == 0 && got.stdout == f.bytes, "\(f.path): \(got.stderr)")
        }
    }

    /// A receiver on a store keeps the same contract: folders (in NFC) and tags arrive as added.
    @Test func aReceiverOnAStoreKeepsFoldersAndTags() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("contract")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        _ = try Self.station(s)
        let url = "s3://\(bucket)/office"
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache-admin")
        #expect(s.run(["init", "--vault", s.path("setup"), "--kdf", "insecure-test"], env: env).status == 0)
        #expect(s.run(["--vault", s.path("setup"), "push", url], env: env).status == 0)
        let token = s.run(["receive", "--vault", url, "station", "add", "warehouse"], env: env).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var serving = env
        serving["XDG_CACHE_HOME"] = s.path("cache-r1")
        let office = try ReceiverProcess(s, vault: "r1", location: url, environment: serving)
        let r = s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(r.status == 2, "\(r.stderr)")
        let listed = s.run(["list", "--vault", url, "--json"], env: env)
        #expect(listed.status == 0, "\(listed.stderr)")
        let stored = (try? JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
        #expect(Set(stored.compactMap { $0["name"] as? String }) == Set(Self.files.map { Self.kept($0.path) }))
        for d in stored { #expect(d["tags"] as? [String] == ["acme", "2026 Q1"], "\(d)") }
    }

    /// A name the receiver refuses is refused with its reason (a hand-made batch: vault's own
    /// station never sends one), and one with folders is taken.
    @Test func theReceiverRefusesWhatCouldLeaveAFolderAndTakesFolders() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s)
        let token = office.addStation("curl")
        func batch(_ name: String, key: String) -> (status: Int, body: String) {
            let entry = Fixtures.entry(String(repeating: "ab", count: 16), name, "x", as: "x")
            let body = #"{"Files":["# + entry + "]}"
            return office.curl(
                token: token,
                ["-H", "Idempotency-Key: \(key)", "-H", "Content-Type: application/json", "--data-binary", body,
                    office.url + "/batches"])
        }
        for (name, why) in [
            ("../up.txt", "has a '..' part, which names a folder"),
            ("/etc/x", "is an absolute path (it starts with /)"),
            ("a//b", "has an empty folder name (// or a / at its end)")
        ] {
            let r = batch(name, key: "k-\(why.count)")
            #expect(r.status == 400, "\(name): \(r)")
            #expect(r.body.contains("document 1: its name \(why)"), "\(name): \(r.body)")
        }
        #expect(batch("in/a folder/x.txt", key: "k-ok").status == 200)
        #expect(office.documents.compactMap { $0["name"] as? String } == ["in/a folder/x.txt"])
    }

    /// `get -o DIR` never writes through a symbolic link planted in DIR (a shared restore folder
    /// holding `sub -> elsewhere`): it refuses before writing anything.
    @Test func getIntoAFolderNeverFollowsALinkOutOfIt() throws {
        let s = Sandbox()
        s.initVault()
        s.write("x", Array("secret".utf8))
        #expect(s.run("add", "x", "--name", "sub/x.txt").status == 0)
        try FileManager.default.createDirectory(atPath: s.path("out"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: s.path("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: s.path("out/sub"), withDestinationPath: s.path("elsewhere"))
        let r = s.run("get", "--all", "-o", s.path("out"))
        #expect(r.status == 73, "\(r.stderr)")
        #expect(
            r.stderr.hasPrefix(
                "vault: \(s.path("out/sub")) is a symbolic link, and a document is never written through one"),
            "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.path("elsewhere")).isEmpty)
    }
}
