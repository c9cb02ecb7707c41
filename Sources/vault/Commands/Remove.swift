import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault remove`: delete documents.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete documents from the vault and print their ids.",
            discussion: """
                Every argument is resolved first; if any is unknown or ambiguous, nothing is deleted.

                Examples:
                  vault remove 79d6
                  vault remove receipt.jpg scan.pdf
                  vault remove 79d6 --json
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Unique id prefixes (4+ digits) or exact names.", valueName: "id-or-name"))
        var documents: [String]

        @OptionGroup var result: ResultOptions

        /// `remove --json`.
        struct Result: Encodable { var removed: [String] }

        func validate() throws {
            if documents.isEmpty { throw ValidationError("Give at least one document to remove.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try options.unlock()
            let ids = try vault.select(DocumentSelection(queries: documents)).map(\.id)
            try vault.remove(ids)
            if result.json {
                Terminal.out(JSONOutput.line(Result(removed: ids.map(\.hex))))
            } else {
                for id in ids { Terminal.out(id.hex + "\n") }
            }
        }
    }
}
