import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
    /// `vault list`: show the documents.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "List the documents in the vault, oldest first.",
            discussion: """
                The table shows a 12-digit id prefix; any unique prefix of 4 or more digits names a document.

                Examples:
                  vault list
                  vault list --tag 2026
                  vault list --json
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Flag(help: "Print a JSON array of objects with id, name, contentType, size, sha256, added and tags.")
        var json = false

        @Option(help: "Only documents with this tag.")
        var tag: String?

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let vault = try await options.open()
            let (all, unreadable) = try vault.records()
            let records = try DocumentSelection(tag: tag).apply(to: all)
            Terminal.out(json ? Self.json(records) : Self.table(records))
            if !unreadable.isEmpty {
                for (id, e) in unreadable { Terminal.warn("document \(id) cannot be read: \(e.message)") }
                throw VaultError(.vaultDamaged, "\(unreadable.count) document(s) could not be read and are not listed",
                                 hint: "run 'vault verify' for details")
            }
        }

        /// One document in `list --json`.
        struct Listed: Encodable {
            var id, name, contentType: String
            var size: UInt64
            var sha256, added: String
            var tags: [String]
        }

        static func json(_ records: [DocumentRecord]) -> String {
            JSONOutput.line(records.map { r in
                Listed(id: r.id.hex, name: r.metadata.name, contentType: r.metadata.contentType, size: r.metadata.size,
                       sha256: Hex.encode(r.metadata.sha256), added: JSONOutput.iso(millis: r.metadata.addedAtMillis), tags: r.metadata.tags)
            })
        }

        static func table(_ records: [DocumentRecord]) -> String {
            if records.isEmpty { return "" }
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "UTC")
            f.dateFormat = "yyyy-MM-dd HH:mm"
            let rows = records.map { r in
                [String(r.id.hex.prefix(12)), Terminal.printable(r.metadata.name), r.metadata.contentType,
                 Terminal.size(r.metadata.size), f.string(from: r.metadata.addedAt)]
            }
            let header = ["ID", "NAME", "TYPE", "SIZE", "ADDED (UTC)"]
            var widths = header.map(\.count)
            for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.count) } }
            func line(_ cells: [String]) -> String {
                cells.enumerated().map { i, c in
                    i == 3 ? String(repeating: " ", count: widths[i] - c.count) + c
                           : i == cells.count - 1 ? c : c + String(repeating: " ", count: widths[i] - c.count)
                }.joined(separator: "  ")
            }
            return ([line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
        }
    }
}
