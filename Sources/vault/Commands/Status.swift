import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

extension VaultCommand {
    /// `vault status`: what each destination has, from the delivery ledger.
    struct Status: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract:
                """
                    Show, per destination, how many documents it confirmed, how many are pending, its last delivery \
                    and unfinished uploads.
                    """,
            discussion: """
                Destinations are those named with 'vault destination add' and any URL the ledger \
                has deliveries for. 'pending' counts the documents in the vault the destination has \
                not confirmed; 'removed' those it confirmed that were removed since.

                Examples:
                  vault status
                  vault status --json            (schema: docs/schemas)
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand
        @OptionGroup var result: ResultOptions

        /// One destination's line.
        struct Entry: Encodable {
            var name: String?
            var destination: String
            var required: Bool
            var delivered: Int
            var pending: Int
            var removed: Int
            var lastDelivery: String?
            var interruptedRuns: Int
            var unconfirmedBatches: Int
        }

        /// `status --json`.
        struct Result: Encodable {
            var documents: Int
            var undelivered: Int
            var destinations: [Entry]
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try await options.open()
            // The upload journals, read once: what a kill left confirmed in one only is recorded,
            // then the runs still worth finishing are counted.
            let journals = vault.store.source == nil ? try UploadJournals.read(in: vault) : []
            try UploadJournals.recordConfirmedBatches(in: vault, journals: journals)
            let list = vault.store.source == nil ? try DestinationList.load(vault) : DestinationList()
            var present = Set<DocumentID>()
            // checks every row first: the ledger below is verified
            _ = try vault.forEachRecord { present.insert($0.id) }
            let ledger = try vault.ledger()
            let unfinished = try UploadJournals.unfinishedRuns(in: vault, journals: journals)
            var identities = list.destinations.map(\.identity)
            for d in ledger.keys.sorted() where !identities.contains(d) { identities.append(d) }
            for d in unfinished.keys.sorted() where !identities.contains(d) { identities.append(d) }
            var entries: [Entry] = []
            for identity in identities {
                let entry = list.destinations.first { $0.identity == identity }
                let rows = ledger[identity] ?? [:]
                let delivered = rows.keys.filter { present.contains($0) }.count
                let left = unfinished[identity] ?? UnfinishedRuns(runs: 0, batches: 0)
                entries.append(
                    Entry(
                        name: entry?.name, destination: identity, required: entry?.required ?? false,
                        delivered: delivered,
                        pending: present.count - delivered, removed: rows.count - delivered,
                        lastDelivery: rows.values.map(\.timeMillis).max().map {
                            UTCTime(millis: $0).iso8601
                        },
                        interruptedRuns: left.runs, unconfirmedBatches: left.batches))
            }
            // Documents some required destination lacks (with none required: that no destination has).
            let required = list.required.map(\.identity)
            let undelivered = present.filter { id in
                required.isEmpty
                    ? !ledger.values.contains { $0[id] != nil } : required.contains { ledger[$0]?[id] == nil }
            }.count
            if result.json {
                Terminal.out(
                    JSONOutput.line(Result(documents: present.count, undelivered: undelivered, destinations: entries)))
                return
            }
            var out =
                """
                    \(present.count) document\(present.count == 1 ? "" : "s") in the vault, \(undelivered) not yet \
                    delivered
                    """
                + (required.isEmpty ? "" : " everywhere required") + "\n"
            if entries.isEmpty {
                out +=
                    """
                        no destinations yet: 'vault upload --url URL' delivers, 'vault destination add NAME URL' \
                        names one\n
                        """
            }
            for e in entries {
                let optional = e.name == nil ? "" : e.required ? "" : "  (optional)"
                out += "\n\(e.name.map { "\($0)  " } ?? "")\(Terminal.printable(e.destination))\(optional)\n"
                out +=
                    "  delivered \(e.delivered), pending \(e.pending)"
                    + (e.removed > 0 ? ", removed after delivery \(e.removed)" : "")
                out += "; last delivery \(e.lastDelivery ?? "never")\n"
                if e.interruptedRuns > 0 {
                    out +=
                        """
                              \(e.interruptedRuns) interrupted upload\(e.interruptedRuns == 1 ? "" : "s"), \
                            \(e.unconfirmedBatches) batch\(e.unconfirmedBatches == 1 ? "" : "es") unconfirmed: 'vault \
                            upload' to it finishes \(e.interruptedRuns == 1 ? "it" : "them")\n
                            """
                }
            }
            Terminal.out(out)
        }
    }
}
