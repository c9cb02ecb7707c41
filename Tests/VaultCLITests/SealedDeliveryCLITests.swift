import Crypto
import Foundation
import Testing
import VaultTestSupport

/// Sealed delivery (docs/EXPORT.md, "Sealed payloads"), through the built binary, with Debian's
/// `age` (the Go reference implementation) on the other side: it opens every document and its
/// metadata that vault seals, byte for byte, and vault reads what `age -r` writes; `vault receive
/// --identity` takes sealed batches of every protocol and stores exactly the documents sent.
@Suite(.blocking) struct SealedDeliveryCLITests {
    /// Debian's age, or a failed test: the peer is installed by `make test` (apt `age`).
    static func requireAge() -> Bool {
        let ok =
            FileManager.default.isExecutableFile(atPath: "/usr/bin/age")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/age-keygen")
        #expect(ok, "Debian's age is missing: run 'make peers'")
        return ok
    }

    /// The documents of these tests: sizes around age's 64 KiB chunks, odd names.
    static let documents: [(name: String, bytes: [UInt8])] = [
        ("scan 1.pdf", .random(200_000, seed: 1)), ("note.txt", Array("hello".utf8)), ("empty.bin", []),
        ("chunk.bin", .random(65_536, seed: 2)), ("reçu \"2026\".jpg", .random(65_537, seed: 3))
    ]

    static func addDocuments(_ s: Sandbox) {
        for d in documents {
            s.write("in-" + d.name, d.bytes)
            let r = s.run("add", s.path("in-" + d.name), "--name", d.name)
            precondition(r.status == 0, r.stderr)
        }
    }

    /// The recipient line of an identity file (vault keygen's and age-keygen's both have it).
    static func recipient(_ s: Sandbox, _ file: String) throws -> String {
        let text = try String(contentsOfFile: s.path(file), encoding: .utf8)
        return try #require(
            text.split(separator: "\n").first { $0.hasPrefix("# public key: ") }.map { String($0.dropFirst(14)) })
    }

    /// `age -d -i identity` over `sealed`: the plaintext, or nil when age refuses it.
    static func ageDecrypt(_ s: Sandbox, _ sealed: [UInt8], identity: String) -> [UInt8]? {
        s.write("sealed.age", sealed)
        try? FileManager.default.removeItem(atPath: s.path("opened"))
        let r = s.shell("age -d -i \(identity) -o opened sealed.age")
        guard r.status == 0 else { return nil }
        // age creates the output file with the first plaintext byte: none for an empty document.
        return (try? Data(contentsOf: URL(fileURLWithPath: s.path("opened")))).map(Array.init) ?? []
    }

    /// Checks a sealed JSON payload: only ids, metadata and data outside; each metadata and
    /// document opened by Debian's age with `identity` to exactly what was added.
    static func checkPayload(_ s: Sandbox, _ payload: [UInt8], identity: String) throws {
        let text = String(decoding: payload, as: UTF8.self)
        for d in documents { #expect(!text.contains(d.name) && !text.contains("\"Name\"")) }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(json["Sealed"] as? String == "age-encryption.org/v1")
        let files = try #require(json["Files"] as? [[String: String]])
        #expect(files.count == documents.count)
        var seen = Set<String>()
        for f in files {
            #expect(Set(f.keys) == ["Id", "Metadata", "Data"])
            let meta = try #require(ageDecrypt(s, Array(Data(base64Encoded: f["Metadata"]!)!), identity: identity))
            #expect(meta.count % 256 == 0, "metadata is padded to 256 bytes")
            let m = try #require(try JSONSerialization.jsonObject(with: Data(meta)) as? [String: Any])
            #expect(m["Id"] as? String == f["Id"])
            let name = try #require(m["Name"] as? String)
            let original = try #require(documents.first { $0.name == name })
            let data = try #require(ageDecrypt(s, Array(Data(base64Encoded: f["Data"]!)!), identity: identity))
            #expect(data == original.bytes, "\(name): byte for byte")
            #expect(m["Size"] as? Int == original.bytes.count)
            #expect(
                m["SHA256"] as? String == SHA256.hash(data: original.bytes).map { String(format: "%02x", $0) }.joined())
            seen.insert(name)
        }
        #expect(seen.count == documents.count)
    }

    @Test func anExportSealedToTwoRecipientsOpensWithDebiansAgeForEach() throws {
        guard Self.requireAge() else { return }
        let s = Sandbox()
        s.initVault()
        Self.addDocuments(s)
        // A recipient from age-keygen, and one from vault keygen (its file is age's format, 0600).
        #expect(s.shell("age-keygen -o age.key 2>/dev/null").status == 0)
        let keygen = s.run("keygen", "--out", s.path("office.key"))
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let printed = keygen.out.trimmingCharacters(in: .newlines)
        #expect(printed == (try Self.recipient(s, "office.key")) && printed.hasPrefix("age1"))
        let mode = try FileManager.default.attributesOfItem(atPath: s.path("office.key"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = s.run("keygen", "--out", s.path("office.key"))
        #expect(again.status == 73 && again.stderr.contains("already exists"), "\(again.stderr)")
        let recipients = [try Self.recipient(s, "age.key"), printed]
        let r = s.run(["export", "--out", s.path("outbox")] + recipients.flatMap { ["--recipient", $0] })
        #expect(r.status == 0, "\(r.stderr)")
        let payload = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("outbox/batch-0001.json"))))
        for identity in ["age.key", "office.key"] { try Self.checkPayload(s, payload, identity: identity) }
        // The manifest's length and digest are the payload's; the history names the recipients.
        let manifest = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: s.path("outbox/manifest.json"))))
                as? [String: Any])
        #expect(manifest["shape"] as? String == "sealed")
        let batch = try #require((manifest["batches"] as? [[String: Any]])?.first)
        #expect(batch["bytes"] as? Int == payload.count)
        #expect(s.run("log").out.contains("sealed to " + recipients[0].prefix(12)))
        // To standard output, the same shape; a stranger's identity opens nothing.
        let piped = s.shell("\"$1\" export --out - --recipient \(recipients[0]) > piped.json")
        #expect(piped.status == 0, "\(piped.stderr)")
        let pipedPayload = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("piped.json"))))
        try Self.checkPayload(s, pipedPayload, identity: "age.key")
        #expect(s.shell("age-keygen -o stranger.key 2>/dev/null").status == 0)
        let first = try #require(
            (try JSONSerialization.jsonObject(with: Data(pipedPayload)) as? [String: Any])?["Files"]
                as? [[String: String]])
        #expect(Self.ageDecrypt(s, Array(Data(base64Encoded: first[0]["Data"]!)!), identity: "stranger.key") == nil)
        // Bad recipients: named, refused before anything is written; an identity is never echoed.
        let secret = try String(contentsOfFile: s.path("age.key"), encoding: .utf8).split(separator: "\n").last!
        let leaked = s.run("export", "--out", s.path("x"), "--recipient", String(secret))
        #expect(leaked.status == 64 && leaked.stderr.contains("not a recipient") && !leaked.stderr.contains(secret))
        // A typo changes the last character, which for a fresh key may already be the one typed.
        let typed: Character = recipients[0].last == "q" ? "p" : "q"
        let misspelt = String(recipients[0].dropLast()) + String(typed)
        let typo = s.run("export", "--out", s.path("x"), "--recipient", misspelt)
        #expect(typo.status == 64 && typo.stderr.contains("is not an age recipient"), "\(typo.stderr)")
        #expect(s.run("export", "--out", s.path("x"), "--recipient", recipients[0], "--shape", "strings").status == 64)
        #expect(!FileManager.default.fileExists(atPath: s.path("x")))
    }

    @Test func vaultImportsWhatAgeSealedAndRefusesWhatDoesNotOpen() throws {
        guard Self.requireAge() else { return }
        let s = Sandbox()
        s.initVault()
        #expect(s.shell("age-keygen -o age.key 2>/dev/null").status == 0)
        let recipient = try Self.recipient(s, "age.key")
        try FileManager.default.createDirectory(atPath: s.path("in"), withIntermediateDirectories: true)
        for (i, d) in Self.documents.enumerated() {
            s.write("plain-\(i)", d.bytes)
            #expect(s.shell("age -r \(recipient) -o in/doc-\(i).bin.age plain-\(i)").status == 0)
        }
        let r = s.run("import", "--age", "--identity", s.path("age.key"), "-r", s.path("in"), "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let imported = try #require(
            (try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])?["imported"] as? [[String: Any]])
        #expect(imported.count == Self.documents.count)
        for entry in imported {
            let name = try #require(entry["name"] as? String)
            #expect(name.hasPrefix("doc-") && name.hasSuffix(".bin"), "the .age suffix is dropped: \(name)")
            let i = Int(name.dropFirst(4).dropLast(4))!
            #expect(s.run("get", entry["id"] as! String, "-o", s.path("out-\(i)")).status == 0)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: s.path("out-\(i)")))) == Self.documents[i].bytes)
        }
        // A flipped byte in the payload: exit 65, nothing added; another identity: exit 77.
        var damaged = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("in/doc-0.bin.age"))))
        damaged[damaged.count - 100] ^= 1
        s.write("damaged.age", damaged)
        let before = s.objects
        let bad = s.run("import", "--age", "--identity", s.path("age.key"), s.path("damaged.age"), "--allow-duplicate")
        #expect(bad.status == 65 && bad.stderr.contains("fails authentication"), "\(bad.stderr)")
        #expect(s.objects == before)
        #expect(s.shell("age-keygen -o other.key 2>/dev/null").status == 0)
        let wrong = s.run("import", "--age", "--identity", s.path("other.key"), s.path("in/doc-1.bin.age"))
        #expect(wrong.status == 77 && wrong.stderr.contains("no identity given opens it"), "\(wrong.stderr)")
        let secret = try String(contentsOfFile: s.path("other.key"), encoding: .utf8)
        #expect(!wrong.stderr.contains("AGE-SECRET-KEY"))
        _ = secret
        // A post-quantum identity of vault's own (Debian's age 1.1.1 has no such recipients): a
        // sealed export to it comes back in through import.
        #expect(s.run("keygen", "--post-quantum", "--out", s.path("pq.key")).out.hasPrefix("age1pq1"))
        let pq = s.run("export", "--out", s.path("pq"), "--recipient", try Self.recipient(s, "pq.key"))
        #expect(pq.status == 0, "\(pq.stderr)")
        let files = try #require(
            (try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: s.path("pq/batch-0001.json"))))
                as? [String: Any])?["Files"] as? [[String: String]])
        for (i, f) in files.enumerated() { s.write("pq-\(i).age", Array(Data(base64Encoded: f["Data"]!)!)) }
        #expect(String(decoding: s.shell("head -c 40 pq-0.age").stdout, as: UTF8.self).contains("mlkem768x25519"))
        let back = s.run(
            ["import", "--age", "--identity", s.path("pq.key"), "--allow-duplicate"]
                + files.indices.map { s.path("pq-\($0).age") })
        #expect(back.status == 0, "\(back.stderr)")
    }

    /// A station vault with ``documents``, and a receiver taking batches sealed to a `vault
    /// keygen` identity (`office.key`) with `extra` options: the recipient, the receiver and the
    /// token of its station `station-1`.
    static func stationAndSealedOffice(
        _ s: Sandbox, extra: [String] = []
    ) throws -> (recipient: String, receiver: ReceiverProcess, token: String) {
        s.initVault()
        addDocuments(s)
        #expect(s.run("keygen", "--out", s.path("office.key")).status == 0)
        let recipient = try Self.recipient(s, "office.key")
        let receiver = try ReceiverProcess(s, extra: ["--identity", s.path("office.key")] + extra)
        return (recipient, receiver, receiver.addStation("station-1"))
    }

    @Test func aReceiverWithAnIdentityTakesSealedBatchesOfEveryProtocolAndOthersRefuseThem() throws {
        guard Self.requireAge() else { return }
        let s = Sandbox()
        let (recipient, receiver, token) = try Self.stationAndSealedOffice(s)
        let key = receiver.run("receive", "key").out.trimmingCharacters(in: .whitespacesAndNewlines)
        // The destination carries the recipient and the receipt key: in the history, in audit.
        let add = s.run(
            "destination", "add", "office", receiver.url + "/batches", "--recipient", recipient, "--receipt-key", key)
        #expect(add.status == 0 && add.stderr.contains("sealed to 1 age recipient"), "\(add.stderr)")
        #expect(s.run("destination").out.contains("sealed (1 recipient)"))
        #expect(s.run("audit").out.contains("destination office: sealed to 1 age recipient: \(recipient)"))
        let env: [String: String?] = ["VAULT_UPLOAD_TOKEN": token]
        let json = s.run(["upload", "--to", "office", "--all"], env: env)
        #expect(json.status == 0, "\(json.stderr)")
        let form = s.run(
            [
                "upload", "--url", receiver.url + "/batches", "--protocol", "form", "--all", "--new-run", "--recipient",
                recipient
            ], env: env)
        #expect(form.status == 0, "\(form.stderr)")
        let tus = s.run(
            [
                "upload", "--url", receiver.url + "/files/", "--protocol", "tus", "--all", "--new-run", "--recipient",
                recipient, "--chunk-size", "64K"
            ], env: env)
        #expect(tus.status == 0, "\(tus.stderr)")
        // Three batches of every document, each stored whole and byte for byte.
        let stored = receiver.documents
        #expect(stored.count == 3 * Self.documents.count)
        for d in Self.documents {
            let sha = SHA256.hash(data: d.bytes).map { String(format: "%02x", $0) }.joined()
            #expect(stored.filter { $0["name"] as? String == d.name && $0["sha256"] as? String == sha }.count == 3)
        }
        #expect(receiver.log.contains("protocol=form result=200") && receiver.log.contains("protocol=json result=200"))
        // The json batch was counted with its receipt (the destination signs them).
        #expect(s.run("log", "--json").out.contains("\"receipt\""))
        // A receiver without the identity keeps a sealed batch sealed (BlindReceiverCLITests); a
        // station sealing to someone else gets 422 from one that has an identity.
        let plain = try ReceiverProcess(s, vault: "plain")
        let plainToken = plain.addStation("station-1")
        let kept = s.run(
            [
                "upload", "--url", plain.url + "/batches", "--all", "--new-run", "--recipient", recipient, "--retries",
                "0"
            ],
            env: ["VAULT_UPLOAD_TOKEN": plainToken])
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(plain.documents.count == Self.documents.count)
        #expect(plain.documents.allSatisfy { $0["name"] as? String == "(sealed)" })
        #expect(s.shell("age-keygen -o stranger.key 2>/dev/null").status == 0)
        let strangerKey = try Self.recipient(s, "stranger.key")
        // To the destination's URL, its recipients seal the batch too, whatever else is named.
        let merged = s.run(
            ["upload", "--url", receiver.url + "/batches", "--all", "--new-run", "--recipient", strangerKey], env: env)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(receiver.documents.count == 4 * Self.documents.count)
        let stranger = s.run(
            [
                "upload", "--url", receiver.url + "/batches?elsewhere", "--all", "--new-run", "--recipient",
                strangerKey,
                "--retries", "0"
            ], env: env)
        #expect(stranger.status != 0 && stranger.stderr.contains("422"), "\(stranger.stderr)")
        // Said in words with what to do, not as the answer's JSON.
        #expect(
            stranger.stderr.contains(
                "(not-sealed-to-this-receiver)\nvault: hint: none of the office's identities ('vault receive serve "
                    + "--identity') opens what it was sealed to: check the destination's recipients "
                    + "('vault destination')\n")
                && !stranger.stderr.contains("{\""), "\(stranger.stderr)")
        #expect(receiver.documents.count == 4 * Self.documents.count)
    }

    /// A hostile station seals with Debian's age what vault would not send: the receiver opens
    /// each file and refuses the batch (nothing stored) when the metadata lies about the data,
    /// is not vault's canonical padded JSON, names another id, or is sealed to someone else;
    /// the same construction with honest metadata is taken (so the refusals are the lies').
    @Test func aReceiverRefusesSealedBatchesWhoseMetadataLies() throws {
        guard Self.requireAge() else { return }
        let s = Sandbox()
        #expect(s.run("keygen", "--out", s.path("office.key")).status == 0)
        #expect(s.shell("age-keygen -o stranger.key 2>/dev/null").status == 0)
        let office = try Self.recipient(s, "office.key"), stranger = try Self.recipient(s, "stranger.key")
        let receiver = try ReceiverProcess(s, extra: ["--identity", s.path("office.key")])
        let token = receiver.addStation("hostile")
        let data = [UInt8].random(70_000, seed: 9)
        let sha = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        let id = "0123456789abcdef0123456789abcdef"
        func sealed(_ bytes: [UInt8], to recipient: String) -> String {
            s.write("plain.tmp", bytes)
            _ = s.shell("age -r \(recipient) -o sealed.tmp plain.tmp")
            return (try? Data(contentsOf: URL(fileURLWithPath: s.path("sealed.tmp"))))?.base64EncodedString() ?? ""
        }
        func metadata(id: String = id, sha: String = sha, size: Int = 70_000, pad: Bool = true) -> [UInt8] {
            var m = Array("{\"Id\":\"\(id)\",\"Name\":\"x.bin\",\"ContentType\":\"application/octet-stream\",".utf8)
            m += Array("\"Size\":\(size),\"SHA256\":\"\(sha)\"}".utf8)
            return pad ? m + [UInt8](repeating: 0x20, count: 256 - m.count % 256) : m
        }
        func send(_ key: String, meta: [UInt8], data dataRecipient: String = office) -> (status: Int, body: String) {
            let payload =
                #"{"Sealed":"age-encryption.org/v1","Files":[{"Id":""# + id + #"","Metadata":""#
                + sealed(meta, to: office) + #"","Data":""# + sealed(data, to: dataRecipient) + #""}]}"#
            s.write("payload.json", Array(payload.utf8))
            return receiver.curl(
                token: token,
                [
                    "-H", "Idempotency-Key: \(key)", "-H", "Content-Type: application/json", "--data-binary",
                    "@" + s.path("payload.json"), receiver.url + "/batches"
                ])
        }
        let lies: [(String, [UInt8], String, Int, String)] = [
            ("wrong-digest", metadata(sha: String(repeating: "0", count: 64)), office, 400, "digest-mismatch"),
            ("wrong-size", metadata(size: 69_999), office, 400, "digest-mismatch"),
            ("unpadded", metadata(pad: false), office, 400, "header-malformed"),
            ("other-id", metadata(id: "fedcba9876543210fedcba9876543210"), office, 400, "header-malformed"),
            ("sealed-elsewhere", metadata(), stranger, 422, "not-sealed-to-this-receiver")
        ]
        for (key, meta, to, status, code) in lies {
            let r = send(key, meta: meta, data: to)
            #expect(r.status == status && r.body.contains(code), "\(key): \(r.status) \(r.body)")
        }
        #expect(receiver.documents.isEmpty)
        let honest = send("honest", meta: metadata())
        #expect(honest.status == 200, "\(honest.body)")
        // The answer to a sealed batch is sealed too: no digest or size for a hop that sees it.
        #expect(honest.body.hasPrefix(#"{"sealedReceipt":""#) && !honest.body.contains(sha), "\(honest.body)")
        #expect(!honest.body.contains("70000"))
        #expect(receiver.documents.map { $0["sha256"] as? String } == [sha])
    }

    /// Someone with write access to the station's folder and no password puts back the history
    /// from before the destination was sealed (review finding, high): the upload is refused
    /// before anything is sent, instead of going out in the clear. And a receiver started with
    /// --require-sealed refuses plaintext batches of every kind.
    @Test func aRolledBackHistoryDoesNotUnsealADestinationAndAReceiverCanRequireSealing() throws {
        guard Self.requireAge() else { return }
        let s = Sandbox()
        let (recipient, receiver, token) = try Self.stationAndSealedOffice(s, extra: ["--require-sealed"])
        let url = receiver.url + "/batches"
        #expect(s.run("destination", "add", "office", url).status == 0)
        for f in ["log.vlt", "log.head", "log.anchor"] {
            try? FileManager.default.copyItem(atPath: s.path("vault/" + f), toPath: s.path("old-" + f))
        }
        #expect(s.run("destination", "remove", "office").status == 0)
        #expect(s.run("destination", "add", "office", url, "--recipient", recipient).status == 0)
        for f in ["log.vlt", "log.head", "log.anchor"] {
            guard FileManager.default.fileExists(atPath: s.path("old-" + f)) else { continue }
            try FileManager.default.removeItem(atPath: s.path("vault/" + f))
            try FileManager.default.copyItem(atPath: s.path("old-" + f), toPath: s.path("vault/" + f))
        }
        let up = s.run(["upload", "--to", "office", "--all", "--retries", "0"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 65 && up.stderr.contains("the history does not verify (rolled-back)"), "\(up.stderr)")
        #expect(up.stderr.contains("nothing is sent"))
        #expect(!receiver.log.contains("result="), "nothing reached the receiver: \(receiver.log)")
        // A password holder audits and accepts; then sending works again (the list is the older one).
        #expect(s.run("audit", "--accept-loss").status == 0)
        // The receiver takes no plaintext batch: vault's json and form, curl's -F form; 415 each.
        let plain = s.run(
            ["upload", "--url", url + "?plain", "--all", "--retries", "0"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(plain.status != 0 && plain.stderr.contains("415"), "\(plain.stderr)")
        let form = s.run(
            ["upload", "--url", url + "?plain", "--protocol", "form", "--all", "--new-run", "--retries", "0"],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(form.status != 0 && form.stderr.contains("415"), "\(form.stderr)")
        s.write("c.txt", Array("curl".utf8))
        let curl = receiver.curl(
            token: token, ["-H", "Idempotency-Key: c-1", "-F", "f=@" + s.path("c.txt"), url])
        #expect(curl.status == 415 && curl.body.contains("sealed batches only"), "\(curl.body)")
        #expect(receiver.documents.isEmpty)
        let sealed = s.run(
            ["upload", "--url", url + "?plain", "--all", "--new-run", "--recipient", recipient],
            env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(receiver.documents.count == Self.documents.count)
    }

    /// The inbox bucket of an S3 upload (SeaweedFS) holds only sealed payloads: a multipart
    /// upload of a 12 MiB document in 5 MiB parts, produced part by part from one sealing, opens
    /// with Debian's age byte for byte, and no name or digest is in the bucket.
    @Test func anS3InboxHoldsOnlySealedPayloadsThatAgeOpens() async throws {
        guard Self.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("sealed")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big scan.tiff", mebibytes: 12, seed: 77)
        s.write("note.txt", Array("inbox".utf8))
        #expect(s.run("add", s.path("big scan.tiff"), s.path("note.txt")).status == 0)
        #expect(s.shell("age-keygen -o age.key 2>/dev/null").status == 0)
        let r = s.run(
            [
                "upload", "--url", "s3://\(bucket)/inbox/", "--part-size", "5M", "--recipient",
                try Self.recipient(s, "age.key"), "--json"
            ], env: S3Fixtures.env(sw))
        #expect(r.status == 0, "\(r.stderr)")
        let run = Fixtures.runID(r)
        let key = "inbox/\(run)/batch-0001.json"
        let payload = try await s3.object(bucket: bucket, key: key)
        let head = try await s3.send(.head, bucket: bucket, key: key)
        #expect((head.header("ETag") ?? "").hasSuffix("-4\""), "a multipart upload of four parts")
        let text = String(decoding: payload, as: UTF8.self)
        #expect(!text.contains("big scan") && !text.contains("note.txt") && text.hasPrefix(#"{"Sealed":"#))
        let files = try #require(
            (try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])?["Files"] as? [[String: String]])
        var opened: [[UInt8]] = []
        for f in files {
            let sealed = Array(Data(base64Encoded: f["Data"]!)!)
            opened.append(try #require(Self.ageDecrypt(s, sealed, identity: "age.key")))
        }
        let big = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("big scan.tiff"))))
        #expect(opened.contains(big) && opened.contains(Array("inbox".utf8)))
    }
}
