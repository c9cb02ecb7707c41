import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault init`: create a vault.
    struct Init: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a new, empty vault.",
            discussion: """
                Asks for the password twice on a terminal. The directory must not exist (missing \
                parent folders are made, 0700) or must be empty; that is checked before the password \
                is asked. There is no way to recover the documents without the password.

                Examples:
                  vault init                      # asks for the password twice
                  vault --vault ~/scans init --kdf sensitive
                  vault init --password-file pw.txt --kdf interactive
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Option(
            help:
                """
                    How hard the password is to guess offline: interactive (64 MiB, ~0.1 s), moderate (256 MiB, ~0.7 \
                    s) or sensitive (1 GiB, ~3.5 s).
                    """
        )
        var kdf = KDFChoice(.moderate)

        @OptionGroup var output: OutputOptions

        /// `init --json`.
        struct Result: Encodable { var vault, id, kdf: String }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal(
                hint: "a vault is made in a folder, then pushed: 'vault init --vault DIR' and "
                    + "'vault push \(options.vault ?? "s3://…") --vault DIR'")
            let store = options.store
            if store.exists { throw VaultError(.alreadyExists, "a vault already exists at \(store.root)") }
            // Everything that can be checked is, before the password is asked for.
            try store.checkCanCreate()
            let password = try PasswordReader.read(
                file: options.passwordFile, command: options.passwordCommand, confirm: true)
            let vault = try store.create(password: password, kdf: kdf.parameters)
            if output.json {
                Terminal.out(JSONOutput.line(Result(vault: store.root, id: vault.id, kdf: kdf.name)))
            } else if !output.quiet {
                Terminal.err("vault: created \(store.root) (Argon2id \(kdf.name), id \(vault.id.prefix(12)))")
            }
            // Said once, even with -q: it is the one thing a new user must know (--json is a
            // script's mode: stderr carries errors only).
            if !output.json {
                Terminal.err("vault: keep the password safe: without it the documents cannot be recovered, by anyone")
            }
        }
    }
}
