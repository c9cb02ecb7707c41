import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Interrupted and killed commands, on the built binary: a signal at any moment leaves no partial
/// output, no plaintext and nothing in the next command's way, and what was done can be resumed.
@Suite(.blocking) struct SignalsCLITests {
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func anInterruptedGetLeavesNoFile(signal: Int32) throws {
        let s = Sandbox()
        let original = try Fixtures.vaultWithLargeDocument(s)
        let out = s.path("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        var interrupted = 0
        // The moments: the temporary file just created, a fifth written, most of it written; then,
        // on a loaded machine where a get finished before its signal came, the first moment again.
        for (attempt, threshold) in [0, 10 << 20, 40 << 20, 0, 0, 0].enumerated() where attempt < 3 || interrupted < 2 {
            let pid = s.spawn(["get", "big.bin", "-o", "out/big.bin"])
            _ = Fixtures.awaitTemporary(in: out, atLeast: threshold, pid: pid)
            kill(pid, signal)
            let r = s.wait(pid)
            if r.status == 130 {
                #expect(r.stderr == "vault: interrupted\n")
                if Fixtures.entries(out) != ["big.bin"] { interrupted += 1 }
                if Fixtures.entries(out) == ["big.bin"] {
                    // The signal came after the rename that commits the file (a loaded machine
                    // can deliver it there): then it is whole and exact, never partial.
                    #expect(
                        Array(try Data(contentsOf: URL(fileURLWithPath: out + "/big.bin"))) == original,
                        "a committed file is whole")
                    try FileManager.default.removeItem(atPath: out + "/big.bin")
                } else {
                    #expect(
                        Fixtures.entries(out).isEmpty, "no decrypted file, whole or partial: \(Fixtures.entries(out))")
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
        _ = try Fixtures.vaultWithLargeDocument(s)
        var interrupted = 0
        for (i, threshold) in [0, 16 << 20, 48 << 20].enumerated() {
            let out = s.path("out\(i)")
            let pid = s.spawn(["export", "--out", out])
            _ = Fixtures.awaitTemporary(in: out, atLeast: threshold, pid: pid)
            kill(pid, SIGINT)
            let r = s.wait(pid)
            if r.status == 130 {
                interrupted += 1
                #expect(r.stderr.hasSuffix("vault: interrupted\n"), "\(r.stderr)")
                // No batch completed, so nothing of the run stays: no payload, no temporary, no manifest.
                #expect(Fixtures.entries(out).isEmpty, "\(Fixtures.entries(out))")
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
        for name in Fixtures.entries(out) where name != "manifest.json" {
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
            ["upload", "--url", r.url, "--batch-size", "1", "--progress", "none", "--no-credentials"],
            pausingAt: "upload.attempt")
        let sending =
            paused && r.log.isEmpty && Fixtures.entries(s.path("vault/uploads")).contains { $0.hasSuffix(".journal") }
        kill(pid, SIGINT)
        let stopped = s.wait(pid)
        #expect(sending)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(stopped.stderr == "vault: interrupted\n")
        #expect(!Fixtures.entries(s.path("vault/uploads")).contains { $0.hasPrefix(".vault-tmp-") })
        let again = s.run("upload", "--url", r.url, "--batch-size", "1", "--progress", "none", "--no-credentials")
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
        _ = try Fixtures.vaultWithLargeDocument(s)
        s.write("small.txt", Array("small".utf8))
        let out = s.path("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)

        // get -o: the next get into the same folder sweeps what a SIGKILL left.
        var pid = s.spawn(["get", "big.bin", "-o", "out/big.bin"])
        #expect(Fixtures.awaitTemporary(in: out, atLeast: 8 << 20, pid: pid))
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(Fixtures.entries(out).contains { $0.hasPrefix(".vault-tmp-") }, "SIGKILL cannot clean up")
        #expect(s.run("add", "small.txt").status == 0)
        #expect(s.run("get", "small.txt", "-o", "out/small.txt").status == 0)
        #expect(Fixtures.entries(out) == ["small.txt"])

        // export: the next export into the folder sweeps it too.
        let ex = s.path("ex")
        pid = s.spawn(["export", "big.bin", "--out", ex])
        #expect(Fixtures.awaitTemporary(in: ex, atLeast: 8 << 20, pid: pid))
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(Fixtures.entries(ex).contains { $0.hasPrefix(".vault-tmp-") })
        #expect(s.run("export", "small.txt", "--out", ex, "--force").status == 0)
        #expect(Fixtures.entries(ex) == ["batch-0001.json", "manifest.json"])

        // add: the next add sweeps the vault's staging folder at once (not after a minute); a
        // new envelope is written there, not in objects/.
        pid = s.spawn(["add", "big.bin", "--allow-duplicate"])
        #expect(Fixtures.awaitTemporary(in: s.path("vault/staging"), atLeast: 8 << 20, pid: pid))
        #expect(!Fixtures.entries(s.path("vault/objects")).contains { $0.hasPrefix(".vault-tmp-") })
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        s.write("other.txt", Array("other".utf8))
        #expect(s.run("add", "other.txt").status == 0)
        #expect(!Fixtures.entries(s.path("vault/staging")).contains { $0.hasPrefix(".vault-tmp-") })
        // One left in objects/ by an older version is swept when the index is reconciled.
        s.write("vault/objects/.vault-tmp-999999-0000000000000000", [1, 2, 3])
        #expect(s.run("list").status == 0)
        #expect(!Fixtures.entries(s.path("vault/objects")).contains { $0.hasPrefix(".vault-tmp-") })

        // A temporary file of a live process is left alone.
        let live = out + "/.vault-tmp-\(getpid())-0000000000000000"
        s.write("out/.vault-tmp-\(getpid())-0000000000000000", [1, 2, 3])
        #expect(s.run("get", "other.txt", "-o", "out/other.txt").status == 0)
        #expect(FileManager.default.fileExists(atPath: live))
    }

    @Test func anInterruptedOrKilledExportLeavesNothingInTheWay() throws {
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: 96, seed: 4)
        #expect(s.run("add", "big.bin").status == 0)
        for signal in [SIGTERM, SIGINT] {
            let pid = s.spawn(["export", "--out", "new/outbox/"])
            // Once the temporary payload exists, the first batch is under way.
            #expect(
                poll(every: 10_000) {
                    ((try? FileManager.default.contentsOfDirectory(atPath: s.path("new/outbox"))) ?? []).contains {
                        $0.hasPrefix(".vault-tmp-")
                    }
                })
            kill(pid, signal)
            let r = s.wait(pid)
            #expect(r.status == 130, "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: s.path("new")), "signal \(signal) left the folders it made")
        }
        // Ctrl-C after a batch completed: the manifest marks the rest interrupted, and the next
        // export replaces them (only a finished export's files need --force).
        // Batches go oldest first: big.bin's, then later.bin's, which is still being written when
        // the signal comes.
        try s.writeLarge("later.bin", mebibytes: 64, seed: 5)
        #expect(s.run("add", "later.bin").status == 0)
        let stopping = s.spawn(["export", "big.bin", "later.bin", "--batch-size", "1", "--out", "stopped"])
        // Batch 1 in place and batch 2's temporary payload begun: the signal lands mid-batch 2.
        #expect(
            poll(every: 5_000) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: s.path("stopped"))) ?? []
                return names.contains("batch-0001.json") && names.contains { $0.hasPrefix(".vault-tmp-") }
            })
        kill(stopping, SIGINT)
        #expect(s.wait(stopping).status == 130)
        let resumed = s.run("export", "big.bin", "later.bin", "--batch-size", "1", "--out", "stopped")
        #expect(
            resumed.status == 0 && resumed.stderr.hasPrefix("vault: warning: replaced what the unfinished export "),
            "\(resumed.stderr)")
        let finished = s.run("export", "--out", "stopped")
        #expect(finished.status == 73, "a finished export's files need --force: \(finished.stderr)")
        let pid = s.spawn(["export", "--out", "killed"])
        // The manifest in place and the payload's temporary file begun: killed mid-batch.
        #expect(
            poll(every: 10_000) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: s.path("killed"))) ?? []
                return names.contains("manifest.json") && names.contains { $0.hasPrefix(".vault-tmp-") }
            })
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        let again = s.run("export", "--out", "killed")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.hasPrefix("vault: warning: replaced what the unfinished export "), "\(again.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: s.path("killed")).sorted()
        #expect(left == ["batch-0001.json", "manifest.json"], "no hidden payload stays: \(left)")
    }
}
