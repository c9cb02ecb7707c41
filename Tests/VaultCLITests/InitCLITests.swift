import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `vault init` on a fresh account, on the built binary: the folders it makes, what it checks
/// before asking for a password, and the one warning about the password.
@Suite(.blocking) struct InitCLITests {
    @Test func initOnAFreshAccountMakesTheMissingFoldersPrivateAndWarnsOnceAboutThePassword() throws {
        let s = Sandbox()
        let home = s.path("home")  // does not exist: a fresh account without ~/.local/share
        let r = s.run(["init", "--kdf", "insecure-test"], env: ["HOME": home, "VAULT_DIR": nil, "XDG_DATA_HOME": nil])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.stderr.hasPrefix("vault: created \(home)/.local/share/vault (Argon2id insecure-test, id "), "\(r.stderr)")
        #expect(
            r.stderr.components(separatedBy: "without it the documents cannot be recovered").count == 2,
            "said once: \(r.stderr)")
        for dir in [home, home + "/.local", home + "/.local/share", home + "/.local/share/vault"] {
            let mode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(dir): \(String(mode ?? 0, radix: 8))")
        }
        #expect(s.run(["list"], env: ["HOME": home, "VAULT_DIR": nil, "XDG_DATA_HOME": nil]).status == 0)
    }

    @Test func initChecksTheFolderBeforeAskingForThePassword() throws {
        let s = Sandbox()
        try FileManager.default.createDirectory(atPath: s.path("busy"), withIntermediateDirectories: true)
        s.write("busy/keep.txt", [1])
        s.write("file.txt", [1])
        // No password anywhere and no terminal: a prompt would fail differently.
        let busy = s.run(["init"], env: ["VAULT_DIR": s.path("busy"), "VAULT_PASSWORD": nil])
        #expect(
            busy.status == 73 && busy.stderr.hasPrefix("vault: \(s.path("busy")) exists and is not empty\n"),
            "\(busy.stderr)")
        let under = s.run(["init"], env: ["VAULT_DIR": s.path("file.txt/vault"), "VAULT_PASSWORD": nil])
        #expect(
            under.status == 73
                && under.stderr.hasPrefix(
                    """
                        vault: cannot create a vault in \(s.path("file.txt/vault")): \(s.path("file.txt")) is not a \
                        directory\n
                        """
                ),
            "\(under.stderr)")
    }
}
