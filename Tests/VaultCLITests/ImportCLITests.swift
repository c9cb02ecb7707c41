import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `vault import --rncryptor` against files made by an implementation this project did not
/// write: the `rncryptor` package from PyPI (installed by `make test` into .build-peers/).
@Suite(.blocking) struct ImportCLITests {
    static let password = "pässwörd 密码"
    static var python: String { Sandbox.repository.appendingPathComponent(".build-peers/venv/bin/python").path }

    /// Runs `script` with the peer's Python in the sandbox folder; fails the test if the peer is missing.
    static func peer(_ s: Sandbox, _ script: String) throws {
        #expect(FileManager.default.isExecutableFile(atPath: python), "the rncryptor peer is missing: run 'make peers'")
        s.write("peer.py", Array(script.utf8))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [s.path("peer.py")]
        p.currentDirectoryURL = URL(fileURLWithPath: s.dir)
        p.environment = ["PEER_PASSWORD": password]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "the peer script failed")
    }

    static let env: [String: String?] = ["VAULT_IMPORT_PASSWORD": password]

    @Test func filesThePythonPackageEncryptedComeBackByteIdentical() throws {
        let s = Sandbox()
        s.initVault()
        let sizes = [0, 1, 15, 16, 17, 1 << 20, 50 << 20]
        try Self.peer(
            s,
            """
            import os, random, rncryptor
            os.makedirs("in", exist_ok=True)
            c = rncryptor.RNCryptor()
            for n in \(sizes):
                data = random.Random(n).randbytes(n)
                open(f"plain-{n}.bin", "wb").write(data)
                open(f"in/doc-{n}.bin.rncryptor", "wb").write(c.encrypt(data, os.environ["PEER_PASSWORD"]))
            """)
        let r = s.run(["import", "--rncryptor", "-r", "in", "--tag", "legacy", "--json"], env: Self.env)
        #expect(r.status == 0, "\(r.stderr)")
        Fixtures.write(s.path("import.json"), r.stdout)
        #expect(Fixtures.validate(s.path("import.json"), schema: "import").status == 0)
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        let imported = result["imported"] as! [[String: Any]]
        #expect(imported.count == sizes.count && (result["failed"] as! [Any]).isEmpty)
        for entry in imported {
            let name = entry["name"] as! String
            #expect(name.hasPrefix("doc-") && name.hasSuffix(".bin"), "the .rncryptor suffix is dropped: \(name)")
            let n = Int(name.dropFirst(4).dropLast(4))!
            let get = s.run("get", entry["id"] as! String, "-o", "out-\(n).bin")
            #expect(get.status == 0)
            let original = try Data(contentsOf: URL(fileURLWithPath: s.path("plain-\(n).bin")))
            #expect(try Data(contentsOf: URL(fileURLWithPath: s.path("out-\(n).bin"))) == original, "\(n) bytes")
            #expect(entry["size"] as? Int == n)
        }
        let list =
            try JSONSerialization.jsonObject(with: Data(s.run("list", "--json", "--tag", "legacy").stdout))
            as! [[String: Any]]
        #expect(list.count == sizes.count)
        // The same files again: all skipped as already in the vault, exit 0 (a re-run is harmless).
        let again = s.run(["import", "--rncryptor", "-r", "in"], env: Self.env)
        #expect(
            again.status == 0 && again.stderr.hasSuffix("0 failed, 7 skipped (already in the vault)\n"),
            "\(again.stderr)")
        // Progress counts files and RNCryptor bytes; with json, the finished event is the summary.
        let json = s.run(["import", "--rncryptor", "-r", "in", "--progress", "json"], env: Self.env)
        let events = json.events.compactMap { $0 }
        #expect(events.count == json.events.count, "only JSON lines: \(json.stderr)")
        let bytes = try FileManager.default.contentsOfDirectory(atPath: s.path("in"))
            .reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: s.path("in/" + $1))[.size] as! Int) }
        #expect(
            events.first?["event"] as? String == "started" && events.first?["files"] as? Int == 7
                && events.first?["bytes"] as? Int == bytes)
        #expect(
            events.filter { $0["event"] as? String == "fileStarted" }.map { $0["position"] as? Int } == Array(1...7))
        #expect(events.filter { $0["event"] as? String == "fileSkipped" }.count == 7)
        let last = events.last ?? [:]
        #expect(
            last["event"] as? String == "finished" && last["imported"] as? Int == 0 && last["skipped"] as? Int == 7
                && last["failed"] as? Int == 0)
        // A wrong password: exit 65, nothing added, the file named.
        let wrong = s.run(
            ["import", "--rncryptor", "in/doc-1.bin.rncryptor", "--allow-duplicate"],
            env: ["VAULT_IMPORT_PASSWORD": "wrong"])
        #expect(wrong.status == 65)
        #expect(
            wrong.stderr
                == """
                    vault: cannot import in/doc-1.bin.rncryptor: the HMAC does not match: a wrong RNCryptor password \
                    or key, or the file was changed\n
                    """
                + "vault: hint: check the RNCryptor password or keys; nothing was added from this file\n")
        #expect(s.objects.filter { $0.hasSuffix(".vlt") }.count == sizes.count)
    }

    @Test func everyBitFlipAndTruncationIsRefusedWithNothingAdded() throws {
        let s = Sandbox()
        s.initVault()
        try Self.peer(
            s,
            """
            import os, rncryptor
            os.makedirs("bad", exist_ok=True)
            m = rncryptor.RNCryptor().encrypt(b"a scan of 21 bytes...", os.environ["PEER_PASSWORD"])
            open("good.rncryptor", "wb").write(m)
            for i in range(len(m)):
                for bit in range(8):
                    d = bytearray(m); d[i] ^= 1 << bit
                    open(f"bad/flip-{i:03d}-{bit}.rncryptor", "wb").write(d)
            for n in range(len(m)):
                open(f"bad/cut-{n:03d}.rncryptor", "wb").write(m[:n])
            """)
        let message = try Data(contentsOf: URL(fileURLWithPath: s.path("good.rncryptor")))
        #expect(message.count == 34 + 32 + 32)
        let r = s.run(
            ["import", "--rncryptor", "-r", "bad", "--skip-bad", "--json", "--progress", "none"], env: Self.env)
        #expect(r.status == 2, "\(r.stderr)")
        Fixtures.write(s.path("import.json"), r.stdout)
        let valid = Fixtures.validate(s.path("import.json"), schema: "import")
        #expect(valid.status == 0, "\(valid.output)")
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout)) as! [String: Any]
        let failed = result["failed"] as! [[String: Any]]
        #expect((result["imported"] as! [Any]).isEmpty, "a changed file was imported")
        #expect(failed.count == message.count * 8 + message.count)
        let codes = Set(failed.map { $0["code"] as! String })
        #expect(
            codes.isSubset(of: ["hmac-mismatch", "truncated", "unsupported-version", "header-malformed", "usage"]),
            "\(codes)")
        #expect(codes.contains("hmac-mismatch") && codes.contains("truncated") && codes.contains("unsupported-version"))
        #expect(
            !s.objects.contains { $0.hasSuffix(".vlt") || $0.hasPrefix(".vault-tmp-") },
            "nothing added, no temporary file")
        let n = failed.count
        #expect(
            r.stderr.hasSuffix("vault: \(n) of \(n) files could not be imported\nvault: hint: they are named above\n"),
            "\(r.stderr)")
        // The unchanged file imports, and --remove-source deletes it only then.
        let good = s.run(["import", "--rncryptor", "good.rncryptor", "--remove-source"], env: Self.env)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("good.rncryptor")))
        #expect(FileManager.default.fileExists(atPath: s.path("bad/cut-050.rncryptor")), "failed files are kept")
        #expect(String(decoding: s.run("get", "good").stdout, as: UTF8.self) == "a scan of 21 bytes...")
    }

    @Test func keyBasedFilesWithTheOfficialVectors() throws {
        let s = Sandbox()
        s.initVault()
        // The last record of Fixtures/rncryptor/key: 25 bytes under two given keys.
        let text = try String(
            contentsOf: Sandbox.repository.appendingPathComponent("Fixtures/rncryptor/key"), encoding: .utf8)
        let record = text.components(separatedBy: "\n\n").last { $0.contains("ciphertext_hex") }!
        func hex(_ field: String) -> [UInt8] {
            let line = record.split(separator: "\n").first { $0.hasPrefix(field + ":") }!
            let digits = Array(line.dropFirst(field.count + 1).filter { !$0.isWhitespace })
            return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
        }
        s.write("v.enc", hex("ciphertext_hex"))
        s.write("keys.bin", hex("enc_key_hex") + hex("hmac_key_hex"))
        s.write(
            "keys.hex",
            Array((hex("enc_key_hex") + hex("hmac_key_hex")).map { String(format: "%02x", $0) }.joined().utf8) + [0x0A])
        let needsKeys = s.run(["import", "--rncryptor", "v.enc"], env: Self.env)
        #expect(needsKeys.status == 64)
        #expect(
            needsKeys.stderr.hasPrefix(
                """
                    vault: cannot import v.enc: it is key-based (RNCryptor options 0x00): it needs the two keys, not \
                    a password\n
                    """
            ))
        let raw = s.run("import", "--rncryptor", "v.enc", "--from-key-file", "keys.bin", "--name", "vector")
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(s.run("get", "vector").stdout == hex("plaintext_hex"))
        let hexKeys = s.run(
            "import", "--rncryptor", "v.enc", "--from-key-file", "keys.hex", "--name", "again", "--allow-duplicate")
        #expect(hexKeys.status == 0, "\(hexKeys.stderr)")
        s.write("short.bin", [1, 2, 3])
        let short = s.run("import", "--rncryptor", "v.enc", "--from-key-file", "short.bin")
        #expect(short.status == 64 && short.stderr.hasPrefix("vault: short.bin must hold 64 bytes"))
        // No import password and no terminal: a clear error before anything is read.
        let none = s.run(["import", "--rncryptor", "v.enc"])
        #expect(none.status == 64)
        #expect(
            none.stderr
                == """
                    vault: no RNCryptor password given and no terminal to ask on\nvault: hint: set \
                    VAULT_IMPORT_PASSWORD, VAULT_IMPORT_PASSWORD_FILE or VAULT_IMPORT_PASSWORD_COMMAND, or pass \
                    --from-password-file FILE\n
                    """
        )
    }

    /// 256 MiB in `make test`, 1 GiB in `make long` (the python package encrypts in memory).
    @Test func importingALargeFileUsesAtMost16MiBMoreThanOneMiB() throws {
        let s = Sandbox()
        s.initVault()
        let mebibytes = TestSize.pick(256, long: 1024)
        try Self.peer(
            s,
            """
            import os, rncryptor
            c = rncryptor.RNCryptor()
            block = os.urandom(1 << 20)
            open("small.rncryptor", "wb").write(c.encrypt(block, os.environ["PEER_PASSWORD"]))
            big = c.encrypt(block[::-1] * \(mebibytes), os.environ["PEER_PASSWORD"])
            open("big.rncryptor", "wb").write(big)
            """)
        let small = s.wait(s.spawn(["import", "--rncryptor", "small.rncryptor"], env: Self.env, measured: true))
        let big = s.wait(s.spawn(["import", "--rncryptor", "big.rncryptor"], env: Self.env, measured: true))
        #expect(small.status == 0 && big.status == 0, "\(small.stderr) \(big.stderr)")
        #expect(small.maxRSSKiB > 0 && big.maxRSSKiB > 0)
        let growth = big.maxRSSKiB - small.maxRSSKiB
        print(
            "import peak RSS: 1 MiB \(small.maxRSSKiB) KiB, \(mebibytes) MiB \(big.maxRSSKiB) KiB, growth \(growth) KiB"
        )
        #expect(growth <= 16 << 10, "peak RSS grew by \(growth) KiB from 1 MiB to \(mebibytes) MiB")
    }
}
