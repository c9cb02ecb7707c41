import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault verify`: authenticate everything.
    struct Verify: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Authenticate every chunk of every document (or the ones given) and check the index.",
            discussion: """
                Exits 0 when everything verified and 65 when anything is damaged; damaged documents are named.

                Examples:
                  vault verify
                  vault verify 79d6 scan.pdf
                  vault verify --json
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Documents to verify (default: all).", valueName: "id-or-name"))
        var documents: [String] = []

        @OptionGroup var output: OutputOptions
        var json: Bool { output.json }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try await options.open()
            let ids =
                documents.isEmpty ? nil : try vault.select(DocumentQuery.selection(documents, in: vault)).map(\.id)
            let report = try vault.verify(ids)
            if !output.quiet { Terminal.out(json ? Self.json(report) : Self.text(report)) }
            if !report.isClean {
                throw VaultError(
                    .vaultDamaged,
                    report.damaged.isEmpty
                        ? "the index was damaged (it has been rebuilt)"
                        : """
                            \(report.damaged.count) of \(Plural.count(report.documents.count, "document")) \
                            \(report.damaged.count == 1 ? "is" : "are") damaged
                            """,
                    hint: report.damaged.isEmpty
                        ? nil : "restore the damaged documents from a backup and remove them here")
            }
        }

        static func text(_ r: VerifyReport) -> String {
            var lines = r.documents.map { e -> String in
                let name = Terminal.printable(e.name ?? "?")
                if let error = e.error { return "DAMAGED  \(e.id.hex)  \(name): \(Terminal.printable(error.message))" }
                return "ok       \(e.id.hex)  \(name)"
            }
            lines.append(
                """
                    verified \(r.documents.count) document\(r.documents.count == 1 ? "" : "s"): \
                    \(r.documents.count - r.damaged.count) ok, \(r.damaged.count) damaged; index \(r.index.rawValue)
                    """
            )
            return lines.joined(separator: "\n") + "\n"
        }

        /// `verify --json`.
        struct Report: Encodable {
            struct Document: Encodable {
                var id: String
                var name: String?
                var status: String
                var error: Failure?
            }
            struct Failure: Encodable { var code, message: String }
            var documents: [Document]
            var index: String
            var ok, damaged: Int
        }

        static func json(_ r: VerifyReport) -> String {
            JSONOutput.line(
                Report(
                    documents: r.documents.map { e in
                        Report.Document(
                            id: e.id.hex, name: e.name, status: e.error == nil ? "ok" : "damaged",
                            error: e.error.map { Report.Failure(code: $0.code.rawValue, message: $0.message) })
                    },
                    index: r.index.rawValue, ok: r.documents.count - r.damaged.count, damaged: r.damaged.count))
        }
    }
}
