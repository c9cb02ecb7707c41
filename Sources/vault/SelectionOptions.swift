import ArgumentParser
import VaultCore

/// The documents a batch command works on: those named, those with a tag, or all.
struct SelectionOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Documents (default: all), by id prefix or name.", valueName: "id-or-name"))
    var documents: [String] = []

    @Option(help: "Only documents with this tag.")
    var tag: String?

    /// What the arguments select.
    var selection: DocumentSelection { DocumentSelection(queries: documents, tag: tag) }

    /// The selected records in stable order (oldest first); at least one.
    /// - Throws: ``VaultError/Code/notFound`` when nothing is selected; resolution errors.
    func records(in vault: VaultCore.Vault, verb: String) throws -> [DocumentRecord] {
        let selected = try selection.apply(to: vault.records().records)
        if selected.isEmpty { throw VaultError(.notFound, "there are no documents to \(verb)") }
        return selected
    }
}
