import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive

extension VaultCommand {
    /// `vault log`: print the vault's history.
    struct Log: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract:
                """
                Print the vault's sealed history: what each command added, removed or sent out, when, and from \
                which host.
                """,
            discussion: """
                Every record is authenticated in its place in the chain before it is printed; a record \
                that fails is shown as DAMAGED, and the command then exits 65 (run 'vault audit'). \
                --since takes a date (2026-11-01), a time (2026-11-01T09:30:00Z) or an age \
                (24h, 7d, 2w: that long ago). --doc shows each record that names the document \
                with that document's line only (the record's other documents are counted).

                Examples:
                  vault log
                  vault log --since 2026-11-01 --doc 79d6
                  vault log --since 24h
                  vault log --json
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Flag(help: "Print the history as one JSON object (schema: docs/schemas/log.schema.json).")
        var json = false

        @Option(
            help: ArgumentHelp(
                """
                Only records written at or after this date or time (ISO 8601, UTC unless an offset is given), or \
                this long ago (24h, 7d).
                """,
                valueName: "time"))
        var since: String?

        @Option(
            help: ArgumentHelp("Only records naming this document (an id prefix of 4+ hex digits).", valueName: "id"))
        var doc: String?

        func validate() throws {
            if let since, Self.parseTime(since) == nil {
                throw ValidationError(
                    """
                    --since needs a date (2026-11-01), an ISO 8601 time (2026-11-01T09:30:00Z) or an age (24h, \
                    7d), not '\(since)'.
                    """
                )
            }
            if let doc, doc.count < 4 || doc.count > 32 || Hex.decode(doc.count % 2 == 0 ? doc : doc + "0") == nil {
                throw ValidationError("--doc needs 4 to 32 hex digits of a document id, not '\(doc)'.")
            }
        }

        /// `log --json`.
        struct Output: Encodable {
            struct Record: Encodable {
                var position: Int
                var status: String
                var op: String?
                var time: String?
                var timeMillis: Int64?
                var host: String?
                var outcome: String?
                var documents: [HistoryRecord.Document]?
                var destinations: [String]?
                var detail: String?
                var anomalies: [HistoryRecord.Anomaly]?
                /// An `upload` to a destination that signs receipts: the receipt, as answered.
                var receipt: String?
                /// The sealed pairs the receipt names, when a receiver kept the batch sealed.
                var sealed: [String]?
            }
            var head: String
            var records: [Record]
            var findings: [AuditFinding]
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            if try options.target() != .local {
                try await storeLog(options)
                return
            }
            let vault = try options.unlock()
            let scan = try vault.history()
            guard scan.exists else {
                throw VaultError(
                    .notFound, "this vault has no history yet", hint: "the next change to the vault starts it")
            }
            // A time from an age of any length (99999999999999999999d) is at least year 1.
            let sinceMillis = since.flatMap { Self.parseTime($0) }.map { UTCTime($0).millis }
            let prefix = doc?.lowercased()
            let shown = scan.entries.filter { e in
                guard let r = e.record else { return sinceMillis == nil && prefix == nil }
                if let sinceMillis, r.timeMillis < sinceMillis { return false }
                if let prefix, !r.documents.contains(where: { $0.id.hex.hasPrefix(prefix) }) { return false }
                return true
            }
            let findings = scan.findings
            if json {
                Terminal.out(
                    JSONOutput.line(
                        Output(
                            head: scan.head.description,
                            records: shown.map { e in
                                guard let r = e.record else { return .init(position: e.position, status: "damaged") }
                                return .init(
                                    position: e.position, status: "ok", op: r.operation.rawValue,
                                    time: JSONOutput.iso(millis: r.timeMillis),
                                    timeMillis: r.timeMillis, host: r.host, outcome: r.outcome.rawValue,
                                    documents: r.documents,
                                    destinations: r.destinations,
                                    detail: OperatorChange.of(r)?.shownDetail ?? r.detail, anomalies: r.anomalies,
                                    receipt: r.receipt, sealed: r.sealed)
                            }, findings: findings)))
            } else {
                let width = FittedTable.stdoutWidth
                Terminal.out(shown.map { Self.text($0.position, $0.record, width: width, only: prefix) }.joined())
                if shown.isEmpty {
                    Terminal.err(
                        "vault: no record matches" + (prefix.map { " (--doc \($0))" } ?? "")
                            + (since.map { " (--since \($0))" } ?? ""))
                }
            }
            if !findings.isEmpty {
                for f in findings where !json { Terminal.warn(f.message) }
                throw VaultError(
                    .vaultDamaged, "the history has \(Plural.count(findings.count, "problem"))",
                    hint: "run 'vault audit' for the full report")
            }
        }

        /// One record and its documents. On a terminal (`width`), every line fits: the detail
        /// goes first, then a document line shows a 12-digit id without the SHA-256, names are
        /// shortened in the middle, and what is still too long is cut with `…`.
        /// - Parameter only: with `--doc`, the id prefix whose document lines are shown (a send
        ///   names every document it sent: one document's log would be hundreds of lines); the
        ///   record's line still counts them all.
        static func text(_ position: Int, _ record: HistoryRecord?, width: Int? = nil, only: String? = nil) -> String {
            let room = width.map { $0 - 1 } ?? Int.max
            func fit(_ s: String) -> String { width == nil ? s : Terminal.cut(s, room) }
            guard let r = record else {
                return fit(Self.column(position) + "  DAMAGED: this record fails authentication") + "\n"
            }
            // Narrow terminals: the position unpadded, the time without the year and seconds, the host last.
            let narrow = room < 60
            var line =
                narrow
                ? "\(position)  " + UTCTime(millis: r.timeMillis).minutes.dropFirst(5) + "  "
                    + r.operation.rawValue.padded(to: 7)
                : Self.column(position) + "  " + JSONOutput.iso(millis: r.timeMillis) + "  "
                    + r.operation.rawValue.padded(to: 11)
            line +=
                " " + String(r.outcome.rawValue.padded(to: 8).prefix(8))
                + (narrow ? "" : Terminal.printable(r.host))
            if !r.documents.isEmpty { line += (narrow ? "" : "  ") + Plural.count(r.documents.count, "document") }
            if narrow { line += "  " + Terminal.printable(r.host) }
            if let d = DestinationChange.of(r)?.summary ?? TagChange.of(r)?.summary ?? OperatorChange.of(r)?.summary
                ?? DownloadRecord.of(r)?.summary(documents: r.documents.count)
                ?? r.payload(StationChange.self)?.summary ?? r.detail
            {
                let detail = "  (\(Terminal.printable(d)))"
                let used = DisplayWidth.cells(line)
                if used + DisplayWidth.cells(detail) <= room {
                    line += detail
                } else if used + 8 < room {
                    line += Terminal.cut(detail, room - used - 1) + ")"
                }
            }
            var text = fit(line) + "\n"
            let full = room >= 9 + 32 + 2 + 17 + 2 + 10 + 2 + 16
            let indent = narrow ? "   " : "         "
            for d in r.documents where only.map({ d.id.hex.hasPrefix($0) }) ?? true {
                let head = full ? "         \(d.id)  \(d.sha256.prefix(16))…  " : indent + "\(d.id.hex.prefix(12))  "
                let size = Terminal.size(d.size)
                let name = Terminal.printable(d.name)
                let left = room - head.count - size.count - 2
                text +=
                    fit(
                        head + size + "  "
                            + (width == nil || left >= DisplayWidth.cells(name)
                                ? name : Terminal.middle(name, max(left, 4)))) + "\n"
            }
            for d in r.destinations {
                text +=
                    fit(indent + "-> " + Terminal.middle(Terminal.printable(d), max(room - indent.count - 3, 8))) + "\n"
            }
            for a in r.anomalies { text += fit(indent + "! \(a.code): \(Terminal.printable(a.message))") + "\n" }
            return text
        }

        /// `log` of a vault on a store: what its receivers recorded (docs/RECEIVE.md, "Several
        /// receivers, one store"), the entries of the store's receivers' log, read whole and
        /// checked (a missing, foreign or reordered entry is `vault-damaged`, exit 65). Its host
        /// column says `store`: an entry does not record which receiver wrote it.
        private func storeLog(_ options: GlobalOptions) async throws {
            guard let store = try await options.openStore() else { return }
            let log = SharedReceiverLog(vault: store.vault, client: store.client, location: store.location)
            let records = try await StoreHome(log: log).records().records
            let sinceMillis = since.flatMap { Self.parseTime($0) }.map { UTCTime($0).millis }
            let prefix = doc?.lowercased()
            let shown = records.enumerated().map { i, o -> (position: Int, record: HistoryRecord) in
                var r = HistoryRecord(o.operation, documents: o.documents, detail: o.detail)
                (r.timeMillis, r.host) = (o.timeMillis, "store")
                return (i + 1, r)
            }.filter { e in
                let r = e.record
                if let sinceMillis, r.timeMillis < sinceMillis { return false }
                if let prefix, !r.documents.contains(where: { $0.id.hex.hasPrefix(prefix) }) { return false }
                return true
            }
            if json {
                let head = log.head
                Terminal.out(
                    JSONOutput.line(
                        Output(
                            head: head,
                            records: shown.map { e in
                                let r = e.record
                                return .init(
                                    position: e.position, status: "ok", op: r.operation.rawValue,
                                    time: JSONOutput.iso(millis: r.timeMillis), timeMillis: r.timeMillis, host: r.host,
                                    outcome: r.outcome.rawValue, documents: r.documents, destinations: r.destinations,
                                    detail: OperatorChange.of(r)?.shownDetail ?? r.detail, anomalies: r.anomalies,
                                    receipt: r.receipt, sealed: r.sealed)
                            }, findings: [])))
                return
            }
            let width = FittedTable.stdoutWidth
            Terminal.out(shown.map { Self.text($0.position, $0.record, width: width, only: prefix) }.joined())
            if shown.isEmpty { Terminal.err("vault: no entry of \(log.logDescription) matches") }
        }

        /// A record's position right-aligned in five columns (as `%5d` writes it).
        static func column(_ position: Int) -> String { String(position).padded(to: 5, leading: true) }

        static func parseTime(_ text: String, now: Date = Date()) -> Date? {
            // An age, as --older-than takes: 24h, 7d, 2w.
            if let age = DeliveryFilter.duration(text) { return now.addingTimeInterval(-age) }
            return UTCTime.parseISO8601(text) ?? UTCTime.parseISO8601(text, fraction: true)
                ?? UTCTime.parseDay(text)
        }
    }
}
