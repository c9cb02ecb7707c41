import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Resource faults and misuse: each leaves a clear `vault:` error, a
/// documented exit code, an unchanged vault and no partial output.
@Suite(.blocking) struct BadInputCLITests {
    @Test func fileSizeLimitDuringAddAndExport() throws {
        let s = Sandbox()
        s.initVault()
        s.write("small.txt", Array("small".utf8))
        s.write("big.bin", .random(3 << 20))
        #expect(s.run("add", "small.txt").status == 0)
        let add = s.run(["add", "big.bin"], fileSizeLimitKiB: 1024)
        #expect(add.status == 74)
        #expect(add.stderr.hasPrefix("vault: cannot add big.bin: cannot write \(s.path("vault/objects/"))"))
        #expect(
            add.stderr.contains(".vlt: file too large"), "the object is named, not its temporary file: \(add.stderr)")
        #expect(
            add.stderr.contains(": file too large for this file system or limit\nvault: hint: nothing was changed\n"),
            "\(add.stderr)")
        Fixtures.vaultIsIntact(s, documents: 1)

        #expect(s.run("add", "big.bin").status == 0)
        let export = s.run(["export", "--out", "out"], fileSizeLimitKiB: 1024)
        #expect(export.status == 74, "\(export.stderr)")
        #expect(export.stderr.contains("file too large"))
        #expect(Fixtures.entries(s.path("out")).isEmpty, "no batch file, no temporary file, no manifest")
        Fixtures.vaultIsIntact(s, documents: 2)
    }

    // Mounting a small file system needs root (CI and the project's machines run as root); the
    // file-size-limit test above covers the same code paths without it.
    @Test(.enabled(if: getuid() == 0, "mounting a 4 MiB tmpfs needs root"))
    func diskFullDuringAddAndExport() throws {
        let s = Sandbox()
        let small = s.path("small-fs")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        let mounted =
            s.run(["--version"]).status == 0
            && {
                let r = Process()
                r.executableURL = URL(fileURLWithPath: "/bin/mount")
                r.arguments = ["-t", "tmpfs", "-o", "size=4m", "tmpfs", small]
                try? r.run()
                r.waitUntilExit()
                return r.terminationStatus == 0
            }()
        #expect(mounted, "could not mount a 4 MiB tmpfs")
        defer {
            let u = Process()
            u.executableURL = URL(fileURLWithPath: "/bin/umount")
            u.arguments = [small]
            try? u.run()
            u.waitUntilExit()
        }
        let vaultDir = small + "/vault"
        #expect(s.run(["init", "--kdf", "insecure-test"], env: ["VAULT_DIR": vaultDir]).status == 0)
        s.write("a.bin", .random(1 << 20, seed: 1))
        s.write("big.bin", .random(6 << 20, seed: 2))
        #expect(s.run(["add", "a.bin"], env: ["VAULT_DIR": vaultDir]).status == 0)
        let full = s.run(["add", "big.bin"], env: ["VAULT_DIR": vaultDir])
        #expect(full.status == 74)
        #expect(
            full.stderr.contains(
                """
                    : no space left on device\nvault: hint: free some space and run the command again; nothing was \
                    changed\n
                    """
            ), "\(full.stderr)")
        Fixtures.vaultIsIntact(s, documents: 1, vaultDir: vaultDir)
        // Export into the (nearly full) small file system: 1 MiB needs ~1.4 MiB of payload.
        s.write("filler", [])
        for copy in ["copy1", "copy2"] {
            #expect(s.run(["get", "a.bin", "-o", small + "/" + copy], env: ["VAULT_DIR": vaultDir]).status == 0)
        }
        let out = s.run(["export", "--out", small + "/out"], env: ["VAULT_DIR": vaultDir])
        #expect(out.status == 74, "\(out.stderr)")
        // Found when the batch's space is reserved, before any document is decrypted.
        #expect(
            out.stderr
                == "vault: no room for batch-0001.json in \(small)/out: it needs 1.4 MiB (no space left on device)\n"
                + "vault: hint: free some space and run the command again; completed batches and the manifest stay\n",
            "\(out.stderr)")
        #expect(Fixtures.entries(small + "/out").isEmpty)
        Fixtures.vaultIsIntact(s, documents: 1, vaultDir: vaultDir)
    }

    @Test func unreadableInputAndUnwritableOutput() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("alpha".utf8))
        #expect(s.run("add", "a.txt").status == 0)
        let unreadable = s.run("add", "/proc/self/mem", "--name", "mem")
        #expect(unreadable.status == 74)
        #expect(
            unreadable.stderr
                == """
                    vault: cannot add /proc/self/mem: cannot read /proc/self/mem: Input/output error\nvault: hint: it \
                    was not added\n
                    """
        )
        Fixtures.vaultIsIntact(s, documents: 1)
        let export = s.run("export", "--out", "/sys/vault-test-out")
        #expect(export.status == 74)
        #expect(export.stderr == "vault: cannot create directory /sys/vault-test-out: permission denied\n")
        let get = s.run("get", "a.txt", "-o", "/sys/vault-test-file")
        #expect(get.status == 74)
        #expect(
            get.stderr == "vault: cannot create /sys/vault-test-file: permission denied\n",
            "the target is named, not a temporary file")
    }

    /// At least 30 misuses, each with its exact message start and exit code.
    // Long: a table of cases, read down the page.
    @Test func badInputTable() throws {
        let s = Sandbox()
        s.write("a.txt", Array("alpha".utf8))
        s.write("b.txt", Array("beta".utf8))
        s.write("pw", Array("correct horse battery\n".utf8))
        try FileManager.default.createDirectory(atPath: s.path("dir"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: s.path("empty"), withIntermediateDirectories: true)
        s.write("dir/x.txt", Array("x".utf8))
        let missing = s.run("list")
        #expect(
            missing.status == 3
                && missing.stderr
                    == """
                        vault: no vault at \(s.path("vault"))\nvault: hint: check VAULT_DIR, or create a vault there \
                        with 'vault init' (VAULT_DIR=\(s.path("vault")))\n
                        """
        )
        let notVault = s.run("list", "--vault", s.path("empty"))
        #expect(
            notVault.status == 3
                && notVault.stderr
                    == """
                        vault: \(s.path("empty")) is not a vault (it has no vault.json)\nvault: hint: check the path, \
                        or create a vault there with 'vault init --vault \(s.path("empty"))'\n
                        """
        )
        s.initVault()
        #expect(s.run("add", "a.txt", "b.txt", "--tag", "t").status == 0)
        #expect(s.run("add", "-", "--name", "twin", stdin: [1]).status == 0)
        #expect(s.run("add", "-", "--name", "twin", stdin: [2]).status == 0)

        let cases: [(args: [String], env: [String: String?], status: Int32, stderr: String)] = [
            (["get", "nope"], [:], 3, "vault: no document matches 'nope'\n"),
            (["get", "twin"], [:], 4, "vault: 'twin' matches 2 documents: "),
            (
                ["get", "ab"], [:], 3,
                "vault: no document matches 'ab'\nvault: hint: an id prefix needs at least 4 characters\n"
            ),
            (["list"], ["VAULT_PASSWORD": ""], 64, "vault: the password is empty\n"),
            (["list"], ["VAULT_PASSWORD": nil], 64, "vault: no password given and no terminal to ask on\n"),
            (
                ["list", "--password-file", "missing-pw"], [:], 3,
                "vault: password file: cannot open missing-pw: no such file or directory\n"
            ),
            (["list"], ["VAULT_PASSWORD": "wrong"], 77, "vault: wrong password\n"),
            (["export", "--out", "o", "--batch-size", "0"], [:], 64, "vault: --batch-size must be at least 1, not 0\n"),
            (
                ["export", "--out", "o", "--max-bytes=-5"], [:], 64,
                "vault: the value '-5' is invalid for '--max-bytes <size>'"
            ),
            (
                ["export", "--out", "o", "--max-bytes", "10X"], [:], 64,
                "vault: the value '10X' is invalid for '--max-bytes <size>'"
            ),
            (
                ["export", "--out", "a.txt"], [:], 64,
                "vault: --out a.txt is not a directory\nvault: hint: give a folder, or - for standard output\n"
            ),
            (
                ["export", "--out", "-", "--batch-size", "1"], [:], 64,
                """
                    vault: a stream holds a single batch, but the selection needs 4\nvault: hint: use --out DIR, \
                    raise --batch-size/--max-bytes, or select fewer documents\n
                    """
            ),
            (
                ["export", "--out", "o", "--shape", "xml"], [:], 64,
                "vault: the value 'xml' is invalid for '--shape <shape>'"
            ),
            (["export", "--out", "o", "--tag", "none"], [:], 3, "vault: no documents have the tag 'none'\n"),
            (["export"], [:], 64, "vault: missing expected argument '--out <dir|->'\n"),
            (["add"], [:], 64, "vault: missing expected argument '<path> ...'\n"),
            (["add", "a.txt", "b.txt", "--name", "n"], [:], 64, "vault: --name needs exactly one path\n"),
            (["add", "-"], [:], 64, "vault: reading standard input (-) needs --name\n"),
            (
                ["add", "dir"], [:], 64,
                "vault: dir is a directory\nvault: hint: use -r to add the files inside it; nothing was added\n"
            ),
            (["add", "missing.txt"], [:], 3, "vault: missing.txt: no such file\nvault: hint: nothing was added\n"),
            (
                ["add", "-", "--name", ""], [:], 64,
                "vault: cannot add standard input: a document name cannot be empty\n"
            ),
            (
                ["add", "a.txt", "--type", "not a type"], [:], 64,
                "vault: cannot add a.txt: content type 'not a type' is not a valid MIME type\n"
            ),
            (["remove"], [:], 64, "vault: give at least one document to remove (or --delivered-to)\n"),
            (
                ["remove", "--older-than", "30d"], [:], 64,
                "vault: --older-than goes with --delivered or --delivered-to\n"
            ),
            (
                ["remove", "--delivered", "--older-than", "soon"], [:], 64,
                "vault: --older-than must look like 30d, 12h, 45m or 2w, not 'soon'\n"
            ),
            (
                ["remove", "--delivered"], [:], 64,
                "vault: no destination is required: name them with 'vault destination add', or use --delivered-to\n"
            ),
            (["list", "--to", "office"], [:], 64, "vault: --to goes with --undelivered\n"),
            (
                ["upload", "--to", "office", "--url", "https://host/x"], [:], 64,
                "vault: give --to or --url (--presign-url), not both\n"
            ),
            (
                ["destination", "add", "office", "ftp://host/x"], [:], 64,
                "vault: 'ftp://host/x' is not a destination URL (http://, https:// or s3://)\n"
            ),
            (["remove", "a.txt", "nope"], [:], 3, "vault: no document matches 'nope'\n"),
            (["init"], [:], 73, "vault: a vault already exists at \(s.path("vault"))\n"),
            (["init", "--vault", s.path("dir")], [:], 73, "vault: \(s.path("dir")) exists and is not empty\n"),
            (
                ["init", "--kdf", "extreme", "--vault", s.path("new")], [:], 64,
                "vault: the value 'extreme' is invalid for '--kdf <kdf>'"
            ),
            (
                ["frobnicate"], [:], 64,
                "vault: 'frobnicate' is not a vault command\nvault: hint: 'vault --help' lists the commands\n"
            ),
            (["list", "--colour"], [:], 64, "vault: unknown option '--colour'\n"),
            (
                ["get", "a.txt", "-o", "b.txt"], [:], 73,
                "vault: b.txt already exists\nvault: hint: use --force to replace it\n"
            ),
            (["get", "a.txt", "-o", "dir", "--range", "0-1"], [:], 64, "vault: dir is a directory\n"),
            (
                ["get", "a.txt", "-o", "no/such/dir/file"], [:], 3,
                "vault: cannot write no/such/dir/file: its directory does not exist\n"
            ),
            (["verify", "nope"], [:], 3, "vault: no document matches 'nope'\n"),
            (
                ["upload", "--url", "ftp://host/x"], [:], 64,
                """
                    vault: --url must be an http:// or https:// URL with a host, or s3://BUCKET/PREFIX with \
                    --protocol s3\n
                    """
            ),
            (["upload", "--url", "https://u:p@host/x"], [:], 64, "vault: put no credentials in --url;"),
            (
                ["upload", "--url", "https://host/x", "--header", "no colon"], [:], 64,
                "vault: --header must look like 'Name: value', not 'no colon'\n"
            ),
            (
                ["upload", "--url", "https://host/x", "--header", "Content-Length: 5"], [:], 64,
                "vault: --header cannot set Content-Length; vault sets it\n"
            ),
            (
                ["upload", "--url", "https://host/x", "--timeout", "0"], [:], 64,
                "vault: --timeout must be a positive number of seconds\n"
            ),
            (
                ["upload", "--url", "https://host/x", "--resume", "--new-run"], [:], 64,
                "vault: --resume and --new-run contradict each other\n"
            ),
            (
                ["upload", "--url", "https://host/x", "--method", "GET"], [:], 64,
                "vault: --method must be POST or PUT\n"
            ),
            (
                ["upload", "--url", "https://host/x"], ["VAULT_UPLOAD_USER": "u"], 64,
                "vault: VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD must be set together\n"
            )
        ]
        #expect(cases.count >= 30)
        for c in cases {
            let r = s.run(c.args, env: c.env)
            #expect(r.status == c.status, "\(c.args): \(r.status) \(r.stderr)")
            #expect(r.stderr.hasPrefix(c.stderr), "\(c.args): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(c.args) printed on stdout")
        }
        #expect(s.objects.count == 4, "no misuse changed the vault")
    }

}

extension Array where Element == UInt8 {
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty,
              count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        while i <= count - needle.count {
            if self[i] == first && Array(self[i..<i + needle.count]) == needle { return true }
            i += 1
        }
        return false
    }
}

/// A few runs of the crash-safety script (`make stress` runs 60).
@Suite(.blocking) struct CrashSafetyTests {
    @Test func killedAddsRemovesAndExportsLeaveAConsistentVault() throws {
        let r = Process()
        r.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        r.arguments = [
            "python3", Sandbox.repository.appendingPathComponent("scripts/crash_test.py").path,
            "--vault-bin", Sandbox.binary, "--runs", "6"
        ]
        let out = Pipe()
        r.standardOutput = out
        r.standardError = out
        try r.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        r.waitUntilExit()
        print(text.split(separator: "\n").last ?? "")
        #expect(r.terminationStatus == 0, "\(text)")
        #expect(text.contains("6 runs (seed "))
    }
}

/// The no-echo terminal prompt (`script` provides the terminal).
@Suite(.blocking) struct PasswordPromptTests {
    static func initOnTTY(_ s: Sandbox, vault: String, answers: [String]) -> String {
        onTTY(s, "init --kdf interactive", vault: vault, answers: answers)
    }

    /// Runs `vault ARGS` on a terminal (script(1)), typing `answers` at its prompts.
    static func onTTY(_ s: Sandbox, _ arguments: String, vault: String, answers: [String]) -> String {
        let r = Process()
        r.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        r.arguments = ["-qec", "\(Sandbox.binary) \(arguments); echo \"[exit $?]\"", "/dev/null"]
        var env = s.env
        env["VAULT_PASSWORD"] = nil
        env["VAULT_DIR"] = vault
        r.environment = env
        let input = Pipe(), output = Pipe()
        r.standardInput = input
        r.standardOutput = output
        // What the terminal showed so far, read as it comes: each answer is typed once its
        // prompt is on the screen (typed earlier, it could be flushed with the terminal's echo).
        let shown = Shown()
        output.fileHandleForReading.readabilityHandler = { h in shown.append(h.availableData) }
        try? r.run()
        for (i, a) in answers.enumerated() {
            poll(every: 10_000) { shown.prompts > i || !r.isRunning }
            input.fileHandleForWriting.write(Data((a + "\n").utf8))
        }
        r.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        shown.append(output.fileHandleForReading.readDataToEndOfFile())
        return shown.text.replacingOccurrences(of: "\r", with: "")
    }

    /// A terminal's output as it arrives, and how many password prompts it holds.
    final class Shown: @unchecked Sendable {
        // @unchecked: `bytes` is touched only under `lock`.
        private let lock = NSLock()
        private var bytes = Data()
        func append(_ d: Data) { lock.withLock { bytes.append(d) } }
        var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
        var prompts: Int { text.components(separatedBy: "password: ").count - 1 }
    }

    @Test func initAsksTwiceWithoutEcho() {
        let s = Sandbox()
        let ok = Self.initOnTTY(s, vault: s.path("v1"), answers: ["tty secret", "tty secret"])
        #expect(ok.hasPrefix("Vault password: \nRepeat password: \nvault: created \(s.path("v1"))"), "\(ok)")
        #expect(ok.hasSuffix("[exit 0]\n"))
        #expect(!ok.contains("tty secret"), "the password is not echoed")
        #expect(s.run(["list", "--vault", s.path("v1")], env: ["VAULT_PASSWORD": "tty secret"]).status == 0)
        let mismatch = Self.initOnTTY(s, vault: s.path("v2"), answers: ["tty secret", "something else"])
        #expect(mismatch.contains("vault: the passwords do not match\n[exit 64]"), "\(mismatch)")
        #expect(!FileManager.default.fileExists(atPath: s.path("v2/vault.json")))
        // A wrong password typed at the prompt: the hint is about the prompt, not a variable.
        let wrong = Self.onTTY(s, "list", vault: s.path("v1"), answers: ["not it"])
        #expect(
            wrong.hasSuffix(
                """
                    vault: wrong password\nvault: hint: the password typed does not open this vault; run the command \
                    again to retype it (is Caps Lock on?)\n[exit 77]\n
                    """
            ), "\(wrong)")
        s.write("pw.txt", Array("not it".utf8))
        let file = s.run(["list", "--vault", s.path("v1"), "--password-file", "pw.txt"])
        #expect(
            file.status == 77 && file.stderr == "vault: wrong password\nvault: hint: check the password file pw.txt\n",
            "\(file.stderr)")
    }
}
