import Crypto
import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `vault upload --protocol form` against PHP's own multipart parser (`php -S` running
/// scripts/form-receiver.php, which checks every `$_FILES` entry against the manifest part).
@Suite(.blocking) struct FormUploadCLITests {
    static let token: [String: String?] = ["VAULT_UPLOAD_TOKEN": "form-token"]

    /// Names browsers and back offices meet: non-ASCII, quotes, spaces, a CR/LF-free oddity.
    static let names = [
        "Müller—Ωmega.pdf", "say \"hi\".txt", "日本語の書類.txt", "plain.bin", "a;b=c d.jpg", "emoji 📄.png",
        "back\\", "C:\\dir\\scan.pdf"
    ]

    /// What PHP makes of a file name vault sent: the percent-encoding of `"` and `\` is not
    /// undone (a raw backslash ending a name swallowed the closing quote, issue 21).
    static func asPHPSees(_ name: String) -> String {
        name.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\\", with: "%5C")
    }

    @Test func fortyFiveDocumentsArriveOnceAndByteIdenticalThroughPHP() throws {
        let s = Sandbox()
        s.initVault()
        var originals: [String: [UInt8]] = [:]  // name -> bytes
        var paths: [String] = []
        for i in 0..<45 {
            let size = [0, 1, 700, 65_536, 65_537, 300_000, 900_000][i % 7] + i
            let name = "\(i)-" + Self.names[i % Self.names.count]
            let bytes = [UInt8].random(size, seed: UInt64(9000 + i))
            s.write("in-\(i)", bytes)
            let r = s.run("add", "in-\(i)", "--name", name)
            try #require(r.status == 0, "\(r.stderr)")
            originals[name] = bytes
            paths.append(name)
        }
        // post_max_size below what 20 of these documents need: PHP drops such bodies, the script
        // answers 413, and vault splits the batch.
        let php = try PHPServer(in: s, postMaxSize: "2M")
        let r = s.run(
            [
                "upload", "--url", php.url, "--protocol", "form", "--form-field", "case=4711", "--form-field",
                "station=front desk",
                "--progress", "json", "--json"
            ], env: Self.token)
        #expect(r.status == 0, "\(r.stderr)")
        let splits = r.events.compactMap { $0 }.filter { $0["event"] as? String == "split" }
        #expect(!splits.isEmpty, "a batch over post_max_size was split on 413")
        // Every document stored once, byte-identical, under the name PHP saw.
        let list = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        let idToName = Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as! String, $0["name"] as! String) })
        #expect(php.stored == idToName.keys.sorted())
        for id in php.stored {
            let name = idToName[id]!
            #expect(php.bytes(of: id) == originals[name], "\(name)")
            #expect(php.names[id]?["php"] == Self.asPHPSees(name))
            #expect(php.names[id]?["manifest"] == name)
        }
        let fields =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: php.store + "/fields.json")))
            as? [String: String]
        #expect(fields == ["case": "4711", "station": "front desk"])
        // Every request was a POST the script saw; none had more than PHP's 20 files.
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        #expect(result["documents"] as? Int == 45)
        #expect(php.requests.count == (result["batches"] as! Int) + splits.count)

        // The same command again: the destination confirmed every document, nothing is sent.
        let again = s.run(
            [
                "upload", "--url", php.url, "--protocol", "form", "--form-field", "case=4711", "--form-field",
                "station=front desk"
            ],
            env: Self.token)
        #expect(again.status == 0)
        #expect(again.stderr.contains("nothing new to send"))
        #expect(php.stored.count == 45)
        // The history names the target without credentials.
        #expect(s.run("log").out.contains("-> \(php.url)"))
    }

    @Test func aDocumentFailingMidStreamAbortsTheRequestAndSkipBadResendsWithoutIt() throws {
        let s = Sandbox()
        s.initVault()
        var ids: [String] = []
        for i in 0..<3 {
            s.write("d\(i).bin", .random(3 << 20, seed: UInt64(9100 + i)))
            ids.append(s.run("add", "d\(i).bin").out.trimmingCharacters(in: .newlines))
        }
        // Damage the middle document near its end: its first megabytes authenticate and go out.
        let object = s.path("vault/objects/\(ids[1]).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 100] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let php = try PHPServer(in: s)

        let stop = s.run(["upload", "--url", php.url, "--protocol", "form"], env: Self.token)
        #expect(stop.status == 65)
        #expect(stop.stderr.contains("vault: document \(ids[1]): chunk 47 failed authentication"))
        #expect(php.stored.isEmpty, "PHP never got a complete body: \(php.stored)")

        let skip = s.run(["upload", "--url", php.url, "--protocol", "form", "--skip-bad"], env: Self.token)
        #expect(skip.status == 2, "\(skip.stderr)")
        #expect(php.stored == [ids[0], ids[2]].sorted())
        #expect(php.bytes(of: ids[2]) == [UInt8].random(3 << 20, seed: 9102))
    }

    @Test func theServersAnswersAreHandledAsForJSON() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(1000, seed: 9200))
        #expect(s.run("add", "a.txt").status == 0)
        let php = try PHPServer(in: s)
        let wrong = s.run(["upload", "--url", php.url, "--protocol", "form"], env: ["VAULT_UPLOAD_TOKEN": "wrong"])
        #expect(wrong.status == 76)
        #expect(wrong.stderr.hasPrefix("vault: the server refused the credentials (401 Unauthorized)"))
        // A field name PHP does not look under: the script finds no files and answers 422.
        let field = s.run(
            ["upload", "--url", php.url, "--protocol", "form", "--field", "other", "--new-run"], env: Self.token)
        #expect(field.status == 69)
        #expect(field.stderr.contains("422") && field.stderr.contains("the manifest names 1 documents, PHP received 0"))
        #expect(s.run(["upload", "--url", php.url, "--field", "x"]).status == 64)
        #expect(s.run(["upload", "--url", php.url, "--protocol", "form", "--form-field", "manifest=x"]).status == 64)
        #expect(s.run(["upload", "--url", php.url, "--protocol", "form", "--form-field", "novalue"]).status == 64)
    }

    /// werkzeug's parser (Flask back offices) gets every part with its name, and one manifest
    /// only, even from a document that carries a boundary-like line and a manifest part.
    @Test func werkzeugGetsEveryNameAndOneManifest() throws {
        let s = Sandbox()
        s.initVault()
        let injected = Array(
            """
                head\r\n--vault-0000000000000000000000000000000000000000\r\nContent-Disposition: form-data; \
                name=\"manifest\"\r\n\r\n{\"batch\":1,\"documents\":[]}\r\n\
                --vault-0000000000000000000000000000000000000000--\r\n
                """
                .utf8)
        var expected: [String: String] = [:]  // werkzeug's name -> SHA-256
        for (i, name) in (Self.names + ["injected.txt"]).enumerated() {
            let bytes = name == "injected.txt" ? injected : [UInt8].random(500 + i, seed: UInt64(700 + i))
            s.write("w\(i)", bytes)
            #expect(s.run("add", "w\(i)", "--name", name).status == 0)
            // werkzeug undoes the %22 of a quote, not the %5C of a backslash.
            expected[name.replacingOccurrences(of: "\\", with: "%5C")] = SHA256.hash(data: bytes).map {
                String(format: "%02x", $0)
            }.joined()
        }
        let peer = try PythonPeer("werkzeug-receiver.py", [], in: s)
        let r = s.run(["upload", "--url", "http://127.0.0.1:\(peer.port)/in", "--protocol", "form", "--no-credentials"])
        #expect(r.status == 0, "\(r.stderr)")
        let entries = peer.entries
        #expect(entries.count == 1 && entries[0]["error"] == nil, "\(entries)")
        let files = (entries.first?["files"] as? [[String: Any]]) ?? []
        #expect(
            Dictionary(
                files.map { ($0["filename"] as? String ?? "?", $0["sha256"] as? String ?? "?") },
                uniquingKeysWith: { a, _ in a }) == expected)
        #expect((entries.first?["manifests"] as? [String])?.count == 1, "one manifest part, the real one")
    }
}
