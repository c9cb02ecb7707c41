import ArgumentParser
import VaultCore

/// The documents a batch command works on: those named, those with a tag, or all.
struct SelectionOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Documents (default: all), by id prefix or name.", valueName: "id-or-name"))
    var documents: [String] = []

    @Option(help: "Only documents with this tag.")
    var tag: String?

    /// The selected records in stable order (oldest first). Naming documents and a tag selects
    /// the named documents that have the tag.
    /// - Throws: ``VaultError/Code/notFound`` when nothing is selected; resolution errors.
    func records(in vault: VaultCore.Vault, verb: String) throws -> [DocumentRecord] {
        let all = try vault.records().records
        var selected = all
        if !documents.isEmpty {
            var ids = Set<DocumentID>()
            for q in documents { ids.insert(try vault.resolve(q, in: all).id) }
            selected = all.filter { ids.contains($0.id) }
        }
        if let tag { selected = selected.filter { $0.metadata.tags.contains(tag) } }
        if selected.isEmpty {
            throw VaultError(.notFound, tag.map { "no documents have the tag '\($0)'" } ?? "there are no documents to \(verb)")
        }
        return selected
    }
}
