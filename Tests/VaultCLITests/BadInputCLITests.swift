import Foundation
import VaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Resource faults, misuse, concurrency and secrets: each leaves a clear `vault:` error, a
/// documented exit code, an unchanged vault and no partial output.
@Suite(.blocking) struct ReliabilityCLITests {
    /// Files in a directory, hidden ones included (temporary files must not survive).
    static func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    static func vaultIsIntact(_ s: Sandbox, documents: Int, vaultDir: String? = nil) {
        let env: [String: String?] = vaultDir.map { ["VAULT_DIR": $0] } ?? [:]
        let v = s.run(["verify"], env: env)
        #expect(v.status == 0, "\(v.out) \(v.stderr)")
        #expect(
            v.out.hasSuffix(
                "verified \(documents) document\(documents == 1 ? "" : "s"): \(documents) ok, 0 damaged; index ok\n"),
            "\(v.out)")
        let objects = entries((vaultDir ?? s.path("vault")) + "/objects")
        #expect(objects.count == documents, "\(objects)")
        #expect(!objects.contains { $0.hasPrefix(".vault-tmp-") }, "no temporary file survives")
    }

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
        Self.vaultIsIntact(s, documents: 1)

        #expect(s.run("add", "big.bin").status == 0)
        let export = s.run(["export", "--out", "out"], fileSizeLimitKiB: 1024)
        #expect(export.status == 74, "\(export.stderr)")
        #expect(export.stderr.contains("file too large"))
        #expect(Self.entries(s.path("out")).isEmpty, "no batch file, no temporary file, no manifest")
        Self.vaultIsIntact(s, documents: 2)
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
        Self.vaultIsIntact(s, documents: 1, vaultDir: vaultDir)
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
        #expect(Self.entries(small + "/out").isEmpty)
        Self.vaultIsIntact(s, documents: 1, vaultDir: vaultDir)
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
        Self.vaultIsIntact(s, documents: 1)
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

    @Test func binaryIsNeverWrittenToATerminal() throws {
        let s = Sandbox()
        s.initVault()
        s.write("img.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 1, 2])
        s.write("note.txt", Array("hello terminal\n".utf8))
        #expect(s.run("add", "img.png", "note.txt").status == 0)
        // `script` gives the command a pseudo-terminal as its stdout.
        func onTTY(_ args: String) -> String {
            let r = Process()
            r.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            r.arguments = ["-qec", "\(Sandbox.binary) \(args); echo \"[exit $?]\"", "/dev/null"]
            r.environment = s.env
            let pipe = Pipe()
            r.standardOutput = pipe
            r.standardInput = FileHandle.nullDevice
            try? r.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            r.waitUntilExit()
            return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
        }
        let bin = onTTY("get img.png")
        #expect(
            bin.contains(
                """
                    vault: refusing to write image/png data to a terminal\nvault: hint: use -o FILE, or redirect \
                    standard output\n[exit 64]
                    """
            ), "\(bin)")
        #expect(!bin.contains("PNG"))
        #expect(onTTY("get note.txt").contains("hello terminal\n[exit 0]"))
        #expect(onTTY("export --out -").contains("vault: refusing to write the payload to a terminal"))
    }

    @Test func fourConcurrentAddsLoseNothingAndReadersSeeAConsistentVault() throws {
        let s = Sandbox()
        s.initVault()
        for p in 0..<4 {
            try FileManager.default.createDirectory(atPath: s.path("in\(p)"), withIntermediateDirectories: true)
            for i in 0..<25 { s.write("in\(p)/f\(i).bin", .random(5000 + i, seed: UInt64(p * 100 + i))) }
        }
        let pids = (0..<4).map { p in s.spawn(["add", "-r", "in\(p)"]) }
        // Readers start once the first document is committed (before that, "there are no
        // documents to export" is the right answer), run beside the writers, and must always see
        // a consistent vault.
        poll(every: 2000) { s.objects.contains(where: { $0.hasSuffix(".vlt") }) }
        var readerFailures: [String] = []
        for _ in 0..<5 {
            let l = s.run("list", "--json")
            if l.status != 0 {
                readerFailures.append("list: \(l.stderr)")
            } else if (try? JSONSerialization.jsonObject(with: Data(l.stdout))) == nil {
                readerFailures.append("list printed invalid JSON")
            }
            let e = s.run("export", "--out", "-", "--batch-size", "200")
            if e.status != 0 {
                readerFailures.append("export: \(e.stderr)")
            } else if (try? JSONSerialization.jsonObject(with: Data(e.stdout))) == nil {
                readerFailures.append("export printed invalid JSON")
            }
        }
        let results = pids.map { s.wait($0) }
        for r in results { #expect(r.status == 0, "\(r.stderr)") }
        #expect(readerFailures.isEmpty, "\(readerFailures)")
        let ids = results.flatMap { $0.out.split(separator: "\n").map(String.init) }
        #expect(ids.count == 100 && Set(ids).count == 100)
        let listed = try JSONSerialization.jsonObject(with: Data(s.run("list", "--json").stdout)) as! [[String: Any]]
        #expect(Set(listed.map { $0["id"] as! String }) == Set(ids))
        Self.vaultIsIntact(s, documents: 100)
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
