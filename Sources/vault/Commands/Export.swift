import ArgumentParser
import Foundation
import VaultCore

extension PayloadShape: ExpressibleByArgument {}

extension VaultCommand {
    /// `vault export`: write batch payloads.
    struct Export: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Write documents as {\"Files\":[...]} batch payloads to a folder or standard output.",
            discussion: """
                Each payload holds at most --batch-size documents and --max-bytes bytes, with every \
                document decrypted, authenticated and base64-encoded as it streams. --out DIR writes \
                batch-0001.json, ... and manifest.json; --out - streams a single batch to stdout. \
                A damaged document stops the export (no incomplete file is left), or with --skip-bad \
                is cut out of its payload and the export goes on (exit code 2). See docs/EXPORT.md.
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand
        @OptionGroup var progressOptions: ProgressOptions

        @OptionGroup var selection: SelectionOptions

        @Option(help: ArgumentHelp("A folder for the batch files, or - for standard output.", valueName: "dir|-"))
        var out: String

        @OptionGroup var batching: BatchOptions

        @Flag(help: "Cut documents that fail authentication out of their payload and go on (exit code 2).")
        var skipBad = false

        @Flag(help: "Replace existing batch files and manifest in the folder.")
        var force = false

        func validate() throws {
            if out.isEmpty { throw ValidationError("--out needs a folder or -.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let toStdout = out == "-"
            if toStdout && Terminal.isTTY(1) {
                throw VaultError(.usage, "refusing to write the payload to a terminal", hint: "redirect standard output, or use --out DIR")
            }
            let vault = try options.unlock()
            let selected = try selection.records(in: vault, verb: "export")
            var exportOptions = ExportOptions()
            exportOptions.limits = batching.limits
            exportOptions.shape = batching.shape
            exportOptions.skipBad = skipBad
            exportOptions.force = force
            let renderer = ProgressRenderer(mode: progressOptions.resolved)
            let exporter = try VaultCore.Exporter(vault: vault, records: selected, options: exportOptions, onEvent: renderer.handle)
            let started = Date()
            let summary: ExportSummary
            do {
                summary = toStdout ? try exporter.write(to: FileDescriptor.standard(1, name: "standard output"))
                                   : try exporter.write(toDirectory: out)
            } catch {
                renderer.clear()
                throw error
            }
            renderer.clear()
            let seconds = Date().timeIntervalSince(started)
            let where_ = toStdout ? "standard output" : out
            Terminal.err(String(format: "vault: exported %d document%@ in %d batch%@ (%@) to %@ in %.1f s",
                                summary.documents, summary.documents == 1 ? "" : "s", summary.batches.count,
                                summary.batches.count == 1 ? "" : "es", Terminal.size(summary.payloadBytes), where_, seconds))
            if !summary.skipped.isEmpty {
                if progressOptions.resolved != .bar {
                    for s in summary.skipped { Terminal.warn("skipped \(s.id.prefix(12)) \(s.name): \(s.error)") }
                }
                throw VaultError(.partial, "\(summary.skipped.count) damaged document(s) were left out",
                                 hint: "run 'vault verify' for details")
            }
        }
    }
}
