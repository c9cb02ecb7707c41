import Crypto
import Foundation
import Testing
import VaultTestSupport

/// What a capture-only station captured, delivered: `vault upload` sends the sealed files as they
/// are, a receiver started without an identity keeps them so and signs receipts for the pair's
/// size and SHA-256, and the office opens them with its identity (`vault get --identity`, and
/// Debian's `age`), through the built binaries.
@Suite(.blocking) struct CapturedDeliveryCLITests {
    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// The station of ``CaptureStationCLITests/station(_:)``, a blind receiver (no identity) with
    /// a station token, and the station's destination `office` that needs its signed receipts.
    static func stationAndBlindOffice(_ s: Sandbox, protocol wire: String = "json") throws -> (
        ids: [String: String], office: ReceiverProcess, token: String
    ) {
        let (ids, _) = try CaptureStationCLITests.station(s)
        let office = try ReceiverProcess(s)
        let token = office.addStation("desk")
        let key = office.run("receive", "key").out.trimmingCharacters(in: .whitespacesAndNewlines)
        // Receipts are checked on json (and form) batches; a tus batch counts by its answer.
        let added = s.run(
            ["destination", "add", "office", office.url + (wire == "tus" ? "/files/" : "/batches"), "--protocol", wire]
                + (wire == "tus" ? [] : ["--receipt-key", key]))
        #expect(added.status == 0, "\(added.stderr)")
        return (ids, office, token)
    }

    /// Every document the station captured, as the office's identity opens it.
    static var originals: [(name: String, bytes: [UInt8])] {
        CaptureStationCLITests.documents.map { ($0.name, $0.bytes) }
            + [("piped.txt", Array("typed at the station, sealed at once".utf8))]
    }

    @Test(arguments: ["json", "form", "tus"])
    func aBlindReceiverKeepsWhatWasCapturedAndTheOfficeOpensIt(wire: String) throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office, token) = try Self.stationAndBlindOffice(s, protocol: wire)
        let up = s.run(["upload", "--to", "office", "--json"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        #expect(office.log.contains("sealed=true"))

        // The office keeps each pair as it came: its data file opens with Debian's age, byte for
        // byte, and its records say only what it knows without the key.
        let stored = office.documents
        #expect(stored.count == Self.originals.count)
        #expect(stored.allSatisfy { $0["name"] as? String == "(sealed)" })
        var opened: [[UInt8]] = []
        for d in stored {
            let id = try #require(d["id"] as? String)
            let data = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("office/objects/\(id).vlt"))))
            opened.append(try #require(SealedDeliveryCLITests.ageDecrypt(s, data, identity: "office.key")))
            let meta = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("office/objects/\(id).meta.vlt"))))
            let n = meta[9..<13].reduce(0) { $0 << 8 | Int($1) }
            let json = try #require(
                SealedDeliveryCLITests.ageDecrypt(s, Array(meta[(13 + n)...]), identity: "office.key"))
            let m = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
            // The station's id, name and tags, as captured.
            let name = try #require(m["Name"] as? String)
            #expect(ids[name] == m["Id"] as? String)
            #expect((m["Tags"] as? [String] ?? []) == (name == "piped.txt" ? [] : ["north"]))
        }
        #expect(Set(opened.map(Self.hex)) == Set(Self.originals.map { Self.hex($0.bytes) }))

        // Without the identity the office refuses to open one; with it, every name as captured.
        let first = try #require(stored.first?["id"] as? String)
        let refused = office.run("get", first, "-o", s.path("one"))
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("came sealed to the office's recipients"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--identity"))
        let got = office.run("get", "--all", "-o", s.path("out"), "--identity", s.path("office.key"))
        #expect(got.status == 0, "\(got.stderr)")
        for d in Self.originals {
            #expect(
                (try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("out/\(d.name)"))))) == d.bytes, "\(d.name)")
        }
        // The station's own id finds the document at the office.
        let big = try #require(ids["sub/big.bin"])
        let one = office.run("get", big, "-o", s.path("big.bin"), "--identity", s.path("office.key"))
        #expect(one.status == 0, "\(one.stderr)")
        #expect((try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("big.bin"))))) == Self.originals[1].bytes)
        #expect(office.run("verify").status == 0)
        #expect(office.run("audit", "--deep").status == 0)
        // An export hands them on in plaintext only with the identity: names, tags and bytes as
        // captured; without it, nothing is written.
        let sealedOut = office.run("export", "--out", s.path("outbox-refused"))
        #expect(sealedOut.status == 64 && sealedOut.stderr.contains("--identity"), "\(sealedOut.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("outbox-refused/manifest.json")))
        let exported = office.run("export", "--out", s.path("outbox"), "--identity", s.path("office.key"))
        #expect(exported.status == 0, "\(exported.stderr)")
        let payload = try Data(contentsOf: URL(fileURLWithPath: s.path("outbox/batch-0001.json")))
        let files = (try JSONSerialization.jsonObject(with: payload) as? [String: Any])?["Files"] as? [[String: Any]]
        var byName: [String: [UInt8]] = [:]
        for f in files ?? [] {
            let name = f["Name"] as? String ?? ""
            byName[name] = Array(Data(base64Encoded: f["Data"] as? String ?? "") ?? Data())
            #expect((f["Tags"] as? [String] ?? []) == (name == "piped.txt" ? [] : ["north"]), "\(name)")
        }
        for d in Self.originals { #expect(byName[d.name] == d.bytes, "\(d.name) exported") }

        // The station's ledger holds the signed receipts, and delivery frees its space.
        if wire != "tus" {
            let audit = s.run("audit", "--require-receipts", "office")
            #expect(audit.status == 0, "\(audit.stderr)")
        }
        let removed = s.run("remove", "--delivered-to", "office")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(s.run("list", "--json").out.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: s.path("vault/objects")))?.isEmpty == true,
            "no captured file is left on the station")
    }

    /// Any form inbox takes what a station captured: PHP's own multipart parser (`$_FILES`) gets
    /// each document as two age files, checked against the pair the manifest names, and the
    /// office's key opens them with Debian's `age`; the form names nothing of the contents.
    @Test func aPHPFormInboxGetsTheSealedFilesAsTheyWereCaptured() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, _) = try CaptureStationCLITests.station(s)
        let php = try PHPServer(in: s, maxFileUploads: 40)
        defer { Peer.stop(php.pid) }
        let up = s.run(
            ["upload", "--url", php.url, "--protocol", "form", "--form-field", "case=4711"],
            env: FormUploadCLITests.token)
        #expect(up.status == 0, "\(up.stderr)")
        let stored = ((try? FileManager.default.contentsOfDirectory(atPath: php.store)) ?? []).filter {
            $0.hasSuffix(".age") && !$0.hasSuffix(".meta.age")
        }
        #expect(Set(stored.map { String($0.dropLast(4)) }) == Set(ids.values), "the station's ids, one pair each")
        var opened: [String: [UInt8]] = [:]
        for id in ids.values {
            let data = try Array(Data(contentsOf: URL(fileURLWithPath: php.store + "/\(id).age")))
            let meta = try Array(Data(contentsOf: URL(fileURLWithPath: php.store + "/\(id).meta.age")))
            let json = try #require(SealedDeliveryCLITests.ageDecrypt(s, meta, identity: "office.key"))
            let m = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
            let name = try #require(m["Name"] as? String)
            #expect(ids[name] == id)
            opened[name] = try #require(SealedDeliveryCLITests.ageDecrypt(s, data, identity: "office.key"))
        }
        for d in Self.originals { #expect(opened[d.name] == d.bytes, "\(d.name)") }
        // The text fields came as given; a document's name is nowhere PHP kept anything.
        let fields = try Data(contentsOf: URL(fileURLWithPath: php.store + "/fields.json"))
        #expect(String(decoding: fields, as: UTF8.self) == #"{"case":"4711"}"#)
        #expect(!FileManager.default.fileExists(atPath: php.store + "/names.json"))
        #expect(s.run("status").status == 0)
    }

    /// A station's metadata file cut short fails its document with the reason, and `--skip-bad`
    /// delivers the others (found in review: the upload read every metadata file before it
    /// started and stopped at the first); an identity that opens nothing gets exit 77 with a hint
    /// that names the identity to give, not a password.
    @Test func aDamagedPairIsSkippedAndAWrongIdentityIsNamed() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office, token) = try Self.stationAndBlindOffice(s)
        let cut = try #require(ids["piped.txt"])
        let path = s.path("vault/objects/\(cut).meta.vlt")
        let meta = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        try Data(meta.prefix(meta.count - 40)).write(to: URL(fileURLWithPath: path))

        let stop = s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(stop.status == 65, "\(stop.stderr)")
        #expect(stop.stderr.contains("vault: document \(cut)"), "\(stop.stderr)")
        #expect(office.documents.isEmpty)
        let skip = s.run(["upload", "--to", "office", "--skip-bad"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(skip.status == 2, "\(skip.stderr)")
        #expect(office.documents.count == ids.count - 1)

        #expect(s.shell("age-keygen -o other.key 2>/dev/null").status == 0)
        let first = try #require(office.documents.first?["id"] as? String)
        let wrong = office.run("get", first, "-o", s.path("one"), "--identity", s.path("other.key"))
        #expect(wrong.status == 77, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("no identity given opens it"), "\(wrong.stderr)")
        #expect(wrong.stderr.contains("give the office's identity"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("password"), "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("one")))
        let right = office.run("get", first, "-o", s.path("one"), "--identity", s.path("office.key"))
        #expect(right.status == 0, "\(right.stderr)")
    }

    /// An office's password change seals again the records it keeps beside the pairs that came
    /// captured (found in review: it took every object for an envelope and refused).
    @Test func anOfficesPasswordChangeKeepsWhatCameCaptured() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office, token) = try Self.stationAndBlindOffice(s)
        #expect(s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 0)
        Peer.stop(office.pid)
        let big = try #require(ids["sub/big.bin"])
        // The office's password changes: the records it sealed beside the pairs are sealed again.
        let renewed = s.run(
            ["passwd", "--kdf", "insecure-test", "--vault", "office"],
            env: ["VAULT_PASSWORD": ReceiverProcess.password, "VAULT_NEW_PASSWORD": "the office's new password"])
        #expect(renewed.status == 0, "\(renewed.stderr)")
        let afterChange = s.run(
            ["get", big, "-o", s.path("big-again.bin"), "--identity", s.path("office.key"), "--vault", "office"],
            env: ["VAULT_PASSWORD": "the office's new password"])
        #expect(afterChange.status == 0, "\(afterChange.stderr)")
        let again = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("big-again.bin"))))
        #expect(again == Self.originals[1].bytes)
        #expect(
            s.run(["verify", "--vault", "office"], env: ["VAULT_PASSWORD": "the office's new password"]).status == 0)
    }

    /// Someone who can write to the office's folder and knows its recipients (they are public)
    /// seals a document of their own and puts it in a received one's place: the office's record,
    /// sealed under its key, names the pair it received, so `get --identity` refuses it and
    /// writes nothing; so does a flipped byte.
    @Test func aFileSwappedAtTheOfficeDoesNotOpenAsTheStationsDocument() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (_, office, token) = try Self.stationAndBlindOffice(s)
        office.addOperator()
        #expect(s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 0)
        let stored = office.documents
        let victim = try #require(stored.first { ($0["size"] as? Int ?? 0) < 4096 }?["id"] as? String)
        let path = s.path("office/objects/\(victim).vlt")
        let recipient = try SealedDeliveryCLITests.recipient(s, "office.key")
        // A file of the same length as the one received (found in review: a download checked only
        // the length, and `get` to a pipe wrote the plaintext before it failed).
        #expect(s.shell("printf '' | age -r \(recipient) -o empty.age").status == 0)
        let overhead = try Data(contentsOf: URL(fileURLWithPath: s.path("empty.age"))).count
        let length = try Data(contentsOf: URL(fileURLWithPath: path)).count
        s.write("forged.txt", [UInt8](repeating: 0x45, count: length - overhead))
        #expect(s.shell("age -r \(recipient) -o '\(path)' forged.txt").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == length)
        let piped = office.run("get", victim, "--identity", s.path("office.key"))
        #expect(piped.status == 65 && piped.stdout.isEmpty, "\(piped.stdout.count) bytes written: \(piped.stderr)")
        let (_, session) = OperatorViewCLITests.signIn(s, office.url)
        let cookie = ["-H", "Cookie: vault_session=\(try #require(session))"]
        _ = Fixtures.curl(s, cookie + [office.url + "/ui/documents/\(victim)/download"])
        let served = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("curl.body"))))
        #expect(served.isEmpty, "the page served \(served.count) bytes of a file put in the document's place")
        let exported = office.run("export", "--out", "-", "--identity", s.path("office.key"), victim)
        #expect(exported.status == 65 && !exported.stdout.contains(0x45), "\(exported.stderr)")
        let swapped = office.run("get", victim, "-o", s.path("forged-out"), "--identity", s.path("office.key"))
        #expect(swapped.status == 65, "\(swapped.stderr)")
        #expect(swapped.stderr.contains("not those received"), "\(swapped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("forged-out")))
        #expect(office.run("verify").status != 0)

        let other = try #require(stored.first { ($0["size"] as? Int ?? 0) > 1 << 20 }?["id"] as? String)
        let bigPath = s.path("office/objects/\(other).vlt")
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: bigPath)))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: bigPath))
        let flipped = office.run("get", other, "-o", s.path("flipped-out"), "--identity", s.path("office.key"))
        #expect(flipped.status != 0)
        #expect(!FileManager.default.fileExists(atPath: s.path("flipped-out")))
    }

    /// A receipt signs the pair the station declared: a station that declares another digest
    /// (or sends other bytes) is refused whole, and nothing is kept.
    @Test func aPairThatIsNotWhatTheStationDeclaredIsRefusedWhole() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (_, office, token) = try Self.stationAndBlindOffice(s)
        // The payload as the station sends it, written out by a dry run of the real sender: an
        // export cannot make one, so the test builds it from the station's files.
        let list = s.run("list", "--json")
        let docs = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [[String: Any]])
        let d = try #require(docs.first { ($0["size"] as? Int ?? 0) < 4096 })
        let id = try #require(d["id"] as? String)
        let data = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("vault/objects/\(id).vlt"))))
        let meta = try CaptureStationCLITests.metadataFile(s, id)
        var hash = SHA256()
        hash.update(data: data)
        hash.update(data: meta)
        hash.update(data: (0..<8).map { UInt8(truncatingIfNeeded: UInt64(meta.count) >> (56 - 8 * $0)) })
        let sha = hash.finalize().map { String(format: "%02x", $0) }.joined()
        func payload(sha: String, size: Int) -> String {
            #"{"Captured":"age-encryption.org/v1","Files":[{"Id":"\#(id)","Size":\#(size),"SHA256":"\#(sha)","#
                + #""Metadata":"\#(Data(meta).base64EncodedString())","Data":"\#(Data(data).base64EncodedString())"}]}"#
        }
        func post(_ body: String, key: String) -> (status: Int, body: String) {
            s.write("body-\(key).json", Array(body.utf8))
            return office.curl(
                token: token,
                [
                    "-X", "POST", "-H", "Content-Type: application/json", "-H", "Idempotency-Key: \(key)",
                    "--data-binary", "@" + s.path("body-\(key).json"), office.url + "/batches"
                ])
        }
        let wrongSHA = post(payload(sha: String(repeating: "0", count: 64), size: data.count + meta.count), key: "k1")
        #expect(wrongSHA.status == 422 || wrongSHA.status == 400, "\(wrongSHA)")
        #expect(wrongSHA.body.contains("digest-mismatch"), "\(wrongSHA.body)")
        let wrongSize = post(payload(sha: sha, size: data.count + meta.count + 1), key: "k2")
        #expect(wrongSize.body.contains("digest-mismatch"), "\(wrongSize.body)")
        #expect(office.documents.isEmpty)
        // The pair as declared is taken, and its receipt names it.
        let right = post(payload(sha: sha, size: data.count + meta.count), key: "k3")
        #expect(right.status == 200, "\(right)")
        #expect(right.body.contains(sha), "the receipt signs the pair's SHA-256")
        #expect(office.documents.count == 1)
    }

    /// An S3 inbox (SeaweedFS), by the station's credentials and through presigned URLs (a
    /// 12 MiB capture in 5 MiB parts): the object is the captured payload, whose files Debian's
    /// age opens byte for byte, and which names nothing the station captured.
    @Test(arguments: ["s3", "presigned-s3"])
    func anS3InboxGetsTheCapturedPayload(wire: String) async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("captured")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        _ = try CaptureStationCLITests.station(s)
        try s.writeLarge("large scan.tiff", mebibytes: 12, seed: 620)
        #expect(s.run("add", s.path("large scan.tiff")).status == 0)
        var server: PythonPeer?
        let r: CLIResult
        if wire == "s3" {
            r = s.run(
                ["upload", "--url", "s3://\(bucket)/office/", "--part-size", "5M", "--json"], env: S3Fixtures.env(sw))
        } else {
            server = try PresignedS3UploadCLITests.presignServer(
                s, store: sw.endpoint.absoluteString, bucket: bucket)
            r = s.run(
                ["upload", "--presign-url", server!.url, "--part-size", "5M", "--json"],
                env: ["VAULT_UPLOAD_TOKEN": "presign-token"])
        }
        #expect(r.status == 0, "\(r.stderr)")
        let payload = try await s3.object(bucket: bucket, key: "office/\(Fixtures.runID(r))/batch-0001.json")
        let text = String(decoding: payload, as: UTF8.self)
        #expect(text.hasPrefix(#"{"Captured":"age-encryption.org/v1","Files":[{"Id":""#))
        // Quoted or with characters base64 has not: ciphertext's base64 may hold "north" by chance.
        #expect(!text.contains("large scan") && !text.contains("scan.pdf") && !text.contains("\"north\""))
        let files = try #require(
            (try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])?["Files"] as? [[String: Any]])
        #expect(files.count == Self.originals.count + 1)
        var opened: [[UInt8]] = []
        for f in files {
            let data = Array(Data(base64Encoded: f["Data"] as? String ?? "") ?? Data())
            let meta = Array(Data(base64Encoded: f["Metadata"] as? String ?? "") ?? Data())
            #expect(f["Size"] as? Int == data.count + meta.count)
            opened.append(try #require(SealedDeliveryCLITests.ageDecrypt(s, data, identity: "office.key")))
        }
        let large = Array(try Data(contentsOf: URL(fileURLWithPath: s.path("large scan.tiff"))))
        #expect(Set(opened.map(Self.hex)) == Set((Self.originals.map(\.bytes) + [large]).map(Self.hex)))
        _ = server
    }

    /// The operator pages: a captured document's page says it is kept sealed and how to open it,
    /// and its download (alone, or in a batch's archive) is its data file as kept, `ID.age`, which
    /// Debian's age opens byte for byte; the download is recorded as any other.
    @Test func theOperatorPagesOfferTheSealedFile() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office, token) = try Self.stationAndBlindOffice(s)
        office.addOperator()
        #expect(s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 0)
        let stored = office.documents
        let id = try #require(stored.first { ($0["size"] as? Int ?? 0) > 1 << 20 }?["id"] as? String)
        let (status, session) = OperatorViewCLITests.signIn(s, office.url)
        #expect(status == 303)
        let cookie = ["-H", "Cookie: vault_session=\(try #require(session))"]
        let page = Fixtures.curl(s, cookie + [office.url + "/ui/documents/\(id)"])
        #expect(page.status == 200)
        #expect(page.body.contains("capture-only station") && page.body.contains("<code>\(id).age</code>"))
        #expect(page.body.contains("age opens it as it is"))
        #expect(page.body.contains("Download the sealed file (.age)"))
        let download = Fixtures.curl(s, cookie + [office.url + "/ui/documents/\(id)/download"])
        #expect(download.status == 200)
        #expect(download.headers["content-disposition"]?.contains("\(id).age") == true, "\(download.headers)")
        let body = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("curl.body"))))
        let kept = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("office/objects/\(id).vlt"))))
        #expect(body == kept)
        #expect(SealedDeliveryCLITests.ageDecrypt(s, body, identity: "office.key") == Self.originals[1].bytes)
        // Its metadata file, as it came: an age file of the name and tags as captured.
        let meta = Fixtures.curl(s, cookie + [office.url + "/ui/documents/\(id)/metadata"])
        #expect(meta.status == 200 && meta.headers["content-disposition"]?.contains("\(id).meta.age") == true)
        let opened = SealedDeliveryCLITests.ageDecrypt(
            s, try Array(Data(contentsOf: URL(fileURLWithPath: s.path("curl.body")))), identity: "office.key")
        #expect(String(decoding: opened ?? [], as: UTF8.self).contains(#""Name":"sub/big.bin""#))
        // A batch's archive holds each captured document as its age file.
        let archive = Fixtures.curl(s, cookie + [office.url + "/ui/archive?batch=1"])
        #expect(archive.status == 200)
        let listed = s.shell(
            "python3 -c 'import zipfile,sys; print(\"\\n\".join(zipfile.ZipFile(sys.argv[1]).namelist()))' curl.body")
        let names = Set(listed.out.split(separator: "\n").map(String.init))
        #expect(names == Set(stored.compactMap { $0["id"] as? String }.map { $0 + ".age" }), "\(listed.out)")
        // Both downloads are in the office's history.
        let log = office.run("log")
        #expect(log.out.contains("alice downloaded"), "\(log.out)")
        _ = ids
    }
}
