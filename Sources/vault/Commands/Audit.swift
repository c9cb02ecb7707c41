import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive
import VaultRemote

extension VaultCommand {
    /// `vault audit`: check the vault against its sealed history.
    struct Audit: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "audit",
            abstract: "Check the vault against its sealed history; exit 0 when clean, 65 with findings.",
            usage: "vault audit [--deep] [--head] [--expect-head <head>] [<options>]",
            discussion: """
                Checks that the history's chain is whole; that every document it says is present is \
                there and authenticates (its header; every chunk and the SHA-256 with --deep); that no \
                object is there which the history says was removed (resurrected) or never added; and \
                that the index agrees. Each finding has a code (docs/CLI.md lists them).

                --head prints the history's head (record count and last tag) on one line: keep it \
                elsewhere (a ticket, another machine), and --expect-head HEAD later also fails when \
                the vault was rolled back to an older copy.

                A deleted, cut or replaced history stays a finding on every audit: nothing vault \
                does later makes it go away. When you know why (a restore from a backup, say), \
                --accept-loss records your decision as a sealed 'accept' record naming the \
                documents present; audits then report nothing from before it.

                Examples:
                  vault audit
                  vault audit --deep --json
                  vault audit --head > head.txt
                  vault audit --expect-head "$(cat head.txt)"
                  vault audit --accept-loss
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Flag(help: "Read and authenticate every chunk of every document, and check each SHA-256.")
        var deep = false

        @Flag(help: "Print the report as one JSON object (schema: docs/schemas/audit.schema.json).")
        var json = false

        @Flag(help: "Only print the history's head: <records>-<tag>.")
        var head = false

        @Option(
            name: .customLong("expect-head"),
            help: ArgumentHelp(
                "A head printed earlier by --head: fail when the history no longer holds it.", valueName: "head"))
        var expectHead: String?

        @Flag(
            name: .customLong("accept-loss"),
            help:
                """
                Record that you accept what the audit finds wrong with the history (a sealed 'accept' record); \
                later audits report nothing from before it.
                """
        )
        var acceptLoss = false

        @Option(
            name: .customLong("require-delivered"),
            help: ArgumentHelp(
                """
                A destination (name or URL) every removed document must have been delivered to first: each one \
                removed without is a 'removed-undelivered' finding. Repeat for several.
                """,
                valueName: "destination"))
        var requireDelivered: [String] = []

        @Option(
            name: .customLong("require-receipts"),
            help: ArgumentHelp(
                """
                A destination (name) that signs receipts: every removed document must have its signed \
                receipt in the history first; each one without is a 'removed-unsigned' finding.
                """,
                valueName: "destination"))
        var requireReceipts: [String] = []

        func validate() throws {
            let requires = !requireDelivered.isEmpty || !requireReceipts.isEmpty
            if acceptLoss && (deep || head || expectHead != nil || requires) {
                throw ValidationError("--accept-loss takes no other audit option.")
            }
            if let expectHead, HistoryHead(expectHead) == nil {
                throw ValidationError(
                    "--expect-head needs a head as 'vault audit --head' prints it (<records>-<32 hex digits>).")
            }
            if head && (deep || expectHead != nil) {
                throw ValidationError("--head only prints the head; run the audit without it.")
            }
        }

        /// `audit --json`.
        struct Output: Encodable {
            var clean: Bool
            var head: String
            var records: Int
            var documents: Int
            var objects: Int
            var deep: Bool
            /// Downloads by operators of a receiver's browser view the history records.
            var downloads: Int
            var findings: [AuditFinding]
            /// Each destination and the age recipients its deliveries are sealed to (none: plaintext),
            /// as the history says now: a change of recipients shows in every audit.
            var destinations: [AuditedDestination]
        }

        struct AuditedDestination: Encodable {
            var name: String
            var url: String
            var recipients: [String]
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            if try options.target() != .local {
                try await auditStore(options)
                return
            }
            let vault = try options.unlock()
            if head {
                let scan = try vault.history()
                guard scan.exists else {
                    throw VaultError(
                        .notFound, "this vault has no history yet", hint: "the next change to the vault starts it")
                }
                if json {
                    Terminal.out(JSONOutput.line(["head": scan.head.description]))
                } else {
                    Terminal.out(scan.head.description + "\n")
                }
                return
            }
            if acceptLoss {
                let settled = try vault.acceptHistoryLoss()
                let codes = Array(Set(settled.map(\.code.rawValue))).sorted()
                let listed = codes.isEmpty ? "" : " (" + codes.joined(separator: ", ") + ")"
                Terminal.out(
                    "accepted \(settled.count) finding\(settled.count == 1 ? "" : "s")\(listed); "
                        + "head \(try vault.history().head)\n")
                return
            }
            let required = try DeliveryFilter.destinations(
                requireDelivered, required: false, list: try DestinationList.load(vault))
            let list = try DestinationList.load(vault)
            let receipts = try requireReceipts.map { name -> ReceiptRequirement in
                guard let entry = list.destinations.first(where: { $0.name == name }) else {
                    throw VaultError(.notFound, "no destination named '\(Terminal.printable(name))'")
                }
                guard let hex = entry.receiptKey, let key = Hex.decode(hex) else {
                    throw VaultError(
                        .usage, "destination '\(name)' does not sign receipts (add it with --receipt-key)")
                }
                return ReceiptRequirement(identity: entry.identity, publicKey: key)
            }
            let report = try vault.audit(
                deep: deep, expectedHead: expectHead.flatMap(HistoryHead.init), requireDelivered: required,
                requireReceipts: receipts)
            show(report, destinations: list.destinations, captured: vault.capturesOnly)
            if !report.findings.isEmpty {
                throw VaultError(
                    .vaultDamaged, "the audit found \(Plural.count(report.findings.count, "problem"))",
                    hint: "\(DocsLocation.path("CLI.md")) says what each code means")
            }
        }

        /// The report: a JSON object, or each finding on a line and a summary line.
        /// - Parameter captured: a capture-only station's (its destinations get its sealed files).
        private func show(_ report: AuditReport, destinations: [DestinationEntry], captured: Bool) {
            if json {
                Terminal.out(
                    JSONOutput.line(
                        Output(
                            clean: report.findings.isEmpty, head: report.head.description, records: report.records,
                            documents: report.documents, objects: report.objects, deep: deep,
                            downloads: report.downloads, findings: report.findings,
                            destinations: destinations.map {
                                AuditedDestination(name: $0.name, url: $0.url, recipients: $0.recipients ?? [])
                            })))
            } else {
                var out = ""
                for f in report.findings { out += "\(f.code): \(Terminal.printable(f.message))\n" }
                out +=
                    """
                    audited \(Plural.count(report.records, "record")), \
                    \(Plural.count(report.documents, "document")), \
                    \(Plural.count(report.objects, "object"))\(deep ? " (every chunk)" : " (headers)"): 
                    """
                if report.downloads > 0 {
                    out = String(out.dropLast(2)) + ", \(Plural.count(report.downloads, "download")) by operators: "
                }
                out +=
                    report.findings.isEmpty
                    ? "clean" : "\(report.findings.count) finding\(report.findings.count == 1 ? "" : "s")"
                out += "; head \(report.head)\n"
                for d in destinations {
                    let sealed = d.recipients ?? []
                    let how =
                        captured
                        ? "the sealed files as captured"
                        : sealed.isEmpty
                        ? "plaintext payloads"
                        : "sealed to \(Plural.count(sealed.count, "age recipient")): " + sealed.joined(separator: " ")
                    out += "destination \(d.name): \(how)\n"
                }
                Terminal.out(out)
            }
        }
    }
}

extension VaultCommand.Audit {
    /// `audit` of a vault on a store: what its receivers took (``OfficeAudit``): the receivers'
    /// log whole and chained, each batch's receipt signed by the receivers' key and naming what
    /// the entry took, each document on the store and authentic (every chunk with `--deep`).
    func auditStore(_ options: GlobalOptions) async throws {
        if head || expectHead != nil || acceptLoss || !requireDelivered.isEmpty || !requireReceipts.isEmpty {
            throw VaultError(
                .usage, "a vault on a store is audited for what its receivers took: --deep and --json only",
                hint: "clone it and audit the clone for the rest")
        }
        guard let store = try await options.openStore() else { return }
        let log = SharedReceiverLog(vault: store.vault, client: store.client, location: store.location)
        let report = try await OfficeAudit(home: StoreHome(log: log)).run(deep: deep)
        let summary = """
            audited \(Plural.count(report.entries, "entry")) of \(log.logDescription), \
            \(Plural.count(report.batches, "batch")), \
            \(Plural.count(report.documents, "document"))\(deep ? " (every chunk)" : " (headers)"), \
            \(Plural.count(report.downloads, "download")) by operators: \
            \(report.findings.isEmpty ? "clean" : Plural.count(report.findings.count, "finding"))
            """
        if json {
            struct StoreOutput: Encodable {
                var clean: Bool
                var log: String
                var entries: Int
                var batches: Int
                var documents: Int
                var deep: Bool
                var downloads: Int
                var findings: [AuditFinding]
            }
            Terminal.out(
                JSONOutput.line(
                    StoreOutput(
                        clean: report.findings.isEmpty, log: log.logDescription, entries: report.entries,
                        batches: report.batches, documents: report.documents, deep: deep, downloads: report.downloads,
                        findings: report.findings)))
        } else {
            var out = ""
            for f in report.findings { out += "\(f.code): \(Terminal.printable(f.message))\n" }
            Terminal.out(out + summary + "\n")
        }
        if !report.findings.isEmpty {
            throw VaultError(
                .vaultDamaged, "the audit found \(Plural.count(report.findings.count, "problem"))",
                hint: "\(DocsLocation.path("CLI.md")) says what each code means")
        }
    }
}
