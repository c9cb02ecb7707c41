import Crypto
import Foundation
import Testing
import VaultTestSupport

/// A capture-only station (`vault init --capture-for`), through the built binary: each document
/// is sealed to the office's recipients as it is added, Debian's `age` opens what it wrote (the
/// data file as it is, the metadata after the station's record), and nothing the station holds —
/// its folder and its password — opens or contains any of it.
@Suite(.blocking) struct CaptureStationCLITests {
    static let documents: [(path: String, name: String, bytes: [UInt8])] = [
        ("in/scan.pdf", "scan.pdf", Array("%PDF-1.4 a captured page that only the office may read".utf8)),
        ("in/sub/big.bin", "sub/big.bin", .random(3 << 20, seed: 62)),
        ("in/odd \"name\" <é>.txt", "odd \"name\" <é>.txt", Array("an odd name, and some text to find".utf8)),
        ("in/empty", "empty", [])
    ]

    /// A station sealed to two X25519 recipients (age-keygen's), holding ``documents`` (tagged)
    /// and one document from standard input.
    static func station(_ s: Sandbox) throws -> (ids: [String: String], office: String) {
        #expect(s.shell("age-keygen -o office.key 2>/dev/null && age-keygen -o spare.key 2>/dev/null").status == 0)
        let office = try SealedDeliveryCLITests.recipient(s, "office.key")
        let spare = try SealedDeliveryCLITests.recipient(s, "spare.key")
        s.write("office.recipients", Array("# the office\n\(office)\n\(spare)\n".utf8))
        let created = s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("office.recipients"))
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stderr.contains("a capture-only station: documents are sealed to 2 recipients"))
        try FileManager.default.createDirectory(atPath: s.path("in/sub"), withIntermediateDirectories: true)
        for d in documents { s.write(d.path, d.bytes) }
        let added = s.run("add", "-r", s.path("in"), "--tag", "north", "--json")
        #expect(added.status == 0, "\(added.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(added.stdout)) as? [String: Any])
        var ids: [String: String] = [:]
        for a in try #require(json["added"] as? [[String: Any]]) {
            ids[try #require(a["name"] as? String)] = try #require(a["id"] as? String)
            #expect(a["contentType"] as? String == "application/age-encryption")
        }
        let piped = s.run("add", "-", "--name", "piped.txt", stdin: Array("typed at the station, sealed at once".utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        ids["piped.txt"] = piped.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(ids.count == documents.count + 1)
        return (ids, office)
    }

    /// The metadata age file of captured document `id` (after the station's sealed record).
    static func metadataFile(_ s: Sandbox, _ id: String) throws -> [UInt8] {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("vault/objects/\(id).meta.vlt"))))
        #expect(Array(bytes.prefix(8)) == Array("VAULTCAP".utf8))
        let n = bytes[9..<13].reduce(0) { $0 << 8 | Int($1) }
        return Array(bytes[(13 + n)...])
    }

    @Test func theOfficeOpensWhatTheStationCapturedAndTheStationNothing() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, _) = try Self.station(s)
        var all = Self.documents.map { ($0.name, $0.bytes) }
        all.append(("piped.txt", Array("typed at the station, sealed at once".utf8)))
        for (name, bytes) in all {
            let id = try #require(ids[name])
            let data = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("vault/objects/\(id).vlt"))))
            #expect(
                SealedDeliveryCLITests.ageDecrypt(s, data, identity: "office.key") == bytes, "\(name): byte for byte")
            let meta = try #require(
                SealedDeliveryCLITests.ageDecrypt(s, try Self.metadataFile(s, id), identity: "office.key"))
            let m = try #require(try JSONSerialization.jsonObject(with: Data(meta)) as? [String: Any])
            #expect(m["Id"] as? String == id && m["Name"] as? String == name && m["Size"] as? Int == bytes.count)
            #expect(m["SHA256"] as? String == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
            #expect((m["Tags"] as? [String] ?? []) == (name == "piped.txt" ? [] : ["north"]))
        }
        // The other recipient opens them too.
        let big = try #require(ids["sub/big.bin"])
        let data = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("vault/objects/\(big).vlt"))))
        #expect(SealedDeliveryCLITests.ageDecrypt(s, data, identity: "spare.key") == Self.documents[1].bytes)
    }

    /// A station sealed to a post-quantum recipient (ML-KEM-768 + X25519: Debian's age has none,
    /// so an office vault imports the data file with vault's identity); classic and post-quantum
    /// recipients are not mixed, as age requires.
    @Test func aPostQuantumStationIsOpenedByItsIdentityAndKindsAreNotMixed() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let pq = s.run("keygen", "--post-quantum", "--out", s.path("pq.key")).out.trimmingCharacters(in: .whitespaces)
        #expect(pq.hasPrefix("age1pq1"))
        #expect(s.shell("age-keygen -o office.key 2>/dev/null").status == 0)
        let classic = try SealedDeliveryCLITests.recipient(s, "office.key")
        s.write("mixed.recipients", Array("\(classic)\n\(pq)\n".utf8))
        let mixed = s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("mixed.recipients"))
        #expect(mixed.status == 64 && mixed.stderr.contains("mixes post-quantum"), "\(mixed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("vault/vault.json")))
        s.write("pq.recipients", Array("\(pq)\n".utf8))
        #expect(s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("pq.recipients")).status == 0)
        let bytes = [UInt8].random(200_000, seed: 7)
        s.write("scan.bin", bytes)
        let id = s.run("add", s.path("scan.bin")).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let office = ["VAULT_DIR": s.path("office")]
        #expect(s.run(["init", "--kdf", "insecure-test"], env: office).status == 0)
        let imported = s.run(
            ["import", "--age", "--identity", s.path("pq.key"), s.path("vault/objects/\(id).vlt")], env: office)
        #expect(imported.status == 0, "\(imported.stderr)")
        let got = s.run(["get", imported.out.trimmingCharacters(in: .whitespacesAndNewlines), "-o", "-"], env: office)
        #expect(got.stdout == bytes, "the post-quantum identity opens the same bytes")
    }

    @Test func nothingUnderTheStationsFolderHoldsOrOpensWhatItCaptured() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office) = try Self.station(s)
        // No 32-byte window of any document (every window of the small ones, one every 4 KiB of
        // the large one) is in any file under the vault, in any of them.
        var files: [Data] = []
        let walker = FileManager.default.enumerator(atPath: s.path("vault"))
        while let f = walker?.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: s.path("vault/" + f), isDirectory: &isDir), !isDir.boolValue {
                files.append(try Data(contentsOf: URL(fileURLWithPath: s.path("vault/" + f))))
            }
        }
        #expect(files.count >= 2 * ids.count, "the data and metadata file of each document, at least")
        var windows = 0
        for d in Self.documents where d.bytes.count >= 32 {
            let stride = d.bytes.count > 4096 ? 4096 : 1
            for start in Swift.stride(from: 0, through: d.bytes.count - 32, by: stride) {
                let window = Data(d.bytes[start..<(start + 32)])
                windows += 1
                #expect(!files.contains { $0.range(of: window) != nil }, "\(d.name) at \(start) is in the vault")
            }
        }
        #expect(windows > 700)
        // Nothing that needs the contents works: a sentence and exit 64, nothing written.
        for args in [["get", ids["scan.pdf"]!, "-o", s.path("out")], ["export", "--out", s.path("outbox")]] {
            let r = s.run(args)
            #expect(r.status == 64 && r.stderr.contains("this is a capture-only station"), "\(args): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: s.path("out")))
        // An upload goes as captured (CapturedDeliveryCLITests): never sealed again to other
        // recipients, nor in a shape without ids; refused before connecting.
        for extra in [["--recipient", office], ["--shape", "strings"]] {
            let upload = s.run(["upload", "--url", "http://127.0.0.1:9/batches", "--no-credentials"] + extra)
            #expect(upload.status == 64 && upload.stderr.contains("capture-only station"), "\(extra): \(upload.stderr)")
        }
        // What the station can do: list, verify (the sealed files as captured), audit, passwd.
        let list = s.run("list")
        #expect(list.status == 0 && list.out.contains("odd \"name\" <é>.txt") && list.out.contains("sub/big.bin"))
        #expect(s.run("verify").status == 0)
        #expect(s.run("audit", "--deep").status == 0)
        let changed = s.run(["passwd", "--kdf", "insecure-test"], env: ["VAULT_NEW_PASSWORD": "another password"])
        #expect(changed.status == 0, "\(changed.stderr)")
        let verified = s.run(["verify"], env: ["VAULT_PASSWORD": "another password"])
        #expect(verified.status == 0 && verified.out.contains("5 ok"), "\(verified.out)\(verified.stderr)")
    }

    @Test func whatTheFolderHoldsCannotBeChangedUnseen() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        let (ids, office) = try Self.station(s)
        let big = try #require(ids["sub/big.bin"])
        let path = s.path("vault/objects/\(big).vlt"), meta = s.path("vault/objects/\(big).meta.vlt")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let metaBytes = try Data(contentsOf: URL(fileURLWithPath: meta))
        // A byte of the data changed, then a byte moved from the data file to the metadata file.
        var flipped = data
        flipped[100_000] ^= 1
        try flipped.write(to: URL(fileURLWithPath: path))
        var r = s.run("verify")
        #expect(r.status == 65 && r.out.contains("DAMAGED  \(big)"), "\(r.out)")
        try Data(data.dropLast()).write(to: URL(fileURLWithPath: path))
        try (metaBytes + data.suffix(1)).write(to: URL(fileURLWithPath: meta))
        r = s.run("verify")
        #expect(r.status == 65 && r.out.contains("DAMAGED  \(big)"), "\(r.out)")
        try data.write(to: URL(fileURLWithPath: path))
        try metaBytes.write(to: URL(fileURLWithPath: meta))
        #expect(s.run("verify").status == 0)
        // Recipients swapped in vault.json by someone without the password: the vault does not
        // open, and nothing is sealed to the new recipient (not even a staged file).
        #expect(s.shell("age-keygen -o thief.key 2>/dev/null").status == 0)
        let thief = try SealedDeliveryCLITests.recipient(s, "thief.key")
        let config = try String(contentsOfFile: s.path("vault/vault.json"), encoding: .utf8)
        try config.replacingOccurrences(of: office, with: thief).write(
            toFile: s.path("vault/vault.json"), atomically: true, encoding: .utf8)
        let before = try FileManager.default.contentsOfDirectory(atPath: s.path("vault/objects")).sorted()
        s.write("new.txt", Array("captured after the edit".utf8))
        let refused = s.run("add", s.path("new.txt"))
        #expect(refused.status != 0, "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.path("vault/objects")).sorted() == before)
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: s.path("vault/staging"))) ?? []
        #expect(staged.isEmpty, "\(staged)")
        try config.write(toFile: s.path("vault/vault.json"), atomically: true, encoding: .utf8)
        // A metadata file without its data (an add killed between the two renames) is swept.
        let lone = s.path("vault/objects/\(String(repeating: "ab", count: 16)).meta.vlt")
        try metaBytes.write(to: URL(fileURLWithPath: lone))
        #expect(s.run("list").status == 0)
        #expect(!FileManager.default.fileExists(atPath: lone), "a lone metadata file is swept")
        // A removal takes both files of the document.
        #expect(s.run("remove", big).status == 0)
        #expect(!FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: meta))
        #expect(s.run("audit").status == 0)
    }
}
