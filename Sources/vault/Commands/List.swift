import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive

extension VaultCommand {
    /// `vault list`: show the documents.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the documents in the vault, oldest first.",
            usage: "vault list [--tag <tag> ...] [--undelivered | --to <dest>] [<options>]",
            discussion: """
                The table shows a 12-digit id prefix; any unique prefix of 4 or more digits names a document.

                Examples:
                  vault list
                  vault list --tag 2026
                  vault list --json
                  vault list --undelivered             (what some required destination lacks)
                  vault list --undelivered --to office
                  vault list --delivered-to https://backoffice.example/batches
                  vault list --station north --received-since 24h --json

                At a back office, --station, --received-since and --received-before list what its \
                receivers took (oldest first), and --json adds station, received, batch and stationID.
                """,
            aliases: ["ls"])

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Flag(help: "Print a JSON array of objects with id, name, contentType, size, sha256, added and tags.")
        var json = false

        @Option(
            name: .customLong("tag"),
            help: ArgumentHelp(
                "Only documents with this tag; repeat for documents with any of several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(
            help:
                """
                    Only documents a destination has not confirmed: the one --to names, else any required destination \
                    ('vault destination'), else every destination.
                    """
        )
        var undelivered = false

        @Option(help: ArgumentHelp("With --undelivered: the destination (a name or URL).", valueName: "destination"))
        var to: String?

        @OptionGroup(title: "At a back office") var received: ReceivedOptions

        @Option(
            name: .customLong("delivered-to"),
            help: ArgumentHelp("Only documents this destination (a name or URL) confirmed.", valueName: "destination"))
        var deliveredTo: String?

        func validate() throws {
            if to != nil && !undelivered { throw ValidationError("--to goes with --undelivered.") }
            if undelivered && deliveredTo != nil {
                throw ValidationError("--undelivered and --delivered-to contradict each other.")
            }
            if received.isGiven && (undelivered || deliveredTo != nil) {
                throw ValidationError("--station and --received-* list what an office took; leave out --undelivered.")
            }
        }

        /// The delivery filter the options ask for, if any.
        func deliveryFilter(_ vault: VaultCore.Vault) throws -> DeliveryFilter? {
            guard undelivered || deliveredTo != nil else { return nil }
            let list = vault.store.source == nil ? try DestinationList.load(vault) : DestinationList()
            if let deliveredTo {
                return try DeliveryFilter(
                    .delivered(
                        try DeliveryFilter.destinations([deliveredTo], required: false, list: list), olderThan: nil),
                    vault: vault)
            }
            return try DeliveryFilter(
                .undelivered(try DeliveryFilter.destinations(to.map { [$0] } ?? [], required: to == nil, list: list)),
                vault: vault)
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            if received.isGiven { return try await listReceived(options) }
            let vault = try await options.open()
            let output = BufferedOutput()
            let unreadable: [(DocumentID, VaultError)]
            // Rows are written as the index yields them: the first before the rest are read,
            // and memory does not grow with the vault.
            var sink: (DocumentRecord) -> Void
            let table = TableWriter(output: output)
            var first = true
            if json {
                output.append("[")
                sink = { r in
                    if !first { output.append(",") }
                    first = false
                    Self.writeJSON(r, to: output)
                }
            } else {
                sink = { r in table.add(r) }
            }
            if let filter = try deliveryFilter(vault) {
                let all = sink
                sink = { r in if filter.keeps(r.id) { all(r) } }
            }
            if !tags.isEmpty {
                for r in try vault.select(DocumentSelection(tags: tags)) { sink(r) }
                unreadable = try vault.unreadableObjects()
            } else {
                unreadable = try vault.forEachRecord(sink)
            }
            if json { output.append("]\n") } else { table.finish() }
            output.flush()
            if !json && table.rows == 0 && unreadable.isEmpty {
                // Said on stderr, so a script reading the table still gets nothing.
                Terminal.err(
                    tags.isEmpty && deliveredTo == nil && !undelivered
                        ? "vault: the vault holds no documents (add some with 'vault add FILE')"
                        : "vault: no documents match")
            }
            if !unreadable.isEmpty {
                for (id, e) in unreadable { Terminal.warn("document \(id) cannot be read: \(e.message)") }
                throw VaultError(
                    .vaultDamaged,
                    """
                        \(Plural.count(unreadable.count, "document")) could not be read and \
                        \(unreadable.count == 1 ? "is" : "are") not listed
                        """,
                    hint: "run 'vault verify' for details")
            }
        }

        /// The documents an office took that `--station` and `--received-*` (and `--tag`) select,
        /// oldest first; those removed since are left out.
        private func listReceived(_ options: GlobalOptions) async throws {
            let (vault, book) = try await options.openOffice()
            let among = tags.isEmpty ? nil : Set(try vault.select(DocumentSelection(tags: tags)).map(\.id))
            let found = book.received(matching: try received.filter(in: book, among: among))
            let output = BufferedOutput()
            let table = TableWriter(output: output)
            if json { output.append("[") }
            var rows = 0
            for r in OfficeBook.oldestFirst(found) {
                guard let record = try vault.record(r.document.id) else { continue }
                if json {
                    if rows > 0 { output.append(",") }
                    let b = book.batches[r.batch]
                    let taken = Received(station: b.station, millis: b.timeMillis, batch: b.key, stationID: r.stationID)
                    Self.writeJSON(record, to: output, received: taken)
                } else {
                    table.add(record)
                }
                rows += 1
            }
            if json { output.append("]\n") } else { table.finish() }
            output.flush()
            if rows == 0 && !json { Terminal.err("vault: no documents match") }
        }

        /// What `list --json` adds for a document an office took.
        struct Received {
            var station: String
            var millis: Int64
            var batch: String
            var stationID: DocumentID?
        }

        /// One document in `list --json`, keys sorted as ``JSONOutput`` writes them, straight
        /// into the output buffer (no string per row: `list --json` writes 100,000 rows a second).
        static func writeJSON(_ r: DocumentRecord, to out: BufferedOutput, received: Received? = nil) {
            out.append("{\"added\":\"")
            out.append(UTCTime(millis: r.metadata.addedAtMillis).iso8601)
            if let received {
                out.append("\",\"batch\":")
                out.append(bytes: JSONOutput.quoted(received.batch))
                out.append(",\"contentType\":")
            } else {
                out.append("\",\"contentType\":")
            }
            out.append(bytes: JSONOutput.quoted(r.metadata.contentType))
            out.append(",\"id\":\"")
            out.appendHex(r.id.bytes)
            out.append("\",\"name\":")
            out.append(bytes: JSONOutput.quoted(r.metadata.name))
            if let received {
                out.append(",\"received\":\"")
                out.append(UTCTime(millis: received.millis).iso8601)
                out.append("\"")
            }
            out.append(",\"sha256\":\"")
            out.appendHex(r.metadata.sha256)
            out.append("\",\"size\":")
            out.append(String(r.metadata.size))
            if let received {
                out.append(",\"station\":")
                out.append(bytes: JSONOutput.quoted(received.station))
                if let id = received.stationID {
                    out.append(",\"stationID\":\"")
                    out.appendHex(id.bytes)
                    out.append("\"")
                }
            }
            out.append(",\"tags\":[")
            for (i, tag) in r.metadata.tags.enumerated() {
                if i > 0 { out.append(",") }
                out.append(bytes: JSONOutput.quoted(tag))
            }
            out.append("]}")
        }

        /// The table, written as rows come (see ``FittedTable``): on a terminal the name is
        /// shortened in the middle, then TYPE and ADDED are left out, so no row wraps.
        final class TableWriter {
            let table: FittedTable
            private(set) var rows = 0

            init(output: BufferedOutput) {
                table = FittedTable(
                    [
                        .init(title: "ID"), .init(title: "NAME", flexible: true), .init(title: "TYPE", dropRank: 2),
                        .init(title: "SIZE", alignRight: true), .init(title: "ADDED (UTC)", dropRank: 1)
                    ], output: output)
            }

            func add(_ r: DocumentRecord) {
                rows += 1
                table.add([
                    String(r.id.hex.prefix(12)), Terminal.printable(r.metadata.name), r.metadata.contentType,
                    Terminal.size(r.metadata.size), UTCTime(millis: r.metadata.addedAtMillis).minutes
                ])
            }

            func finish() { table.finish() }
        }
    }
}

/// Standard output through a 64 KiB buffer: one write per buffer, not per row.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    init() { buffer.reserveCapacity(1 << 16) }
    func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }
    func append(bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 { flush() }
    }
    private static let hexDigits = Array("0123456789abcdef".utf8)
    /// Lower-case hex digits of `bytes`.
    func appendHex(_ bytes: [UInt8]) {
        for b in bytes {
            buffer.append(Self.hexDigits[Int(b >> 4)])
            buffer.append(Self.hexDigits[Int(b & 15)])
        }
    }
    func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { Terminal.outBytes($0) }
        buffer.removeAll(keepingCapacity: true)
    }
}
