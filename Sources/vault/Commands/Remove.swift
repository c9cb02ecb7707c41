import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault remove`: delete documents.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete documents from the vault and print their ids.",
            discussion: """
                Every argument is resolved first; if any is unknown or ambiguous, nothing is deleted.

                Freeing space by delivery: --delivered-to X removes the documents destination X \
                confirmed (the delivery ledger) and, when destinations are named ('vault destination'), \
                that every required one confirmed too; --delivered removes those every required \
                destination confirmed. Nothing a required destination has not confirmed is removed.

                Examples:
                  vault remove 79d6
                  vault remove receipt.jpg scan.pdf
                  vault remove 79d6 --json
                  vault remove --delivered-to office --older-than 30d
                  vault remove --delivered
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Unique id prefixes (4+ digits) or exact names (with --delivered…: among these only).", valueName: "id-or-name"))
        var documents: [String] = []

        @Option(name: .customLong("delivered-to"), help: ArgumentHelp("Remove the documents this destination (a name or URL) confirmed, and every required destination too.", valueName: "destination"))
        var deliveredTo: String?

        @Flag(help: "Remove the documents every required destination confirmed.")
        var delivered = false

        @Option(name: .customLong("older-than"), help: ArgumentHelp("With --delivered…: only deliveries at least this old (30d, 12h, 2w).", valueName: "age"))
        var olderThan: String?

        @OptionGroup var result: OutputOptions

        /// `remove --json`.
        struct Result: Encodable { var removed: [String] }

        func validate() throws {
            let byDelivery = delivered || deliveredTo != nil
            if let olderThan {
                if !byDelivery { throw ValidationError("--older-than goes with --delivered or --delivered-to.") }
                if DeliveryFilter.duration(olderThan) == nil { throw ValidationError("--older-than must look like 30d, 12h, 45m or 2w, not '\(olderThan)'.") }
            }
            if documents.isEmpty && !byDelivery { throw ValidationError("Give at least one document to remove (or --delivered-to).") }
            if delivered && deliveredTo != nil { throw ValidationError("Give --delivered or --delivered-to, not both.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            do { try removing(options) } catch { throw Hints.readOnlyVault(error) }
        }

        private func removing(_ options: GlobalOptions) throws {
            let vault = try options.unlock()
            var ids = documents.isEmpty ? [] : try vault.select(DocumentSelection(queries: documents)).map(\.id)
            if delivered || deliveredTo != nil {
                let list = try DestinationList.load(vault)
                if delivered && list.required.isEmpty {
                    throw VaultError(.usage, "no destination is required: name them with 'vault destination add', or use --delivered-to")
                }
                let destinations = try DeliveryFilter.destinations(deliveredTo.map { [$0] } ?? [], required: true, list: list)
                let filter = try DeliveryFilter(.delivered(destinations, olderThan: olderThan.flatMap(DeliveryFilter.duration)), vault: vault)
                if documents.isEmpty { _ = try vault.forEachRecord { ids.append($0.id) } }
                ids = ids.filter(filter.keeps)
                if ids.isEmpty {
                    if !result.json && !result.quiet { Terminal.err("vault: nothing to remove: no document was confirmed by \(destinations.joined(separator: " and "))\(olderThan.map { " \($0) ago or more" } ?? "")") }
                    else if result.json { Terminal.out(JSONOutput.line(Result(removed: []))) }
                    return
                }
                // The history itself must show every confirmation, not the index alone.
                let (unproven, findings) = try vault.unprovenDeliveries(ids, at: destinations)
                if !findings.isEmpty {
                    throw VaultError(.vaultDamaged, "the history has findings (\(findings.joined(separator: ", "))): a removal by delivery needs a whole history; nothing was removed",
                                     hint: "run 'vault audit' to see them")
                }
                if !unproven.isEmpty {
                    throw VaultError(.vaultDamaged, "the index says \(Plural.count(unproven.count, "document")) (\(unproven.prefix(3).map { String($0.hex.prefix(12)) }.joined(separator: ", "))\(unproven.count > 3 ? ", …" : "")) "
                                     + "reached \(destinations.joined(separator: " and ")), and the history does not confirm it; nothing was removed",
                                     hint: "run 'vault audit' to see what is wrong with the vault folder")
                }
            }
            try vault.removeDocuments(ids)
            if result.json {
                Terminal.out(JSONOutput.line(Result(removed: ids.map(\.hex))))
            } else {
                for id in ids where !result.quiet { Terminal.out(id.hex + "\n") }
            }
        }
    }
}
