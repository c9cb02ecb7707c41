import ArgumentParser
import VaultCore

extension VaultCommand {
    /// `vault verify`: authenticate everything.
    struct Verify: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Authenticate every chunk of every document (or the ones given) and check the index.",
            discussion: "Exits 0 when everything verified and 65 when anything is damaged; damaged documents are named.")

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Documents to verify (default: all).", valueName: "id-or-name"))
        var documents: [String] = []

        @Flag(help: "Print the report as one JSON object.")
        var json = false

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try options.unlock()
            var ids: [DocumentID]?
            if !documents.isEmpty {
                let records = try vault.records().records
                ids = try documents.map { try vault.resolve($0, in: records).id }
            }
            let report = try vault.verify(ids)
            Terminal.out(json ? Self.json(report) : Self.text(report))
            if !report.isClean {
                throw VaultError(.vaultDamaged, report.damaged.isEmpty ? "the index was damaged (it has been rebuilt)"
                                                                       : "\(report.damaged.count) of \(report.documents.count) documents are damaged",
                                 hint: report.damaged.isEmpty ? nil : "restore the damaged documents from a backup and remove them here")
            }
        }

        static func text(_ r: VerifyReport) -> String {
            var lines = r.documents.map { e -> String in
                let name = Terminal.printable(e.name ?? "?")
                if let error = e.error { return "DAMAGED  \(e.id.hex)  \(name): \(Terminal.printable(error.message))" }
                return "ok       \(e.id.hex)  \(name)"
            }
            lines.append("verified \(r.documents.count) documents: \(r.documents.count - r.damaged.count) ok, \(r.damaged.count) damaged; index \(r.index.rawValue)")
            return lines.joined(separator: "\n") + "\n"
        }

        static func json(_ r: VerifyReport) -> String {
            let docs = r.documents.map { e -> String in
                var s = "{\"id\":\"\(e.id.hex)\",\"name\":\(e.name.map(JSONString.quote) ?? "null"),\"status\":\"\(e.error == nil ? "ok" : "damaged")\""
                if let error = e.error {
                    s += ",\"error\":{\"code\":\"\(error.code.rawValue)\",\"message\":\(JSONString.quote(error.message))}"
                }
                return s + "}"
            }
            return "{\"documents\":[\(docs.joined(separator: ","))],\"index\":\"\(r.index.rawValue)\",\"ok\":\(r.documents.count - r.damaged.count),\"damaged\":\(r.damaged.count)}\n"
        }
    }
}
