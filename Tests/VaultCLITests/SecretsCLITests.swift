import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Secrets stay secret, on the built binary: nothing computable from the documents without the
/// password in a journal, no secret in the environment, argv, files or a core dump.
@Suite(.blocking) struct SecretsCLITests {
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

    @Test func secretsStayOutOfFilesAndArguments() throws {
        let s = Sandbox()
        let password = "unmistakable-password-\(UUID().uuidString)"
        s.env["VAULT_PASSWORD"] = password
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        let big = s.path("big.bin")
        try s.writeLarge("big.bin", mebibytes: 64, seed: 2510)
        #expect(s.run("add", "a.txt").status == 0)
        // While an add runs, its command line holds no secret.
        let pid = s.spawn(["add", "big.bin"])
        // Once sh has exec'd vault (the command line names the subcommand), and while it runs.
        var cmdline = ""
        poll(every: 5_000) {
            cmdline = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            return cmdline.hasPrefix(Sandbox.binary) || !Peer.isRunning(pid)
        }
        _ = s.wait(pid)
        #expect(
            cmdline.hasPrefix(Sandbox.binary) && cmdline.contains("big.bin"), "the running add was seen: \(cmdline)")
        #expect(!cmdline.contains(password))
        #expect(s.run("export", "--out", "out").status == 0)
        // No file under the vault holds the password, in any form we can think of.
        let needles = [Array(password.utf8), Array(Data(password.utf8).base64EncodedString().utf8)]
        let walker = FileManager.default.enumerator(atPath: s.path("vault"))!
        var files = 0
        while let rel = walker.nextObject() as? String {
            let p = s.path("vault/" + rel)
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: p, isDirectory: &isDir)
            let mode = (try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? Int) ?? 0
            #expect(mode == (isDir.boolValue ? 0o700 : 0o600), "\(rel) has mode \(String(mode, radix: 8))")
            guard !isDir.boolValue else { continue }
            files += 1
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: p)))
            for n in needles { #expect(!bytes.contains(n), "\(rel) contains the password") }
        }
        #expect(files >= 5)
    }
}
