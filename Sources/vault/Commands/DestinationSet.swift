import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

extension VaultCommand.Destinations {
    /// `vault destination set NAME …`: changes what a destination keeps — what every scheduled
    /// upload there needs (its CA file, where its token comes from), its recipients, its receipt
    /// key, whether it is required — as a `destination` history record, keeping its name, its
    /// identity and its deliveries.
    struct Set: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change what a destination keeps: its CA file, token source, recipients, receipt key.",
            usage: "vault destination set <name> [<options>]",
            discussion: """
                Each option given replaces that setting; the others stay. The destination keeps its \
                name, its URL and its deliveries. 'vault upload --to NAME' then uses what it keeps: \
                the CA file unless --cacert is given, and the token file or command unless the \
                environment gives a token (VAULT_UPLOAD_TOKEN, VAULT_UPLOAD_TOKEN_FILE, \
                VAULT_UPLOAD_TOKEN_COMMAND). The token itself is never kept, only where it is read from.

                Examples:
                  vault destination set office --cacert /etc/vault/office-ca.pem
                  vault destination set office --token-file /etc/vault/office.token
                  vault destination set office --token-command 'pass show office-token'
                  vault destination set office --receipt-key 3f9c… --optional
                  vault destination set lan-tus --no-credentials
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Destinations

        @Argument(help: ArgumentHelp("The destination's name.", valueName: "name"))
        var name: String

        @Option(
            help: ArgumentHelp(
                "Trust the certificate authorities in this PEM file for uploads there.", valueName: "file"))
        var cacert: String?

        @Flag(help: "Trust the system's certificate authorities again (forget --cacert).")
        var noCacert = false

        @Option(
            help: ArgumentHelp(
                "Read the upload token from this file (one trailing newline dropped).", valueName: "file"))
        var tokenFile: String?

        @Option(help: ArgumentHelp("Take the upload token from what this command prints.", valueName: "command"))
        var tokenCommand: String?

        @Flag(help: "Keep no token source (the environment's token only).")
        var noToken = false

        @Flag(
            inversion: .prefixedNo,
            help: """
                Whether uploads there need credentials (--no-credentials: it takes uploads without any, and an \
                upload there with none set goes ahead).
                """)
        var credentials: Bool?

        @OptionGroup var sealing: SealingOptions

        @Flag(help: "Seal uploads there to no one (forget the recipients).")
        var noRecipients = false

        @Option(help: ArgumentHelp("The public key of the receiver that signs its receipts.", valueName: "hex"))
        var receiptKey: String?

        @Flag(help: "Count batches there as delivered without a signed receipt (forget the receipt key).")
        var noReceiptKey = false

        @Flag(help: "Whether documents must reach this destination before 'vault remove --delivered' frees them.")
        var need: Need?

        enum Need: String, EnumerableFlag {
            case required, optional
        }

        @OptionGroup var output: QuietOption

        func run() async throws { try await run(parent: group.parentOptions) }

        func validate() throws {
            if cacert != nil && noCacert { throw ValidationError("--cacert and --no-cacert do not go together.") }
            if [tokenFile != nil, tokenCommand != nil, noToken].filter({ $0 }).count > 1 {
                throw ValidationError("Give one of --token-file, --token-command and --no-token.")
            }
            if credentials == false && (tokenFile != nil || tokenCommand != nil) {
                throw ValidationError("--no-credentials and a token source do not go together.")
            }
            let recipients = !sealing.recipients.isEmpty || !sealing.recipientsFiles.isEmpty
            if recipients && noRecipients {
                throw ValidationError("--recipient or --recipients-file and --no-recipients do not go together.")
            }
            if receiptKey != nil && noReceiptKey {
                throw ValidationError("--receipt-key and --no-receipt-key do not go together.")
            }
            let changes: [Bool] = [
                cacert != nil, noCacert, tokenFile != nil, tokenCommand != nil, noToken, recipients, noRecipients,
                receiptKey != nil, noReceiptKey, need != nil, credentials != nil
            ]
            if !changes.contains(true) {
                throw ValidationError("Say what to change (--cacert, --token-file, --receipt-key, …; see --help).")
            }
        }

        func execute(_ options: GlobalOptions) async throws {
            // Checked before the password is asked for: files, the command's words, the key.
            let cacert = try self.cacert.map { try Self.existingFile($0, option: "--cacert") }
            if let cacert {
                try UploadTarget.checkCertificates(atPEM: cacert, named: "\(Terminal.printable(cacert)) (--cacert)")
            }
            let tokenFile = try self.tokenFile.map { try Self.existingFile($0, option: "--token-file") }
            if let tokenCommand {
                guard let program = PasswordReader.splitWords(tokenCommand)?.first else {
                    throw VaultError(.usage, "--token-command is empty or has an unmatched quote")
                }
                if program.contains("/") && !program.hasPrefix("/") {
                    throw VaultError(
                        .usage, "--token-command names '\(Terminal.printable(program))' by a relative path",
                        hint: "give its absolute path, or a program on PATH: a scheduled upload runs elsewhere")
                }
            }
            if let receiptKey { try Add.checkReceiptKey(receiptKey) }
            let recipients = try sealing.parsed()
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try DestinationList.load(vault)
            guard let i = list.destinations.firstIndex(where: { $0.name == name }) else {
                throw VaultError(.notFound, "no destination named '\(Terminal.printable(name))'")
            }
            var entry = list.destinations[i]
            let wire = entry.uploadProtocol ?? (entry.url.lowercased().hasPrefix("s3://") ? .s3 : .json)
            if receiptKey != nil, ![.json, .form].contains(wire) {
                throw VaultError(.usage, "receipts are signed for json and form batches, not \(wire.rawValue)")
            }
            // The upload's rule: credentials never cross a network in the clear.
            let cleartext = UploadTarget(address: entry.url)?.isCleartextOverNetwork == true
            if tokenFile != nil || tokenCommand != nil, cleartext {
                let host = URLComponents(string: entry.url)?.host ?? entry.url
                throw VaultError(
                    .usage, "refusing to send credentials unencrypted over http:// to \(host)",
                    remedy: .dropCredentials)
            }
            if let cacert { entry.cacert = cacert } else if noCacert { entry.cacert = nil }
            if tokenFile != nil || tokenCommand != nil || noToken {
                (entry.tokenFile, entry.tokenCommand) = (tokenFile, tokenCommand)
            }
            if !recipients.isEmpty {
                entry.recipients = recipients.map(\.description)
            } else if noRecipients {
                entry.recipients = nil
            }
            if let receiptKey { entry.receiptKey = receiptKey } else if noReceiptKey { entry.receiptKey = nil }
            if let need { entry.required = need == .required }
            // A token source kept means the destination takes credentials; one that takes none
            // keeps no token source.
            if let credentials {
                entry.noCredentials = credentials ? nil : true
                if !credentials { (entry.tokenFile, entry.tokenCommand) = (nil, nil) }
            }
            if tokenFile != nil || tokenCommand != nil { entry.noCredentials = nil }
            let changed = entry != list.destinations[i]
            list.destinations[i] = entry
            try list.save(vault)
            guard !output.quiet else { return }
            Terminal.err(
                changed
                    ? "vault: changed destination \(name): " + Self.describe(entry)
                    : "vault: destination \(name) already keeps that; nothing changed")
        }

        /// What a destination keeps, for the line that says what changed.
        static func describe(_ entry: DestinationEntry) -> String {
            var parts = [entry.required ? "required" : "optional"]
            parts.append(entry.cacert.map { "CA file \(Terminal.printable($0))" } ?? "the system's CAs")
            if let f = entry.tokenFile { parts.append("token from the file \(Terminal.printable(f))") }
            if let c = entry.tokenCommand { parts.append("token from the command '\(Terminal.printable(c))'") }
            if entry.noCredentials == true {
                parts.append("takes uploads without credentials")
            } else if entry.tokenFile == nil && entry.tokenCommand == nil {
                parts.append("token from the environment")
            }
            if let r = entry.recipients, !r.isEmpty {
                parts.append("sealed to \(Plural.count(r.count, "age recipient"))")
            }
            if entry.receiptKey != nil { parts.append("batches need its signed receipts") }
            return parts.joined(separator: ", ")
        }

        /// `path` made absolute (a cron job runs elsewhere), once it names a readable file.
        static func existingFile(_ path: String, option: String) throws -> String {
            let given = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            let absolute = URL(fileURLWithPath: given).standardizedFileURL.path
            guard FileSystem.kind(of: absolute) == .file else {
                throw VaultError(.notFound, "no file at \(Terminal.printable(path)) (\(option))")
            }
            _ = try VaultCore.OpenFile.openForReading(absolute)  // readable by this user, now
            return absolute
        }
    }
}
