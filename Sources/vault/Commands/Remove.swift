import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault remove`: delete documents.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete documents from the vault and print their ids.",
            discussion: "Every argument is resolved first; if any is unknown or ambiguous, nothing is deleted.")

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Unique id prefixes (4+ digits) or exact names.", valueName: "id-or-name"))
        var documents: [String]

        func validate() throws {
            if documents.isEmpty { throw ValidationError("Give at least one document to remove.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try options.unlock()
            let records = try vault.records().records
            var ids: [DocumentID] = []
            for query in documents {
                let id = try vault.resolve(query, in: records).id
                if !ids.contains(id) { ids.append(id) }
            }
            try vault.remove(ids)
            for id in ids { Terminal.out(id.hex + "\n") }
        }
    }
}
