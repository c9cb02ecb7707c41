import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault tag`: change documents' tags after they were added.
    struct Tag: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "tag",
            abstract: "Add or remove tags of documents already in the vault.",
            usage: "vault tag <id-or-name> ... [--add <tag> ...] [--remove <tag> ...] [-q]",
            discussion: """
                The change is a record of the sealed history (the envelope keeps the tags the \\
                document was added with), so it is audited like any other; list, export and \\
                upload --tag see the tags as they are now. Prints each document with its tags.

                Examples:
                  vault tag 79d6 --add 2026 --remove inbox
                  vault tag scan.pdf receipt.jpg --add tax
                  vault list --tag tax
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp("Documents, by unique id prefix (4+ digits) or exact name.", valueName: "id-or-name"))
        var documents: [String] = []

        @Option(name: .customLong("add"), help: ArgumentHelp("A tag to add; repeat for several.", valueName: "tag"))
        var added: [String] = []

        @Option(
            name: .customLong("remove"), help: ArgumentHelp("A tag to remove; repeat for several.", valueName: "tag"))
        var removed: [String] = []

        @OptionGroup var result: OutputOptions

        /// `tag --json`: each document with its tags as they are now.
        struct Result: Encodable {
            struct Document: Encodable { var id, name: String; var tags: [String] }
            var documents: [Document]
        }

        func validate() throws {
            if documents.isEmpty { throw ValidationError("Give at least one document to tag.") }
            if added.isEmpty && removed.isEmpty { throw ValidationError("Give --add TAG or --remove TAG.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let change = try TagChange(add: added, remove: removed)  // checked before the password is asked
            do {
                let vault = try options.unlock()
                let ids = try vault.select(DocumentQuery.selection(documents, in: vault)).map(\.id)
                let now = try vault.retag(ids, change)
                if result.json {
                    Terminal.out(
                        JSONOutput.line(
                            Result(
                                documents: now.map {
                                    .init(id: $0.id.hex, name: $0.metadata.name, tags: $0.metadata.tags)
                                })))
                } else if !result.quiet {
                    Terminal.out(
                        now.map { r in
                            "\(r.id.hex.prefix(12))  \(Terminal.printable(r.metadata.name))  "
                                + (r.metadata.tags.isEmpty
                                    ? "(no tags)" : r.metadata.tags.map(Terminal.printable).joined(separator: ", "))
                                + "\n"
                        }.joined())
                }
            } catch {
                throw Hints.readOnlyVault(error)
            }
        }
    }
}
