import Crypto
import Foundation
import Testing

/// End-to-end tests of the built `vault` binary: exact messages, exit codes, bytes, and that
/// nothing partial is left behind.
@Suite(.blocking) struct CLITests {
    static func listJSON(_ s: Sandbox) throws -> [[String: Any]] {
        let r = s.run("list", "--json")
        #expect(r.status == 0, "list failed: \(r.stderr)")
        return try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [[String: Any]]
    }

    @Test func fixtureDocumentsRoundTripByteForByte() throws {
        let s = Sandbox()
        s.initVault()
        let dir = Sandbox.repository.appendingPathComponent("Fixtures/documents").path
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(names.count >= 8)
        let add = s.run(["add"] + names.map { dir + "/" + $0 })
        #expect(add.status == 0, "\(add.stderr)")
        let ids = add.out.split(separator: "\n").map(String.init)
        #expect(ids.count == names.count && ids.allSatisfy { $0.count == 32 })
        let listed = try Self.listJSON(s)
        let expectedTypes = [
            "receipt.jpg": "image/jpeg", "scan.png": "image/png", "contract.pdf": "application/pdf",
            "diagram.gif": "image/gif", "photo.tiff": "image/tiff", "photo.webp": "image/webp",
            "notes.txt": "text/plain", "archive.bin": "application/octet-stream", "empty.txt": "text/plain"
        ]
        for (id, name) in zip(ids, names) {
            let original = Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
            let entry = try #require(listed.first { $0["id"] as? String == id })
            #expect(entry["name"] as? String == name)
            #expect(entry["size"] as? Int == original.count)
            #expect(
                entry["sha256"] as? String == SHA256.hash(data: original).map { String(format: "%02x", $0) }.joined())
            if let type = expectedTypes[name] { #expect(entry["contentType"] as? String == type, "\(name)") }
            let out = s.path("out-" + name)
            let get = s.run("get", String(id.prefix(8)), "-o", out)
            #expect(get.status == 0, "\(get.stderr)")
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == original, "\(name) differs after get")
            #expect(FileManager.default.fileExists(atPath: out))
        }
        #expect(s.run("verify").status == 0)
    }

    @Test func oddNamesSurviveListAndGet() throws {
        let s = Sandbox()
        s.initVault()
        let names = [
            "with space.txt", "quote\"s.pdf", "back\\slash", "new\nline.txt", "emoji 🎉📄.png", "tab\there", "ünïcødé 文件"
        ]
        for (i, name) in names.enumerated() {
            let r = s.run("add", "-", "--name", name, "--tag", "odd", stdin: Array("content \(i)\n".utf8))
            #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        let listed = try Self.listJSON(s)
        #expect(listed.compactMap { $0["name"] as? String } == names)
        for (i, name) in names.enumerated() {
            let r = s.run("get", name)
            #expect(r.status == 0, "\(name): \(r.stderr)")
            #expect(r.out == "content \(i)\n")
        }
        let table = s.run("list").out
        #expect(table.contains("new\\nline.txt"), "control characters are escaped in the table")
        #expect(!table.contains("new\nline"))
        #expect(table.split(separator: "\n").count == names.count + 1)
    }

    @Test func wrongPasswordFailsWithItsOwnCodeAndMessage() {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("hello".utf8))
        #expect(s.run("add", "a.txt").status == 0)
        for args in [["list"], ["get", "a.txt"], ["verify"], ["add", "a.txt"], ["remove", "a.txt"]] {
            let r = s.run(args, env: ["VAULT_PASSWORD": "wrong"])
            #expect(r.status == 77, "\(args)")
            #expect(r.stderr == "vault: wrong password\nvault: hint: check VAULT_PASSWORD\n")
            #expect(r.stdout.isEmpty)
        }
        #expect(s.objects.count == 1)
    }

    /// `add` starts encrypting while Argon2id checks the password (only the header needs its
    /// key): with a wrong password nothing is committed, no temporary file stays, no history
    /// record is written, and the error is the wrong password's, for the first file as for the
    /// ones after it.
    @Test func aWrongPasswordDuringALargeAddCommitsNothing() throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: 64, seed: 5)
        s.write("small.txt", Array("small".utf8))
        let logBefore = try #require(FileManager.default.contents(atPath: s.path("vault/log.vlt")))
        for args in [["add", "big.bin"], ["add", "big.bin", "small.txt"], ["add", "small.txt", "big.bin"]] {
            let r = s.run(args, env: ["VAULT_PASSWORD": "wrong"])
            #expect(r.status == 77, "\(args)")
            #expect(r.stderr == "vault: wrong password\nvault: hint: check VAULT_PASSWORD\n", "\(args)")
            #expect(r.stdout.isEmpty)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: s.path("vault/objects")).isEmpty,
                "no object and no temporary file: \(args)")
        }
        #expect(FileManager.default.contents(atPath: s.path("vault/log.vlt")) == logBefore, "nothing was recorded")
        #expect(s.run("add", "big.bin", "small.txt").status == 0)
        #expect(s.run("verify").status == 0)
        #expect(s.objects.count == 2)
    }

    /// `get --range START-END`: inclusive byte offsets as in HTTP Range, to stdout or -o FILE;
    /// END past the end is the last byte; bad ranges are usage errors that write nothing.
    @Test func getRangeReturnsExactlyTheRequestedBytes() throws {
        let s = Sandbox()
        s.initVault()
        let plain = [UInt8].random(3 * 65536 + 1234, seed: 77)
        s.write("doc.bin", plain)
        let id = s.run("add", "doc.bin").out.trimmingCharacters(in: .whitespacesAndNewlines)
        for (start, end) in [
            (0, 0), (0, 1023), (65535, 65536), (65530, 2 * 65536 + 3), (plain.count - 1, plain.count - 1),
            (100, plain.count - 1)
        ] {
            let r = s.run("get", id, "--range", "\(start)-\(end)")
            #expect(r.status == 0, "\(start)-\(end): \(r.stderr)")
            #expect(r.stdout == Array(plain[start...end]), "\(start)-\(end)")
        }
        #expect(
            s.run("get", id, "--range", "196000-999999999").stdout == Array(plain[196000...]),
            "END past the end is the last byte")
        #expect(s.run("get", id, "--range", "196000-").stdout == Array(plain[196000...]))
        #expect(s.run("get", id, "--range", "10-19", "-o", "piece.bin").status == 0)
        #expect(FileManager.default.contents(atPath: s.path("piece.bin")).map(Array.init) == Array(plain[10...19]))
        for bad in ["20-10", "abc", "5", "\(plain.count)-\(plain.count + 10)"] {
            let r = s.run("get", id, "--range", bad, "-o", "bad.bin")
            #expect(r.status == 64, "\(bad): \(r.stderr)")
            #expect(r.stderr.hasPrefix("vault: --range \(bad) "), "\(bad): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: s.path("bad.bin")))
        }
    }

    @Test func passwordSources() {
        let s = Sandbox()
        s.write("pw", Array("file password\n".utf8))
        #expect(
            s.run("init", "--kdf", "insecure-test", "--password-file", s.path("pw"), env: ["VAULT_PASSWORD": nil])
                .status == 0)
        #expect(s.run("list", "--password-file", s.path("pw")).status == 0)
        #expect(
            s.run("--password-file", s.path("pw"), "list").status == 0, "global options also work before the command")
        let none = s.run("list", env: ["VAULT_PASSWORD": nil])
        #expect(none.status == 64)
        #expect(
            none.stderr
                == """
                    vault: no password given and no terminal to ask on\nvault: hint: set VAULT_PASSWORD, \
                    VAULT_PASSWORD_FILE or VAULT_PASSWORD_COMMAND, or pass --password-file FILE\n
                    """
        )
        let missing = s.run("list", "--password-file", s.path("nope"))
        #expect(missing.status == 3)
        #expect(
            missing.stderr.hasPrefix("vault: password file: cannot open \(s.path("nope")): no such file or directory\n")
        )
        let empty = s.run("list", env: ["VAULT_PASSWORD": ""])
        #expect(empty.status == 64)
        #expect(empty.stderr.hasPrefix("vault: the password is empty\n"))
    }

    @Test func missingFileAddsNothing() {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("hello".utf8))
        let r = s.run("add", "a.txt", "missing.txt")
        #expect(r.status == 3)
        #expect(r.stderr == "vault: missing.txt: no such file\nvault: hint: nothing was added\n")
        #expect(s.objects.isEmpty)
        #expect(r.stdout.isEmpty)
    }

    @Test func directoryNeedsRecursive() throws {
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("docs/sub"), withIntermediateDirectories: true)
        s.write("docs/a.txt", Array("a".utf8))
        s.write("docs/sub/b.txt", Array("b".utf8))
        let r = s.run("add", "docs")
        #expect(r.status == 64)
        #expect(
            r.stderr
                == "vault: docs is a directory\nvault: hint: use -r to add the files inside it; nothing was added\n")
        #expect(s.objects.isEmpty)
        let rr = s.run("add", "-r", "docs")
        #expect(rr.status == 0, "\(rr.stderr)")
        #expect(try Self.listJSON(s).compactMap { $0["name"] as? String }.sorted() == ["a.txt", "sub/b.txt"])
    }

    @Test func verifyNamesADamagedDocumentAndGetLeavesNoFile() throws {
        let s = Sandbox()
        s.initVault()
        s.write("good.bin", .random(100_000, seed: 1))
        s.write("bad.bin", .random(300_000, seed: 2))
        #expect(s.run("add", "good.bin").status == 0)
        let badID = s.run("add", "bad.bin").out.trimmingCharacters(in: .whitespacesAndNewlines)
        let object = s.path("vault/objects/\(badID).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 70_000] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: object))

        let v = s.run("verify")
        #expect(v.status == 65)
        #expect(v.out.contains("DAMAGED  \(badID)  bad.bin: chunk 3 failed authentication\n"))
        #expect(v.out.contains("verified 2 documents: 1 ok, 1 damaged; index ok"))
        #expect(
            v.stderr
                == """
                    vault: 1 of 2 documents is damaged\nvault: hint: restore the damaged documents from a backup and \
                    remove them here\n
                    """
        )
        let json = try JSONSerialization.jsonObject(with: Data(s.run("verify", "--json").stdout)) as! [String: Any]
        #expect(json["damaged"] as? Int == 1 && json["ok"] as? Int == 1)

        let get = s.run("get", "bad.bin", "-o", s.path("restored.bin"))
        #expect(get.status == 65)
        #expect(
            get.stderr
                == """
                    vault: document \(badID): chunk 3 failed authentication\nvault: hint: the document is damaged or \
                    was tampered with\n
                    """
        )
        #expect(!FileManager.default.fileExists(atPath: s.path("restored.bin")))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: s.dir).filter { $0.hasPrefix(".vault-tmp-") }.isEmpty)
        #expect(s.run("get", "good.bin", "-o", s.path("good.out")).status == 0)
    }

    @Test func killDuringALargeAddLeavesAVaultThatVerifies() throws {
        let s = Sandbox()
        s.initVault()
        s.write("small.txt", Array("small".utf8))
        #expect(s.run("add", "small.txt").status == 0)
        try s.writeLarge("big.bin", mebibytes: 384, seed: 5)

        let pid = s.spawn(["add", "big.bin"])
        let grown = Fixtures.awaitTemporary(in: s.path("vault/staging"), atLeast: (32 << 20) + 1, pid: pid)
        kill(pid, SIGKILL)
        let r = s.wait(pid)
        #expect(grown, "the add never got going")
        #expect(r.status == 128 + 9)
        let verify = s.run("verify")
        #expect(verify.status == 0, "\(verify.out) \(verify.stderr)")
        #expect(try Self.listJSON(s).compactMap { $0["name"] as? String } == ["small.txt"])
        #expect(s.objects.filter { $0.hasSuffix(".vlt") }.count == 1)
    }

    @Test func outputsAndResolutionRules() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        let id = s.run("add", "a.txt").out.trimmingCharacters(in: .newlines)
        s.write("exists.txt", Array("keep me".utf8))
        let r = s.run("get", "a.txt", "-o", "exists.txt")
        #expect(r.status == 73)
        #expect(r.stderr == "vault: exists.txt already exists\nvault: hint: use --force to replace it\n")
        #expect(try String(contentsOfFile: s.path("exists.txt"), encoding: .utf8) == "keep me")
        #expect(s.run("get", "a.txt", "-o", "exists.txt", "--force").status == 0)
        #expect(try String(contentsOfFile: s.path("exists.txt"), encoding: .utf8) == "alpha")
        #expect(FileManager.default.fileExists(atPath: s.path("exists.txt")))

        let short = s.run("get", String(id.prefix(3)))
        #expect(short.status == 3)
        #expect(
            short.stderr
                == """
                    vault: no document matches '\(id.prefix(3))'\nvault: hint: an id prefix needs at least 4 \
                    characters\n
                    """
        )
        let unknown = s.run("remove", String(id.prefix(6)), "nope")
        #expect(unknown.status == 3)
        #expect(s.objects.count == 1, "nothing is removed when one argument is unknown")
        let init2 = s.run("init")
        #expect(init2.status == 73)
        #expect(init2.stderr == "vault: a vault already exists at \(s.path("vault"))\n")
        let rm = s.run("remove", String(id.prefix(6)))
        #expect(rm.status == 0 && rm.out == id + "\n")
        #expect(s.run("list").out == "")
        let missing = s.run("list", "--vault", s.path("elsewhere"))
        #expect(missing.status == 3)
        #expect(
            missing.stderr
                == """
                    vault: no vault at \(s.path("elsewhere"))\nvault: hint: check the path, or create a vault there \
                    with 'vault init --vault \(s.path("elsewhere"))'\n
                    """
        )
    }

    @Test func ambiguousNamesAndPermissions() throws {
        let s = Sandbox()
        s.initVault()
        for i in 0..<2 { #expect(s.run("add", "-", "--name", "same.txt", stdin: [UInt8(i)]).status == 0) }
        let r = s.run("get", "same.txt")
        #expect(r.status == 4)
        #expect(r.stderr.hasPrefix("vault: 'same.txt' matches 2 documents: "))
        let fm = FileManager.default
        func mode(_ p: String) -> Int { ((try? fm.attributesOfItem(atPath: p))?[.posixPermissions] as? Int) ?? -1 }
        #expect(mode(s.path("vault")) == 0o700)
        #expect(mode(s.path("vault/objects")) == 0o700)
        for f in ["vault.json", "index.db", "lock"] { #expect(mode(s.path("vault/" + f)) == 0o600, "\(f)") }
        for o in s.objects { #expect(mode(s.path("vault/objects/" + o)) == 0o600) }
        let config = try String(contentsOfFile: s.path("vault/vault.json"), encoding: .utf8)
        #expect(!config.contains("correct horse battery"))
    }
}
