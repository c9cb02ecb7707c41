import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault init`: create a vault.
    struct Init: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a new, empty vault.",
            usage: "vault init [--capture-for <file> [--seal-names]] [<options>]",
            discussion: """
                Asks for the password twice on a terminal. The directory must not exist (missing \
                parent folders are made, 0700) or must be empty; that is checked before the password \
                is asked. There is no way to recover the documents without the password.

                With --capture-for, the vault is a capture-only station: every document is sealed \
                to the office's age recipients as it is added (an age file, and its metadata), and \
                nothing the station holds, its password included, opens it again. The station keeps \
                each document's id, time, name (unless --seal-names) and the size and SHA-256 of \
                what it sealed, to deliver it and prove delivery; get and export refuse, \
                upload sends the sealed files as they are.

                Examples:
                  vault init                      # asks for the password twice
                  vault --vault ~/scans init --kdf sensitive
                  vault init --password-file pw.txt --kdf interactive
                  vault init --capture-for office.recipients
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

        @Option(
            name: .customLong("capture-for"),
            help: ArgumentHelp(
                "Make a capture-only station: seal every document to the age recipients in FILE (age1…, age1pq1…).",
                valueName: "file"),
            completion: .file())
        var captureFor: String?

        @Flag(help: "With --capture-for: keep no document names on the station either (they are sealed too).")
        var sealNames = false

        @OptionGroup var output: OutputOptions

        /// `init --json`.
        struct Result: Encodable {
            var vault, id, kdf: String
            /// A capture-only station's recipients.
            var captureFor: [String]?
        }

        func validate() throws {
            if sealNames && captureFor == nil { throw ValidationError("--seal-names needs --capture-for.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal(
                hint: "a vault is made in a folder, then pushed: 'vault init --vault DIR' and "
                    + "'vault push \(options.vault ?? "s3://…") --vault DIR'")
            let store = options.store
            if store.exists { throw VaultError(.alreadyExists, "a vault already exists at \(store.root)") }
            // Everything that can be checked is, before the password is asked for.
            try store.checkCanCreate()
            let capture = try captureFor.map { path in
                var seen = Set<AgeRecipient>()
                let recipients = try SealingOptions.recipients(inFile: path).filter { seen.insert($0).inserted }
                guard recipients.count <= AgeRecipient.maxRecipients else {
                    throw VaultError(
                        .usage, "at most \(AgeRecipient.maxRecipients) recipients, not \(recipients.count)")
                }
                guard !recipients.isEmpty else {
                    throw VaultError(.usage, "\(path) names no age recipient", hint: "one age1… or age1pq1… a line")
                }
                // As age does: a file sealed to a classic recipient too is open to whoever breaks X25519.
                let postQuantum = recipients.filter { if case .hybrid = $0 { true } else { false } }.count
                guard postQuantum == 0 || postQuantum == recipients.count else {
                    throw VaultError(
                        .usage, "\(path) mixes post-quantum (age1pq1…) and classic (age1…) recipients",
                        hint: "a document sealed to both is only as safe as X25519: use one kind")
                }
                return recipients
            }
            let password = try PasswordReader.read(
                file: options.passwordFile, command: options.passwordCommand, confirm: true)
            let vault = try store.create(
                password: password, kdf: kdf.parameters, capture: capture, sealNames: sealNames)
            if output.json {
                Terminal.out(
                    JSONOutput.line(
                        Result(
                            vault: store.root, id: vault.id, kdf: kdf.name,
                            captureFor: capture?.map(\.description))))
            } else if !output.quiet {
                Terminal.err("vault: created \(store.root) (Argon2id \(kdf.name), id \(vault.id.prefix(12)))")
                if let capture {
                    let recipients = Plural.count(capture.count, "recipient")
                    Terminal.err(
                        "vault: a capture-only station: documents are sealed to \(recipients) as they are added; "
                            + "nothing here opens them again")
                }
            }
            // Said once, even with -q: it is the one thing a new user must know (--json is a
            // script's mode: stderr carries errors only).
            if !output.json {
                Terminal.err(
                    capture == nil
                        ? "vault: keep the password safe: without it the documents cannot be recovered, by anyone"
                        : "vault: keep the password safe: without it the station's records cannot be read, nor its "
                            + "deliveries proven; its documents open only with the office's identity")
            }
        }
    }
}
