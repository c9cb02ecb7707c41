import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension VaultCommand {
    /// `vault passwd`: change the password.
    struct Passwd: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract:
                "Change the vault's password (and optionally its Argon2id level); documents are not re-encrypted.",
            usage: "vault passwd [--kdf <level>] [--new-password-file <file>] [-q] [--json]",
            discussion: """
                The current password comes as for every command; the new one from \
                --new-password-file FILE, else $VAULT_NEW_PASSWORD, else a no-echo prompt asked twice. \
                Every document key and the vault key are re-wrapped and every envelope header re-sealed, \
                in place; payloads are not touched. A crash at any moment is finished or undone by the \
                next command, so the vault opens with exactly one of the two passwords.

                Examples:
                  vault passwd
                  vault passwd --kdf sensitive
                  vault passwd --password-file old.txt --new-password-file new.txt
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Option(
            help: ArgumentHelp(
                "A new Argon2id level: interactive, moderate or sensitive (default: keep the current parameters).",
                valueName: "level"))
        var kdf: KDFChoice?

        @Option(
            help: ArgumentHelp(
                "Read the new password from this file (one trailing newline is ignored).", valueName: "file"),
            completion: .file())
        var newPasswordFile: String?

        @OptionGroup var output: OutputOptions

        /// `passwd --json`.
        struct Result: Encodable { var kdf: String; var documents: Int; var bytesWritten: UInt64; var seconds: Double }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            do { try changing(options) } catch { throw Hints.readOnlyVault(error) }
        }

        private func changing(_ options: GlobalOptions) throws {
            try options.requireLocal(
                hint: "clone it, change the clone's password, then push the clone back: the change travels to the "
                    + "store, its other clones on their next pull, and its receivers (docs/RECEIVE.md)")
            let vault = try options.unlock()
            let newPassword = try PasswordReader.read(file: newPasswordFile, from: .newPassword, confirm: true)
            let started = Date()
            let summary = try vault.changePassword(to: newPassword, kdf: kdf?.parameters)
            let level = KDFChoice.name(of: summary.kdf)
            if output.json {
                Terminal.out(
                    JSONOutput.line(
                        Result(
                            kdf: level, documents: summary.documents, bytesWritten: summary.bytesWritten,
                            seconds: JSONOutput.seconds(since: started))))
            } else if !output.quiet {
                Terminal.err(
                    "vault: password changed (Argon2id \(level)); "
                        + "\(Plural.count(summary.documents, "envelope header")) re-sealed, "
                        + "\(Terminal.size(summary.bytesWritten)) written, "
                        + "in \(Seconds.tenths(Date().timeIntervalSince(started))) s")
            }
        }
    }
}
