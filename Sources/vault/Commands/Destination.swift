import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

extension VaultCommand {
    /// `vault destination`: the places documents are delivered to.
    struct Destinations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "destination",
            abstract: "List, add, change or remove the destinations documents are delivered to (back offices).",
            discussion: """
                A destination is a short name for where 'vault upload' delivers documents: an \
                https:// URL, s3://BUCKET/PREFIX, or a presign endpoint. It is kept in the sealed \
                history (so this asks for the password: nobody without it can add or drop a \
                destination). The delivery ledger knows a destination by its URL \
                (scheme, host, port, path and query), with or without a name. Remotes ('vault remote') are \
                the other kind of place: replicas of the whole vault.

                A destination is required unless added with --optional: 'vault remove --delivered' \
                removes only documents every required destination confirmed. 'vault destination set' \
                changes what a destination keeps (its CA file, where its token comes from, its \
                recipients, its receipt key, required or optional) and keeps its deliveries.

                Examples:
                  vault destination add office https://backoffice.example/batches
                  vault destination add archive s3://archive/station-3 --optional
                  vault destination add inbox https://office.example/in.php --protocol form
                  vault destination add office https://office.example/batches \\
                      --receipt-key "$(cat office-receipt-key.txt)"
                  vault destination add office https://office.example/batches \\
                      --recipients-file office.recipients
                  vault destination set office --token-file /etc/vault/office.token
                  vault destination
                  vault destination remove archive
                """,
            subcommands: [List.self, Add.self, Set.self, Remove.self],
            defaultSubcommand: List.self)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        var parentOptions: GlobalOptions { global.merged(with: root.global) }
    }
}

extension VaultCommand.Destinations {
    /// `vault destination list`.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the destinations (the default).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Destinations
        @OptionGroup var result: ResultOptions

        /// `destination list --json`.
        struct Result: Encodable { var destinations: [DestinationEntry] }

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let list = try DestinationList.load(try options.unlock())
            if result.json { Terminal.out(JSONOutput.line(Result(destinations: list.destinations))); return }
            if list.destinations.isEmpty {
                Terminal.err("vault: no destinations (add one with 'vault destination add NAME URL')"); return
            }
            for d in list.destinations {
                Terminal.out(
                    "\(d.name)  \(Terminal.printable(d.url))" + (d.wire.map { "  (\($0))" } ?? "")
                        + (d.required ? "" : "  optional") + (d.receiptKey == nil ? "" : "  signs receipts")
                        + ((d.recipients ?? []).isEmpty
                            ? "" : "  sealed (\(Plural.count(d.recipients!.count, "recipient")))")
                        + (d.noCredentials == true ? "  no credentials" : "") + "\n")
            }
        }
    }

    /// `vault destination add NAME URL`.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Name a destination: an https:// URL, s3://BUCKET/PREFIX or a presign endpoint.",
            usage: "vault destination add <name> <url> [<options>]")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Destinations

        @Argument(
            help: ArgumentHelp(
                "The destination's name (letters, digits, '-', '_' and '.', up to 64).", valueName: "name"))
        var name: String

        @Argument(
            help: ArgumentHelp(
                """
                Where batches go: http(s)://…, s3://BUCKET/PREFIX, or a presign endpoint with --protocol \
                presigned-s3.
                """,
                valueName: "url"))
        var url: String

        @Option(
            name: .customLong("protocol"),
            help: ArgumentHelp(
                "How batches go there: json, form, tus, s3 or presigned-s3 (default: s3 for s3://, else json).",
                valueName: "protocol"))
        var wire: String?

        @Flag(help: "Documents need not reach this destination before 'vault remove --delivered' frees them.")
        var optional = false

        @Flag(
            help: """
                Accept an http:// URL to a host that is not a loopback address (documents would cross the network \
                unencrypted; each upload there needs --insecure-http too).
                """)
        var insecureHTTP = false

        @Option(
            help: ArgumentHelp(
                """
                The public key of a receiver that signs receipts ('vault receive key' prints it): a batch \
                counts as delivered only with its signed receipt, kept in the history.
                """,
                valueName: "hex"))
        var receiptKey: String?

        @Flag(
            help: """
                The destination takes uploads without credentials: an upload there with none set goes ahead \
                (otherwise it is refused before anything is sent).
                """)
        var noCredentials = false

        @OptionGroup var sealing: SealingOptions
        @OptionGroup var output: QuietOption

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let (identity, named, place) = try checked()
            let recipients = try sealing.parsed()
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try DestinationList.load(vault)
            if list.destinations.contains(where: { $0.name == name }) {
                throw VaultError(
                    .alreadyExists, "a destination named '\(name)' exists",
                    hint: "remove it first with 'vault destination remove \(name)'")
            }
            if let other = list.destinations.first(where: { $0.identity == identity }) {
                throw VaultError(.alreadyExists, "\(identity) is the destination '\(other.name)' already")
            }
            var entry = DestinationEntry(name: name, url: url, wire: named?.rawValue, required: !optional, s3: place)
            entry.receiptKey = receiptKey
            entry.recipients = recipients.isEmpty ? nil : recipients.map(\.description)
            entry.noCredentials = noCredentials ? true : nil
            list.destinations.append(entry)
            try list.save(vault)
            guard !output.quiet else { return }
            Terminal.err(
                "vault: added destination \(name) → \(identity)" + (optional ? " (optional)" : "")
                    + (insecureHTTP && UploadTarget(address: url)?.isCleartextOverNetwork == true
                        ? "; documents cross the network unencrypted" : "")
                    + (receiptKey == nil ? "" : "; batches need its signed receipts")
                    + (noCredentials ? "; it takes uploads without credentials" : "")
                    + (recipients.isEmpty ? "" : "; sealed to \(Plural.count(recipients.count, "age recipient"))"))
        }

        /// A receipt key as `vault receive key` prints it: 64 lower-case hex digits.
        static func checkReceiptKey(_ key: String) throws {
            guard Hex.decode(key)?.count == SigningKey.publicKeySize, key == key.lowercased() else {
                throw VaultError(
                    .usage, "--receipt-key takes 64 lower-case hex digits (what 'vault receive key' prints)")
            }
        }

        /// The name, URL, protocol and receipt key checked before the password is asked for:
        /// the destination's identity, its protocol if named, and for s3:// where it is.
        private func checked() throws -> (identity: String, wire: UploadProtocol.Name?, place: S3Place?) {
            guard DestinationList.isValidName(name) else {
                throw VaultError(
                    .usage,
                    """
                    '\(Terminal.printable(name))' is not a destination name (letters, digits, '-', '_' and '.', \
                    up to 64)
                    """
                )
            }
            if let why = Terminal.urlControlProblem(url) {
                throw VaultError(
                    .usage, "'\(Terminal.printable(String(url.prefix(200))))' is not a destination URL: \(why)")
            }
            let place = url.lowercased().hasPrefix("s3://") ? S3Environment.place() : nil
            guard let identity = DestinationIdentity(url: url, s3: place)?.value else {
                throw VaultError(
                    .usage,
                    """
                    '\(Terminal.printable(String(url.prefix(200))))' is not a destination URL (http://, https:// \
                    or s3://)
                    """
                )
            }
            // Parsed here rather than by the option's type: the message names every protocol.
            let named = try wire.map { given in
                guard let name = UploadProtocol.Name(rawValue: given) else {
                    let all = UploadProtocol.Name.allCases.map(\.rawValue)
                    throw VaultError(
                        .usage,
                        "--protocol must be \(all.dropLast().joined(separator: ", ")) or \(all.last!), "
                            + "not '\(Terminal.printable(given))'")
                }
                return name
            }
            let s3URL = url.lowercased().hasPrefix("s3://")
            if s3URL ? !(named == nil || named == .s3) : named == .s3 {
                throw VaultError(
                    .usage,
                    s3URL
                        ? "an s3:// destination is sent by --protocol s3"
                        : """
                        --protocol s3 needs an s3://BUCKET/PREFIX URL (or use presigned-s3 with the presign \
                        endpoint)
                        """
                )
            }
            // The upload's cleartext rule (UploadOptions.checkCleartext), with its words, so a
            // destination an upload would refuse is not named at all.
            if !s3URL, !insecureHTTP, let target = UploadTarget(address: url), target.isCleartextOverNetwork {
                let host = URLComponents(string: url)?.host ?? target.redacted
                throw VaultError(
                    .usage, "refusing to send documents unencrypted over http:// to \(host)", remedy: .useHTTPS)
            }
            if let c = URLComponents(string: url), c.user != nil || c.password != nil {
                throw VaultError(
                    .usage,
                    """
                    put no credentials in a destination's URL; use VAULT_UPLOAD_TOKEN or \
                    VAULT_UPLOAD_USER/VAULT_UPLOAD_PASSWORD
                    """
                )
            }
            if let receiptKey { try Self.checkReceiptKey(receiptKey) }
            if receiptKey != nil, let named, ![.json, .form].contains(named) {
                throw VaultError(.usage, "receipts are signed for json and form batches, not \(named.rawValue)")
            }
            if receiptKey != nil, s3URL {
                throw VaultError(.usage, "receipts are signed for json and form batches, not s3")
            }
            return (identity, named, place)
        }
    }

    /// `vault destination remove NAME`.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Forget a destination's name (its deliveries stay in the history).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Destinations

        @Argument(help: ArgumentHelp("The destination's name.", valueName: "name"))
        var name: String

        @OptionGroup var output: QuietOption

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try DestinationList.load(vault)
            guard let i = list.destinations.firstIndex(where: { $0.name == name }) else {
                throw VaultError(.notFound, "no destination named '\(Terminal.printable(name))'")
            }
            list.destinations.remove(at: i)
            try list.save(vault)
            if !output.quiet { Terminal.err("vault: removed destination \(name) (its deliveries stay in the history)") }
        }
    }
}
