import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault remove`: delete documents.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Delete documents from the vault and print their ids.",
            usage: "vault remove [<id-or-name> ...] [--delivered[-to <dest>]] [<options>]",
            discussion: """
                Every argument is resolved first; if any is unknown or ambiguous, nothing is deleted.

                Freeing space by delivery: --delivered-to X removes the documents destination X \
                confirmed (the delivery ledger) and, when destinations are named ('vault destination'), \
                that every required one confirmed too; --delivered removes those every required \
                destination confirmed. Nothing a required destination has not confirmed is removed.

                The ids removed go to standard output, and a line on standard error names what was \
                removed. On a terminal, removing more than 5 documents asks first (--yes does not); \
                --dry-run lists what would be removed and removes nothing.

                Examples:
                  vault remove 79d6
                  vault remove receipt.jpg scan.pdf
                  vault remove 79d6 --json
                  vault remove --delivered-to office --older-than 30d
                  vault remove --delivered --dry-run
                """,
            aliases: ["rm"])

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp(
                "Unique id prefixes (4+ digits) or exact names (with --delivered…: among these only).",
                valueName: "id-or-name"))
        var documents: [String] = []

        @Option(
            name: .customLong("delivered-to"),
            help: ArgumentHelp(
                "Remove the documents this destination (a name or URL) confirmed, and every required destination too.",
                valueName: "destination"))
        var deliveredTo: String?

        @Flag(help: "Remove the documents every required destination confirmed.")
        var delivered = false

        @Option(
            name: .customLong("older-than"),
            help: ArgumentHelp("With --delivered…: only deliveries at least this old (30d, 12h, 2w).", valueName: "age")
        )
        var olderThan: String?

        @Flag(help: "List what would be removed, with names and sizes; remove nothing.")
        var dryRun = false

        @Flag(name: .shortAndLong, help: "Do not ask before removing more than 5 documents on a terminal.")
        var yes = false

        @OptionGroup var result: OutputOptions

        /// `remove --json`: the ids removed (with `--dry-run`: that would be), and their names.
        struct Result: Encodable {
            struct Document: Encodable { var id, name: String; var size: UInt64 }
            var removed: [String]
            var documents: [Document] = []
            var dryRun: Bool?
        }

        func validate() throws {
            let byDelivery = delivered || deliveredTo != nil
            if let olderThan {
                if !byDelivery { throw ValidationError("--older-than goes with --delivered or --delivered-to.") }
                if DeliveryFilter.duration(olderThan) == nil {
                    throw ValidationError("--older-than must look like 30d, 12h, 45m or 2w, not '\(olderThan)'.")
                }
            }
            if documents.isEmpty && !byDelivery {
                throw ValidationError("Give at least one document to remove (or --delivered-to).")
            }
            if delivered && deliveredTo != nil {
                throw ValidationError("Give --delivered or --delivered-to, not both.")
            }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            do { try removing(options) } catch { throw Hints.readOnlyVault(error) }
        }

        private func removing(_ options: GlobalOptions) throws {
            let vault = try options.unlock()
            var ids = documents.isEmpty ? [] : try vault.select(DocumentQuery.selection(documents, in: vault)).map(\.id)
            if delivered || deliveredTo != nil {
                guard let proven = try confirmedDeliveries(ids, in: vault) else { return }
                ids = proven
            }
            let records = try vault.records(ids)
            let why = delivered || deliveredTo != nil ? "(delivered)" : ""
            let documents = records.map {
                Result.Document(id: $0.id.hex, name: $0.metadata.name, size: $0.metadata.size)
            }
            if dryRun { return preview(ids, records, why: why) }
            guard Removal.confirm(records, why: why, yes: yes || result.json) else {
                throw VaultError(
                    .usage, "nothing was removed (not confirmed)",
                    hint: "--yes removes without asking; --dry-run lists them")
            }
            try vault.removeDocuments(ids)
            if result.json {
                Terminal.out(JSONOutput.line(Result(removed: ids.map(\.hex), documents: documents)))
            } else if !result.quiet {
                Terminal.out(ids.map { $0.hex + "\n" }.joined())
                Terminal.err(
                    """
                        vault: removed \(Removal.summary(records))\(why.isEmpty ? "" : " " + why): \
                        \(Removal.names(records))
                        """
                )
            }
        }

        /// Of `ids` (every document when none were named), those confirmed by the destinations
        /// `--delivered`/`--delivered-to` name, each confirmation proven by the history (and by
        /// a signed receipt where the destination has a key); nil when there is none (said so).
        private func confirmedDeliveries(_ ids: [DocumentID], in vault: Vault) throws -> [DocumentID]? {
            var ids = ids
            let list = try DestinationList.load(vault)
            if delivered && list.required.isEmpty {
                throw VaultError(
                    .usage,
                    "no destination is required: name them with 'vault destination add', or use --delivered-to")
            }
            let destinations = try DeliveryFilter.destinations(
                deliveredTo.map { [$0] } ?? [], required: true, list: list)
            let filter = try DeliveryFilter(
                .delivered(destinations, olderThan: olderThan.flatMap(DeliveryFilter.duration)), vault: vault)
            if documents.isEmpty { _ = try vault.forEachRecord { ids.append($0.id) } }
            ids = ids.filter(filter.keeps)
            if ids.isEmpty {
                if !result.json && !result.quiet {
                    let age = olderThan.map { " \($0) ago or more" } ?? ""
                    Terminal.err(
                        "vault: nothing to remove: no document was confirmed by "
                            + "\(destinations.joined(separator: " and "))\(age)")
                } else if result.json {
                    Terminal.out(JSONOutput.line(Result(removed: [], dryRun: dryRun ? true : nil)))
                }
                return nil
            }
            // The history itself must show every confirmation, not the index alone.
            let (unproven, findings, unsigned) = try vault.unprovenDeliveries(ids, at: destinations)
            if !findings.isEmpty {
                throw VaultError(
                    .vaultDamaged,
                    """
                        the history has findings (\(findings.joined(separator: ", "))): a removal by delivery \
                        needs a whole history; nothing was removed
                        """,
                    hint: "run 'vault audit' to see them")
            }
            if !unsigned.isEmpty {
                let shown = Self.shortList(unsigned)
                throw VaultError(
                    .notFound,
                    """
                        \(Plural.count(unsigned.count, "document")) (\(shown)) \
                        \(unsigned.count == 1 ? "was" : "were") confirmed by \
                        \(destinations.joined(separator: " and ")) without a receipt signed by its key (before \
                        it was given one, or by a server that does not sign); nothing was removed
                        """,
                    hint: "send them again to get signed receipts: vault upload --to DESTINATION --new-run")
            }
            if !unproven.isEmpty {
                let shown = Self.shortList(unproven)
                throw VaultError(
                    .vaultDamaged,
                    "the index says \(Plural.count(unproven.count, "document")) (\(shown)) reached "
                        + "\(destinations.joined(separator: " and ")), and the history does not confirm it; "
                        + "nothing was removed",
                    hint: "run 'vault audit' to see what is wrong with the vault folder")
            }
            return ids
        }

        /// The first three ids, shortened, and an ellipsis when there are more.
        static func shortList(_ ids: [DocumentID]) -> String {
            ids.prefix(3).map { String($0.hex.prefix(12)) }.joined(separator: ", ") + (ids.count > 3 ? ", …" : "")
        }

        /// `--dry-run`: what would be removed, and nothing is.
        private func preview(_ ids: [DocumentID], _ records: [DocumentRecord], why: String) {
            let documents = records.map {
                Result.Document(id: $0.id.hex, name: $0.metadata.name, size: $0.metadata.size)
            }
            if result.json {
                return Terminal.out(
                    JSONOutput.line(Result(removed: ids.map(\.hex), documents: documents, dryRun: true)))
            }
            guard !result.quiet else { return }
            Terminal.out(
                records.map {
                    """
                        would remove  \($0.id.hex.prefix(12))  \(Terminal.size($0.metadata.size))  \
                        \(Terminal.printable($0.metadata.name))\n
                        """
                }.joined())
            Terminal.err(
                """
                    vault: dry run: would remove \(Removal.summary(records))\(why.isEmpty ? "" : " " + why); \
                    nothing was removed
                    """
            )
        }
    }
}
