import Crypto
import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The defects a hostile review found (issue 9), each proven fixed on the built binary.
@Suite(.blocking) struct HardeningCLITests {
    static func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Waits until a temporary file in `dir` holds at least `bytes` bytes; false if none did in time.
    static func awaitTemporary(in dir: String, atLeast bytes: Int, pid: pid_t) -> Bool {
        var grown = false
        poll(every: 1000) {
            grown = entries(dir).contains { name in
                name.hasPrefix(".vault-tmp-")
                    && ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? 0)
                        >= bytes
            }
            return grown || !Peer.isRunning(pid)  // or it finished first
        }
        return grown
    }

    /// True while `pid` has not exited (it is not yet a zombie), without reaping it.

    static func vaultWithLargeDocument(_ s: Sandbox, mebibytes: Int = 50) throws -> [UInt8] {
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: mebibytes, seed: 11)
        let r = s.run("add", "big.bin")
        precondition(r.status == 0, r.stderr)
        return Array(try Data(contentsOf: URL(fileURLWithPath: s.path("big.bin"))))
    }

    // MARK: 1. Interrupts leave no plaintext

    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func anInterruptedGetLeavesNoFile(signal: Int32) throws {
        let s = Sandbox()
        let original = try Self.vaultWithLargeDocument(s)
        let out = s.path("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        var interrupted = 0
        // The moments: the temporary file just created, a fifth written, most of it written.
        for threshold in [0, 10 << 20, 40 << 20] {
            let pid = s.spawn(["get", "big.bin", "-o", "out/big.bin"])
            _ = Self.awaitTemporary(in: out, atLeast: threshold, pid: pid)
            kill(pid, signal)
            let r = s.wait(pid)
            if r.status == 130 {
                #expect(r.stderr == "vault: interrupted\n")
                if Self.entries(out) != ["big.bin"] { interrupted += 1 }
                if Self.entries(out) == ["big.bin"] {
                    // The signal came after the rename that commits the file (a loaded machine
                    // can deliver it there): then it is whole and exact, never partial.
                    #expect(
                        Array(try Data(contentsOf: URL(fileURLWithPath: out + "/big.bin"))) == original,
                        "a committed file is whole")
                    try FileManager.default.removeItem(atPath: out + "/big.bin")
                } else {
                    #expect(Self.entries(out).isEmpty, "no decrypted file, whole or partial: \(Self.entries(out))")
                }
            } else {
                // It finished before the signal: then the file is whole and exact.
                #expect(r.status == 0, "\(r.stderr)")
                #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out + "/big.bin"))) == original)
                try FileManager.default.removeItem(atPath: out + "/big.bin")
            }
        }
        #expect(interrupted >= 2, "the signal came too late to test anything")
    }

    @Test func anInterruptedExportLeavesNoPayloadBytes() throws {
        let s = Sandbox()
        _ = try Self.vaultWithLargeDocument(s)
        var interrupted = 0
        for (i, threshold) in [0, 16 << 20, 48 << 20].enumerated() {
            let out = s.path("out\(i)")
            let pid = s.spawn(["export", "--out", out])
            _ = Self.awaitTemporary(in: out, atLeast: threshold, pid: pid)
            kill(pid, SIGINT)
            let r = s.wait(pid)
            if r.status == 130 {
                interrupted += 1
                #expect(r.stderr.hasSuffix("vault: interrupted\n"), "\(r.stderr)")
                // No batch completed, so nothing of the run stays: no payload, no temporary, no manifest.
                #expect(Self.entries(out).isEmpty, "\(Self.entries(out))")
            } else {
                #expect(r.status == 0, "\(r.stderr)")
            }
        }
        #expect(interrupted >= 2)
    }

    @Test func anInterruptAfterABatchMarksTheManifestInterrupted() throws {
        let s = Sandbox()
        s.initVault()
        for i in 0..<3 {
            try s.writeLarge("d\(i).bin", mebibytes: 24, seed: UInt64(10 * i + 10))
            #expect(s.run("add", "d\(i).bin").status == 0)
        }
        let out = s.path("out")
        let pid = s.spawn(["export", "--out", out, "--batch-size", "1"])
        let first = poll(every: 500) {
            FileManager.default.fileExists(atPath: out + "/batch-0001.json") || !Peer.isRunning(pid)
        }
        kill(pid, SIGTERM)
        let r = s.wait(pid)
        #expect(first)
        #expect(r.status == 130, "\(r.stderr)")
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as! [String: Any]
        let batches = manifest["batches"] as! [[String: Any]]
        let statuses = batches.map { $0["status"] as! String }
        #expect(statuses.first == "complete")
        #expect(statuses.contains("interrupted") && !statuses.contains("pending"), "\(statuses)")
        // Every file in the folder is the manifest or a batch it lists as complete, at its length.
        for name in Self.entries(out) where name != "manifest.json" {
            let entry = batches.first { $0["file"] as? String == name }
            #expect(entry?["status"] as? String == "complete", "\(name) is not a complete batch of the manifest")
            let size = try FileManager.default.attributesOfItem(atPath: out + "/" + name)[.size] as! Int
            #expect(size == entry?["bytes"] as? Int)
        }
    }

    @Test func anInterruptedUploadLeavesItsJournalAndResumes() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, originals) = Fixtures.addDocuments(s, count: 2, size: { 600_000 + $0 })
        // The first batch is read slowly (about 4 s), so the signal lands while it is sent.
        let r = Receiver(in: s, token: nil, faults: #"[{"action": "slow", "rate": 400000}]"#)
        // Held as the first batch's attempt is journaled (VAULT_PAUSE_AT), and interrupted there.
        let (pid, paused) = s.spawn(
            ["upload", "--url", r.url, "--batch-size", "1", "--progress", "none"], pausingAt: "upload.attempt")
        let sending =
            paused && r.log.isEmpty && Self.entries(s.path("vault/uploads")).contains { $0.hasSuffix(".journal") }
        kill(pid, SIGINT)
        let stopped = s.wait(pid)
        #expect(sending)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(stopped.stderr == "vault: interrupted\n")
        #expect(!Self.entries(s.path("vault/uploads")).contains { $0.hasPrefix(".vault-tmp-") })
        let again = s.run("upload", "--url", r.url, "--batch-size", "1", "--progress", "none")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Set(r.accepted) == Set(ids) && r.accepted.count == 2, "each document arrives once: \(r.accepted)")
        try UploadCLITests.checkStore(r, originals)
    }

    @Test func anInterruptAtThePasswordPromptRestoresTheTerminal() throws {
        let s = Sandbox()
        s.initVault()
        // A real terminal (script's pseudo-terminal); vault prompts on it (echo goes off: waited
        // for, up to a minute), then gets SIGINT.
        s.write(
            "prompt.sh",
            Array(
                """
                "$1" list 2>err.txt & p=$!
                i=0; until stty -a | grep -q -- ' -echo ' || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done
                stty -a > during.txt; kill -INT $p; wait $p; echo $? > rc.txt; stty -a > after.txt

                """.utf8))
        let r = s.shell("script -qec \"sh prompt.sh $1\" /dev/null", env: ["VAULT_PASSWORD": nil])
        #expect(r.status == 0, "\(r.stderr)")
        func flags(_ name: String) -> [Substring] {
            ((try? String(contentsOfFile: s.path(name), encoding: .utf8)) ?? "").split(whereSeparator: {
                $0 == " " || $0 == "\n" || $0 == ";"
            })
        }
        #expect(flags("during.txt").contains("-echo"), "the prompt turned echo off")
        #expect(
            flags("after.txt").contains("echo") && !flags("after.txt").contains("-echo"),
            "echo is back after the interrupt")
        #expect((try? String(contentsOfFile: s.path("rc.txt"), encoding: .utf8)) == "130\n")
        #expect(
            (try? String(contentsOfFile: s.path("err.txt"), encoding: .utf8))?.hasSuffix("vault: interrupted\n") == true
        )
    }

    @Test func temporaryFilesOfAKilledCommandAreSweptByTheNextWriter() throws {
        let s = Sandbox()
        _ = try Self.vaultWithLargeDocument(s)
        s.write("small.txt", Array("small".utf8))
        let out = s.path("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)

        // get -o: the next get into the same folder sweeps what a SIGKILL left.
        var pid = s.spawn(["get", "big.bin", "-o", "out/big.bin"])
        #expect(Self.awaitTemporary(in: out, atLeast: 8 << 20, pid: pid))
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(Self.entries(out).contains { $0.hasPrefix(".vault-tmp-") }, "SIGKILL cannot clean up")
        #expect(s.run("add", "small.txt").status == 0)
        #expect(s.run("get", "small.txt", "-o", "out/small.txt").status == 0)
        #expect(Self.entries(out) == ["small.txt"])

        // export: the next export into the folder sweeps it too.
        let ex = s.path("ex")
        pid = s.spawn(["export", "big.bin", "--out", ex])
        #expect(Self.awaitTemporary(in: ex, atLeast: 8 << 20, pid: pid))
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(Self.entries(ex).contains { $0.hasPrefix(".vault-tmp-") })
        #expect(s.run("export", "small.txt", "--out", ex, "--force").status == 0)
        #expect(Self.entries(ex) == ["batch-0001.json", "manifest.json"])

        // add: the next add sweeps the vault's staging folder at once (not after a minute); a
        // new envelope is written there, not in objects/.
        pid = s.spawn(["add", "big.bin", "--allow-duplicate"])
        #expect(Self.awaitTemporary(in: s.path("vault/staging"), atLeast: 8 << 20, pid: pid))
        #expect(!Self.entries(s.path("vault/objects")).contains { $0.hasPrefix(".vault-tmp-") })
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        s.write("other.txt", Array("other".utf8))
        #expect(s.run("add", "other.txt").status == 0)
        #expect(!Self.entries(s.path("vault/staging")).contains { $0.hasPrefix(".vault-tmp-") })
        // One left in objects/ by an older version is swept when the index is reconciled.
        s.write("vault/objects/.vault-tmp-999999-0000000000000000", [1, 2, 3])
        #expect(s.run("list").status == 0)
        #expect(!Self.entries(s.path("vault/objects")).contains { $0.hasPrefix(".vault-tmp-") })

        // A temporary file of a live process is left alone.
        let live = out + "/.vault-tmp-\(getpid())-0000000000000000"
        s.write("out/.vault-tmp-\(getpid())-0000000000000000", [1, 2, 3])
        #expect(s.run("get", "other.txt", "-o", "out/other.txt").status == 0)
        #expect(FileManager.default.fileExists(atPath: live))
    }

    // MARK: 2. No digest oracle in the journal

    @Test func theJournalHoldsNothingComputableWithoutThePassword() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        let list = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        let digests = Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as! String, $0["sha256"] as! String) })
        let r = Receiver(in: s)
        #expect(s.run(["upload", "--url", r.url], env: Fixtures.uploadToken).status == 0)
        let journal = try #require(s.journal())
        // What the folder shows: the sealed file, and (for the checks below) what it seals.
        let text =
            String(
                decoding: SealedStateCLITests.bytes(s.path("vault/uploads/\(s.journalJobs[0]).journal")), as: UTF8.self)
            + s.run("uploads", "show", s.journalJobs[0]).out
        let runID = journal["runId"] as! String, job = journal["job"] as! String
        let key = (journal["batches"] as! [[String: Any]])[0]["key"] as! String
        #expect(r.log.first?["key"] as? String == key, "the server got the journaled key")

        // The unkeyed formulas of the earlier journal, recomputed from what the folder shows.
        func sha(_ text: String) -> String {
            SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        // In the vault's stable order (what upload batches), which `list` prints.
        let ordered = list.map { $0["id"] as! String }
        #expect(Set(ordered) == Set(ids))
        let docs = ordered.map { "\($0):\(digests[$0]!)\n" }.joined()
        let oldKey = sha("vault-upload/1\n\(runID)\n1\n" + docs)
        let oldJob = String(sha("vault-upload-job/1\n\(r.url)\nPOST\nobjects\n20\n-\n" + docs).prefix(32))
        #expect(key != oldKey && job != oldJob)
        #expect(key.count == 64 && job.count == 32)
        for d in digests.values { #expect(!text.contains(d), "a plaintext digest is in the journal") }
        // And the same formula without the run id or index, in case a journal value is a bare digest.
        #expect(![key, job].contains(sha(docs)) && !text.contains(sha(docs)))
    }

    // MARK: 3. No documents or credentials in clear by accident

    @Test func plainHTTPToANonLoopbackHostIsRefused() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let r = Receiver(in: s, token: nil)
        let attacker = s.run(["upload", "--url", "http://127.attacker.example/upload"])
        #expect(attacker.status == 64)
        #expect(
            attacker.stderr == "vault: refusing to send documents unencrypted over http:// to 127.attacker.example\n"
                + "vault: hint: use https://, or --insecure-http on a network you trust\n")
        // 2130706433 is 127.0.0.1 to the resolver, but not a literal loopback address: refused
        // unless --insecure-http, and never with credentials (the traffic stays on this machine).
        let numeric = "http://2130706433:\(r.port)/upload"
        #expect(s.run(["upload", "--url", numeric]).status == 64)
        let withToken = s.run(["upload", "--url", numeric, "--insecure-http"], env: Fixtures.uploadToken)
        #expect(withToken.status == 64)
        #expect(
            withToken.stderr.hasPrefix("vault: refusing to send credentials unencrypted over http:// to 2130706433\n"))
        #expect(r.log.isEmpty, "nothing was sent")
        let insecure = s.run(["upload", "--url", numeric, "--insecure-http"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(insecure.stderr.hasPrefix("vault: warning: sending documents unencrypted over http:// to 2130706433\n"))
        #expect(r.log.count == 1 && r.log[0]["auth"] == nil)
        // Literal loopback needs no flag.
        #expect(s.run(["upload", "--url", "http://localhost:\(r.port)/upload", "--new-run"]).status == 0)
    }

    // MARK: 4. Secrets out of the environment and out of dumps

    @Test func secretsLeaveTheEnvironmentAndTheProcessCannotBeDumped() throws {
        let s = Sandbox()
        chmod(s.dir, 0o711)
        let box = s.path("box")
        try FileManager.default.createDirectory(atPath: box, withIntermediateDirectories: false)
        chown(box, 65534, 65534)
        #expect(mkfifo(box + "/password", 0o600) == 0)
        chown(box + "/password", 65534, 65534)
        let secrets = [
            "VAULT_PASSWORD": "pw-in-env-7f3a", "VAULT_UPLOAD_TOKEN": "token-in-env-9c1d",
            "VAULT_UPLOAD_PASSWORD": "basic-in-env-2b8e"
        ]
        // vault runs as nobody and waits for its password on the FIFO: alive, past its start-up.
        let pid = s.spawn(
            ["init", "--vault", box + "/v", "--kdf", "insecure-test", "--password-file", box + "/password"],
            env: secrets, wrapper: Sandbox.nobody)
        // Waited for (up to two minutes: the suite's other tests share the two cores): vault has
        // been exec'd and has taken the secrets out of its environment.
        var environ = "", comm = ""
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline && Peer.isRunning(pid) {
            environ =
                (try? String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")), as: UTF8.self))
                ?? ""
            comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
            if comm == "vault\n" && !environ.isEmpty && !secrets.values.contains(where: { environ.contains($0) }) {
                break
            }
            usleep(5000)
        }
        #expect(comm == "vault\n" && Peer.isRunning(pid), "vault is running: \(comm)")
        #expect(!environ.isEmpty)
        for (name, value) in secrets {
            #expect(!environ.contains(value), "\(name) is still readable in /proc/PID/environ")
        }
        let limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
        #expect(
            limits.split(separator: "\n").contains {
                $0.hasPrefix("Max core file size")
                    && $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"]
            },
            "\(limits)")
        // Not dumpable: the kernel makes /proc/PID's files root's, although vault runs as 65534.
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        #expect(status.contains("\nUid:\t65534\t65534\t65534\t65534\n"), "\(status)")
        var st = stat()
        #expect(
            stat("/proc/\(pid)/environ", &st) == 0 && st.st_uid == 0, "/proc/\(pid)/environ belongs to uid \(st.st_uid)"
        )
        let writer = open(box + "/password", O_WRONLY)
        _ = write(writer, "pw\n", 3)
        close(writer)
        let r = s.wait(pid)
        #expect(r.status == 0, "\(r.stderr)")
    }

    // MARK: 5. Add reports what it did

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
            Self.entries(s.path("vault/objects")).isEmpty,
            "the object was not committed: \(Self.entries(s.path("vault/objects")))")
    }

    // MARK: 6. A damaged vault.json is damage

    @Test(arguments: ["opsLimit", "salt", "keyCheck"])
    func anEditedVaultJSONIsDamageNotAWrongPassword(field: String) throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        #expect(s.run("add", "a.txt").status == 0)
        let path = s.path("vault/vault.json")
        var config =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        switch field {
        case "opsLimit":
            var kdf = config["kdf"] as! [String: Any]
            kdf["opsLimit"] = (kdf["opsLimit"] as! Int) + 1
            config["kdf"] = kdf
        default:
            config[field] = Data(repeating: 7, count: 16).base64EncodedString()
        }
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
        let r = s.run("list")
        #expect(r.status == 65)
        #expect(
            r.stderr == "vault: \(path) does not match its envelopes (KDF parameters, salt or key check differ)\n"
                + "vault: hint: restore vault.json from a backup; the documents themselves are unchanged\n")
    }

    // MARK: 7. Export folders are unambiguous

    @Test func forceRemovesBatchFilesOfAnEarlierRun() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 3)
        #expect(s.run("export", "--out", "out", "--batch-size", "1").status == 0)
        #expect(
            Self.entries(s.path("out")) == ["batch-0001.json", "batch-0002.json", "batch-0003.json", "manifest.json"])
        let again = s.run("export", "--out", "out", "--batch-size", "3", "--force")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            Self.entries(s.path("out")) == ["batch-0001.json", "manifest.json"],
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

    // MARK: 8. Everything fails loudly

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
        #expect(DailyUseCLITests.lastRecord(s)?["outcome"] as? String == "partial")
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
        #expect(Self.entries(box + "/v/objects").isEmpty)
        chmod(box + "/inbox/locked", 0o700)
        chmod(box + "/inbox/a.txt", 0)
        let file = s.runAsNobody(["add", "-r", box + "/inbox"], env: env)
        #expect(file.status == 74)
        #expect(file.stderr == "vault: \(shown)/inbox/a.txt: permission denied\nvault: hint: nothing was added\n")
    }

    /// A TCP socket on 127.0.0.1: bound to a port the OS picks, or connected to `port`.
    static func loopbackSocket(connectingTo port: UInt16? = nil) -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in(
            sin_family: sa_family_t(AF_INET), sin_port: (port ?? 0).bigEndian,
            sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                if port != nil {
                    precondition(connect(fd, $0, len) == 0, "cannot connect to 127.0.0.1:\(port!)")
                } else {
                    _ = bind(fd, $0, len); _ = getsockname(fd, $0, &len)
                }
            }
        }
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    @Test func aRefusedConnectionFailsAtOnce() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        // A port nothing listens on: bind one, note it, close it.
        let (fd, port) = Self.loopbackSocket()
        close(fd)
        let started = Date()
        let r = s.run(["upload", "--url", "http://127.0.0.1:\(port)/x", "--retries", "2"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 75)
        #expect(r.stderr.contains("failed 3 times, last: connection error: connection refused"), "\(r.stderr)")
        // Earlier, each attempt waited out a fixed 10 s connect timeout (30 s here); now the
        // client does not retry by itself and only the policy's short backoff remains.
        #expect(seconds < 15, "took \(seconds) s")
    }

    @Test func theTimeoutBoundsConnectingToASilentHost() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        // A local listener whose accept queue is full: the kernel drops further SYNs, so a
        // connect hangs as it would to a silent host, without any traffic leaving this machine.
        let (server, port) = Self.loopbackSocket()
        #expect(listen(server, 0) == 0)
        let held = Self.loopbackSocket(connectingTo: port).0
        defer { close(held); close(server) }
        let started = Date()
        let r = s.run(["upload", "--url", "http://127.0.0.1:\(port)/x", "--timeout", "2", "--retries", "1"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 75)
        #expect(r.stderr.contains("failed 2 times, last: could not connect within 2 s"), "\(r.stderr)")
        // Two attempts of 2 s and a backoff of at most 0.5 s; the fixed 10 s connect timeout took 20 s.
        #expect(seconds < 9, "took \(seconds) s")
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

    // MARK: 9. Terminals

    /// What a terminal `columns` wide shows while vault runs on it (script's pseudo-terminal).
    static func onTerminal(_ s: Sandbox, columns: Int, _ args: String, env: [String: String?] = [:]) -> String {
        s.write("term.sh", Array("stty cols \(columns) rows 24; \"$1\" \(args)\n".utf8))
        return s.shell("script -qec \"sh term.sh $1\" /dev/null", env: env).out
    }

    /// The lines a terminal ends up showing, one per redraw: split at CR and LF, escape codes removed.
    static func redraws(_ screen: String) -> [String] {
        screen.replacingOccurrences(of: "\u{1B}[2K", with: "").split(whereSeparator: { $0 == "\r" || $0 == "\n" })
            .map(String.init).filter { !$0.allSatisfy { $0 == " " } }
    }

    @Test func theBarFitsTheTerminalAndShortensTheName() throws {
        let s = Sandbox()
        s.initVault()
        let name = "a very long document name that goes on and on past any terminal.pdf"
        try s.writeLarge("big.bin", mebibytes: 64, seed: 5)
        #expect(s.run("add", "big.bin", "--name", name).status == 0)
        for columns in [40, 60, 80, 100] {
            let screen = Self.onTerminal(
                s, columns: columns, "export --out out\(columns) --progress bar", env: ["TERM": "xterm"])
            let bars = Self.redraws(screen).filter { $0.hasPrefix("batch ") }
            #expect(!bars.isEmpty, "\(screen)")
            for line in bars { #expect(line.count <= columns - 1, "\(columns) columns: '\(line)' (\(line.count))") }
            #expect(screen.contains("\u{1B}[2K"))
            if columns == 100 {
                #expect(bars.contains { $0.contains(" a very long document") && $0.contains("…") }, "\(bars)")
            }
            // At 80 columns the ETA keeps its place (a redraw midway, with bytes done and a rate, shows it).
            if columns >= 80 && bars.count > 2 { #expect(bars.contains { $0.contains("  ETA ") }, "\(bars)") }
            // One unit system: the bar and the summary both count in binary units.
            #expect(bars.allSatisfy { $0.contains(" MiB") && !$0.contains(" MB") })
            #expect(screen.contains("vault: exported 1 document (64 MiB) in 1 batch (85 MiB of payload)"), "\(screen)")
        }
    }

    @Test(arguments: [["TERM": "dumb"], ["TERM": "xterm", "NO_COLOR": "1"]] as [[String: String?]])
    func plainTerminalsGetNoEscapeCodes(env: [String: String?]) throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: 32, seed: 6)
        #expect(s.run("add", "big.bin").status == 0)
        let screen = Self.onTerminal(s, columns: 80, "export --out out --progress bar", env: env)
        #expect(!screen.contains("\u{1B}"), "\(screen.debugDescription)")
        #expect(
            Self.redraws(screen).contains { $0.hasPrefix("batch 1/1  doc 1/1 big.bin") }, "\(screen.debugDescription)")
    }

    @Test func aSlowServerDoesNotFreezeTheBar() throws {
        let s = Sandbox()
        s.initVault()
        s.write("doc.bin", .random(1 << 20, seed: 9))
        #expect(s.run("add", "doc.bin").status == 0)
        // 1.4 MB of payload read at 400 kB/s: about 3.5 s with few blocks sent.
        let r = Receiver(in: s, token: nil, faults: #"[{"action": "slow", "rate": 400000}]"#)
        let started = Date()
        let screen = Self.onTerminal(s, columns: 100, "upload --url \(r.url) --progress bar", env: ["TERM": "xterm"])
        let seconds = Date().timeIntervalSince(started)
        let bars = Self.redraws(screen).filter { $0.hasPrefix("batch 1/1  upload") }
        #expect(screen.contains("vault: uploaded 1 document"), "\(screen)")
        // A redraw every 200 ms while the upload runs (events alone gave two or three).
        #expect(Double(bars.count) >= (seconds - 1) / 0.25, "\(bars.count) redraws in \(seconds) s")
    }

    @Test func jsonProgressIsOnlyJSONAndQuietIsQuiet() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 3)
        let json = s.run("export", "--out", "o", "--progress", "json")
        #expect(json.status == 0)
        let lines = json.stderr.split(separator: "\n")
        for line in lines {
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any],
                "not a JSON object: \(line)")
        }
        let last = try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as! [String: Any]
        #expect(last["event"] as? String == "finished" && last["documents"] as? Int == 3 && last["seconds"] is Double)
        let quiet = s.run("export", "--out", "q", "-q")
        #expect(quiet.status == 0 && quiet.stderr.isEmpty && quiet.stdout.isEmpty)
    }

    @Test func jsonResultsOnStdout() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        s.write("b.txt", Array("beta".utf8))
        func object(_ r: CLIResult) -> [String: Any]? {
            #expect(r.out.hasSuffix("\n") && r.out.split(separator: "\n").count == 1, "one line: \(r.out)")
            return try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any]
        }
        let add = object(s.run("add", "a.txt", "b.txt", "--json"))
        let added = add?["added"] as? [[String: Any]] ?? []
        #expect(added.map { $0["name"] as? String } == ["a.txt", "b.txt"])
        #expect(added.first?["contentType"] as? String == "text/plain" && added.first?["size"] as? Int == 5)
        let ids = added.compactMap { $0["id"] as? String }
        let r = Receiver(in: s, token: nil)
        let upload = object(s.run("upload", "--url", r.url, "--json"))
        #expect(
            upload?["documents"] as? Int == 2 && upload?["batches"] as? Int == 1
                && upload?["target"] as? String == r.url)
        let export = object(s.run("export", "--out", "o", "--json"))
        // Added in one command, the two may share a millisecond; the batch holds both either way.
        #expect(Set((export?["batches"] as? [[String: Any]])?.first?["documents"] as? [String] ?? []) == Set(ids))
        #expect(export?["out"] as? String == "o" && export?["payloadBytes"] as? Int != nil)
        let remove = object(s.run("remove", ids[0], "--json"))
        #expect(remove?["removed"] as? [String] == [ids[0]])
        let bad = s.run("export", "--out", "-", "--json")
        #expect(bad.status == 64 && bad.stderr.hasPrefix("vault: --json needs --out DIR"))
    }
}
