import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension PayloadShape: ExpressibleByArgument {}

extension VaultCommand {
    /// `vault export`: write batch payloads.
    struct Export: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write documents as {\"Files\":[...]} batch payloads to a folder or standard output.",
            discussion: """
                Each payload holds at most --batch-size documents and --max-bytes bytes, with every \
                document decrypted, authenticated and base64-encoded as it streams. --out DIR writes \
                batch-0001.json, ... and manifest.json; --out - streams a single batch to stdout. \
                A damaged document stops the export (no incomplete file is left), or with --skip-bad \
                is cut out of its payload and the export goes on (exit code 2). An empty vault \
                has nothing to export: exit 0, as for upload. See docs/EXPORT.md.

                Examples:
                  vault export --out outbox/
                  vault export --tag 2026 --max-bytes 32M --out outbox/ --progress bar
                  vault export 79d6 scan.pdf --out - > payload.json
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand
        @OptionGroup var progressOptions: ProgressOptions

        @OptionGroup var selection: SelectionOptions

        @Option(
            help: ArgumentHelp("A folder for the batch files, or - for standard output.", valueName: "dir|-"),
            completion: .directory)
        var out: String

        @OptionGroup var batching: BatchOptions

        @OptionGroup var sealing: SealingOptions

        @Option(
            name: .customLong("identity"),
            help: ArgumentHelp(
                "At an office: an age identity file that opens the documents that came captured; repeatable.",
                valueName: "file"), completion: .file())
        var identityFiles: [String] = []

        @Flag(help: "Cut documents that fail authentication out of their payload and go on (exit code 2).")
        var skipBad = false

        @Flag(
            help:
                """
                Replace the batch files and manifest of an earlier export in the folder (and remove those the new \
                run does not write).
                """
        )
        var force = false

        @Flag(help: "List the batches and documents that would be written, with sizes; write nothing.")
        var dryRun = false

        @OptionGroup var result: ResultOptions

        func validate() throws {
            if out.isEmpty { throw ValidationError("--out needs a folder or -.") }
            if out == "-" && result.json {
                throw ValidationError("--json needs --out DIR: with --out - standard output carries the payload.")
            }
        }

        /// `export --dry-run --json`.
        struct DryRunResult: Encodable {
            struct Document: Encodable { var id, name: String; var size: UInt64 }
            struct Batch: Encodable { var file: String; var payloadBytes: UInt64; var documents: [Document] }
            var dryRun = true
            var out: String
            var batches: [Batch]
        }

        /// `export --json`.
        struct Result: Encodable {
            var runId: String
            var out: String
            var documents: Int
            var payloadBytes: UInt64
            var seconds: Double
            var batches: [ManifestBatch]
            var skipped: [ManifestSkip]
        }

        func run() async throws { try await run(parent: root.global) }

        /// The options of the run: limits, shape, recipients.
        func exportOptions() throws -> ExportOptions {
            var o = ExportOptions()
            o.limits = batching.limits
            o.shape = batching.shape
            o.skipBad = skipBad
            o.force = force
            o.recipients = try sealing.parsed(shape: batching.shape)
            if !identityFiles.isEmpty {
                guard o.recipients.isEmpty else {
                    throw VaultError(
                        .usage, "--identity hands on what came captured as plaintext; it is not sealed again",
                        hint: "leave out --recipient (the captured documents are sealed already)")
                }
                o.identities = try AgeIdentityFiles.read(identityFiles)
            }
            return o
        }

        /// `--out DIR` checked as the export will find it (``VaultCore/Exporter/checkOutput(_:force:)``),
        /// with the CLI's words for what to do.
        func checkFolder() throws {
            do {
                try VaultCore.Exporter.checkOutput(out, force: force)
            } catch var e as VaultError {
                if e.code == .alreadyExists { e.hint = "use --force to replace them, or another --out folder" }
                if e.code == .usage {
                    e = VaultError(.usage, "--out " + e.message, hint: "give a folder, or - for standard output")
                }
                throw e
            }
        }

        /// How the history notes a sealed delivery: the recipients, so `log` and `audit` show them.
        static func sealedDetail(_ recipients: [AgeRecipient]) -> String {
            ", sealed to "
                + recipients.map { r in
                    let s = r.description
                    return s.count > 24 ? String(s.prefix(12)) + "…" + String(s.suffix(8)) : s
                }.joined(separator: " ")
        }

        /// Why a selection came to nothing: an empty vault, or `--exclude` leaving out the rest.
        static func whyNothing(_ vault: VaultCore.Vault) throws -> String {
            try vault.documentCount() == 0 ? "the vault is empty" : "--exclude leaves out every selected document"
        }

        /// `--dry-run`: the batches as planned (their documents, names and sizes), written nowhere;
        /// the folder is checked as the export would check it.
        func preview(_ options: GlobalOptions) async throws {
            if out != "-" { try checkFolder() }
            let vault = try await options.open()
            let records = try vault.select(selection.selection(in: vault))
            if records.isEmpty {
                if result.json { Terminal.out(JSONOutput.line(DryRunResult(out: out, batches: []))); return }
                if progressOptions.printsSummary {
                    Terminal.err("vault: dry run: nothing to export: \(try Self.whyNothing(vault))")
                }
                return
            }
            let batches = try BatchPlanner.plan(
                records, limits: batching.limits, format: try exportOptions().payloadFormat())
            if result.json {
                Terminal.out(
                    JSONOutput.line(
                        DryRunResult(
                            out: out,
                            batches: batches.map { b in
                                .init(
                                    file: b.fileName, payloadBytes: b.length,
                                    documents: b.records.map {
                                        .init(id: $0.id.hex, name: $0.metadata.name, size: $0.metadata.size)
                                    })
                            })))
                return
            }
            var text = ""
            for b in batches {
                text += "would write  \(out == "-" ? "standard output" : b.fileName)  \(Terminal.size(b.length))\n"
                for r in b.records {
                    text +=
                        """
                          \(r.id.hex.prefix(12))  \(Terminal.size(r.metadata.size))  \
                        \(Terminal.printable(r.metadata.name))\n
                        """
                }
            }
            Terminal.out(text)
            if progressOptions.printsSummary && !result.json {
                let bytes = batches.reduce(UInt64(0)) { $0 + $1.length }
                Terminal.err(
                    """
                    vault: dry run: would export \(Plural.count(records.count, "document")) in \
                    \(Plural.count(batches.count, "batch")) 
                    """
                        + """
                        (\(Terminal.size(bytes)) of payload) to \(out == "-" ? "standard output" : out); nothing \
                        was written
                        """
                )
            }
        }

        func execute(_ options: GlobalOptions) async throws {
            let toStdout = out == "-"
            if dryRun { return try await preview(options) }
            if toStdout && Terminal.isTTY(1) {
                throw VaultError(
                    .usage, "refusing to write the payload to a terminal",
                    hint: "redirect standard output, or use --out DIR")
            }
            if !toStdout {
                // The folder is checked before the password is asked for.
                try checkFolder()
            }
            let vault = try await options.open()
            // Before a byte goes out (to standard output, too), and even with nothing to export.
            if vault.capturesOnly { throw CapturedDocument.refusal("it cannot export what it captured") }
            try vault.refuseUnrecordedSend()
            let exportOptions = try exportOptions()
            let renderer = ProgressRenderer(mode: progressOptions.resolved)
            // Planned while the index is read, one row at a time: the plan keeps ids, not records.
            let exporter = try VaultCore.Exporter(
                vault: vault, selection: selection.selection(in: vault), options: exportOptions,
                onEvent: renderer.handle)
            if exporter.documents == 0 { return try nothingToExport(vault) }
            let started = Date()
            let summary: ExportSummary
            do {
                summary =
                    toStdout
                    ? try exporter.write(
                        to: {
                            let out = OpenFile.standard(1, name: "standard output"); out.growPipeBuffer(); return out
                        }())
                    : try exporter.write(toDirectory: out)
            } catch var e as VaultError {
                renderer.clear()
                switch e.code {
                case .alreadyExists: e.hint = "use --force to replace them, or another --out folder"
                case .singleBatchNeeded:
                    e.hint = "use --out DIR, raise --batch-size/--max-bytes, or select fewer documents"
                default: break
                }
                throw e
            } catch {
                renderer.clear()
                throw error
            }
            renderer.clear()
            let destinations =
                toStdout
                ? ["stdout"]
                : summary.batches.compactMap(\.file).map {
                    HistoryRecord.destination(URL(fileURLWithPath: out).appendingPathComponent($0).standardizedFileURL)
                }
            vault.recordSent(
                .export, sentIDs: summary.batches.flatMap(\.documents), destinations: destinations,
                skipped: summary.skipped.count,
                detail: "run \(summary.runID)"
                    + (exportOptions.recipients.isEmpty ? "" : Self.sealedDetail(exportOptions.recipients)))
            try report(summary, seconds: Date().timeIntervalSince(started))
        }

        /// Nothing to export is not a failure (a daily export on an empty day), as for upload;
        /// a name, id or tag that matches nothing still is (exit 3).
        private func nothingToExport(_ vault: Vault) throws {
            let toStdout = out == "-"
            if result.json {
                Terminal.out(
                    JSONOutput.line(
                        Result(
                            runId: "", out: toStdout ? "standard output" : out, documents: 0, payloadBytes: 0,
                            seconds: 0, batches: [], skipped: [])))
            } else if progressOptions.printsSummary && !result.json {
                Terminal.err(
                    """
                    vault: nothing to export: \(try Self.whyNothing(vault)) (nothing was \
                    written\(toStdout ? "" : " to \(out)"))
                    """
                )
            }
        }

        /// The summary (a JSON line, or a line on standard error) and the exit status: partial
        /// when damaged documents were left out.
        private func report(_ summary: ExportSummary, seconds: Double) throws {
            let toStdout = out == "-"
            let where_ = toStdout ? "standard output" : out
            if result.json {
                Terminal.out(
                    JSONOutput.line(
                        Result(
                            runId: summary.runID, out: where_, documents: summary.documents,
                            payloadBytes: summary.payloadBytes,
                            seconds: (seconds * 1000).rounded() / 1000, batches: summary.batches,
                            skipped: summary.skipped)))
            }
            if progressOptions.printsSummary && !result.json {
                // The documents' size first: what the bar counted; then the payload it became.
                Terminal.err(
                    "vault: exported \(Plural.count(summary.documents, "document")) "
                        + "(\(Terminal.size(summary.plaintextBytes))) in "
                        + "\(Plural.count(summary.batches.count, "batch")) "
                        + "(\(Terminal.size(summary.payloadBytes)) of payload) to \(where_) "
                        + "in \(Seconds.tenths(seconds)) s")
            }
            if !summary.skipped.isEmpty {
                if progressOptions.resolved == .none {  // bar and json name them as they happen
                    for s in summary.skipped { Terminal.warn("skipped \(s.id.hex.prefix(12)) \(s.name): \(s.error)") }
                }
                throw VaultError(
                    .partial,
                    """
                    \(Plural.count(summary.skipped.count, "damaged document")) \
                    \(summary.skipped.count == 1 ? "was" : "were") left out
                    """,
                    hint: "run 'vault verify' for details")
            }
        }
    }
}
