import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where the password comes from and what a wrong one looks like, on the built binary: a password
/// manager's command, the prompt, an empty password, and damage told apart from a wrong password.
@Suite(.blocking) struct PasswordCLITests {
    @Test func passwordsComeFromAPasswordManagersCommandWithoutAShell() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", .random(100, seed: 91))
        #expect(s.run("add", "a.txt").status == 0)
        let noPassword: [String: String?] = ["VAULT_PASSWORD": nil]
        // Quoted words, no shell: '$HOME' stays as written, and one trailing newline is dropped.
        let right = noPassword.merging(["VAULT_PASSWORD_COMMAND": "printf '%s\\n' 'correct horse battery'"]) { _, b in b
        }
        let listed = s.run(["list", "--json"], env: right)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(!listed.stderr.contains("correct horse") && !listed.out.contains("correct horse"))
        let option = s.run(["--password-command", "printf %s \"correct horse battery\"", "list"], env: noPassword)
        #expect(option.status == 0, "\(option.stderr)")
        let wrong = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "printf '%s' '$HOME'"]) { _, b in b })
        #expect(wrong.status == 77, "\(wrong.stderr)")
        let failing = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "sh -c 'exit 3'"]) { _, b in b })
        #expect(
            failing.status == 64
                && failing.stderr.hasPrefix(
                    "vault: VAULT_PASSWORD_COMMAND failed (exit status 3); nothing was unlocked\n"),
            "\(failing.stderr)")
        let missing = s.run(
            ["list"], env: noPassword.merging(["VAULT_PASSWORD_COMMAND": "no-such-manager get vault"]) { _, b in b })
        #expect(
            missing.status == 3
                && missing.stderr.hasPrefix("vault: VAULT_PASSWORD_COMMAND: 'no-such-manager' was not found on PATH\n"),
            "\(missing.stderr)")
        let unmatched = s.run(["--password-command", "printf 'x", "list"], env: noPassword)
        #expect(
            unmatched.status == 64
                && unmatched.stderr.hasPrefix("vault: the password command is empty or has an unmatched quote\n"),
            "\(unmatched.stderr)")
        // The new password of passwd, from its own command.
        let changed = s.run(
            ["passwd", "--kdf", "interactive"],
            env: right.merging(["VAULT_NEW_PASSWORD_COMMAND": "printf 'a new one'"]) { _, b in b })
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(s.run(["list"], env: ["VAULT_PASSWORD": "a new one"]).status == 0)
    }

    /// Found by a review of the password command once `posix_spawn` replaced Foundation's
    /// `Process`: the command inherited vault's interrupt pipe (it could fake a Ctrl-C), one that
    /// never stops printing (`yes`) hung vault, and a password of 4,097 bytes was taken from a
    /// file or a command though `VAULT_PASSWORD` refuses it (while 4,096 and a CRLF was refused).
    @Test func aPasswordCommandGetsNoDescriptorOfVaultsAndIsStoppedWhenItPrintsTooMuch() throws {
        let s = Sandbox()
        let longest = String(repeating: "p", count: 4096)
        #expect(s.run(["init", "--kdf", "insecure-test"], env: ["VAULT_PASSWORD": longest]).status == 0)
        let noPassword: [String: String?] = ["VAULT_PASSWORD": nil]
        func command(_ c: String) -> [String: String?] {
            noPassword.merging(["VAULT_PASSWORD_COMMAND": c]) { _, b in b }
        }
        // Only standard input, output and error reach the command.
        let fds = s.path("fds.txt")
        let listed = s.run(["list"], env: command("sh -c 'ls /proc/$$/fd > \(fds); printf %s \(longest)'"))
        #expect(listed.status == 0, "\(listed.stderr)")
        let open = (try? String(contentsOfFile: fds, encoding: .utf8))?.split(separator: "\n").compactMap { Int($0) }
        // 0, 1 and 2, and the shell's own copy of its output while it redirects (10 and up in
        // dash); vault's interrupt pipe was 3 and 4.
        #expect(
            open.map { Set([0, 1, 2]).isSubset(of: $0) && $0.allSatisfy { $0 < 3 || $0 >= 10 } } == true,
            "descriptors the command inherited: \(open ?? [])")
        // A command that prints for ever is stopped, and vault says why.
        let endless = s.run(["list"], env: command("yes"))
        #expect(
            endless.status == 64
                && endless.stderr.hasPrefix("vault: VAULT_PASSWORD_COMMAND printed more than 4096 bytes\n"),
            "\(endless.stderr)")
        let tooLong = s.run(["list"], env: command("printf %s \(longest)p"))
        #expect(tooLong.status == 64, "\(tooLong.stderr)")
        // The longest password, with a CRLF after it, from a file and from a command.
        s.write("pw-crlf", Array((longest + "\r\n").utf8))
        let crlf = s.run(["list"], env: noPassword.merging(["VAULT_PASSWORD_FILE": s.path("pw-crlf")]) { _, b in b })
        #expect(crlf.status == 0, "\(crlf.stderr)")
        #expect(s.run(["list"], env: command("printf '%s\\r\\n' \(longest)")).status == 0)
        s.write("pw-long", Array((longest + "p").utf8))
        let file = s.run(["list"], env: noPassword.merging(["VAULT_PASSWORD_FILE": s.path("pw-long")]) { _, b in b })
        #expect(file.status == 64 && file.stderr.contains("is longer than 4096 bytes"), "\(file.stderr)")
    }

    @Test func anEmptyPasswordIsRefusedAtTheFirstPrompt() throws {
        let s = Sandbox()
        let r = Fixtures.atTerminal(s, "\"$1\" init --kdf insecure-test", typed: "\n", env: ["VAULT_PASSWORD": nil])
        #expect(r.status == 64, "\(r.out)")
        #expect(r.out.contains("vault: the password is empty") && !r.out.contains("Repeat password"), "\(r.out)")
    }

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
}
