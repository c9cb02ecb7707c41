import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

extension VaultCommand {
    /// `vault uploads`: the upload journals.
    struct Uploads: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "uploads",
            abstract: "List the upload journals of the vault, or remove finished and abandoned ones.",
            discussion: """
                Each `vault upload` keeps a journal (uploads/<job>.journal) so that running the same command \
                again resumes it. They hold ids, sizes, states and the target, sealed under the vault key \
                (so this asks for the password): a journal that was edited, swapped, cut or written by \
                someone else is listed as damaged and never used. `prune` removes the journals of complete \
                uploads, damaged ones, and unfinished ones not touched for --abandoned-after days \
                (default 30); a running upload's journal is kept.

                Examples:
                  vault uploads
                  vault uploads --json
                  vault uploads prune --abandoned-after 7
                  vault uploads show 3f2a9c…
                """,
            subcommands: [List.self, Prune.self, Show.self],
            defaultSubcommand: List.self)

        /// `vault --vault DIR uploads …` and `vault uploads --vault DIR …` both name the vault.
        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        /// The global options as given before and after `uploads`.
        var parentOptions: GlobalOptions { global.merged(with: root.global) }

        /// `uploads --json` and `uploads prune --json`.
        struct Result: Encodable { var journals: [UploadJournals.Entry]?; var removed: [UploadJournals.Entry]? }
    }
}

extension VaultCommand.Uploads {
    /// `vault uploads list`.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract:
                "List the journals: job, state, batches confirmed, documents, size, last update, target (the default).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Uploads

        @Flag(help: "Print the journals as one JSON object.")
        var json = false

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let entries = try UploadJournals.list(in: try options.unlock())
            if json {
                Terminal.out(JSONOutput.line(VaultCommand.Uploads.Result(journals: entries, removed: nil))); return
            }
            if entries.isEmpty {
                Terminal.err(
                    "vault: no uploads: no journal is kept (a finished upload's is pruned by 'vault uploads prune')");
                return
            }
            // A table fitted to the terminal: the target is shortened in the middle, then the
            // update time and the document count are left out.
            let output = BufferedOutput()
            // The job as a 12-digit prefix (as list shows ids): 'uploads show' takes any unique prefix.
            let table = FittedTable(
                [
                    .init(title: "JOB"), .init(title: "STATE"), .init(title: "BATCHES", alignRight: true),
                    .init(title: "DOCS", alignRight: true, dropRank: 3),
                    .init(title: "PAYLOAD", alignRight: true, dropRank: 2),
                    .init(title: "UPDATED (UTC)", dropRank: 4), .init(title: "TARGET", flexible: true, dropRank: 1)
                ], output: output)
            for e in entries {
                let job = String(e.job.prefix(12))
                if let problem = e.problem {
                    table.add([job, "damaged", "", "", "", "", Terminal.printable(problem)])
                    continue
                }
                table.add([
                    job, e.state.rawValue, "\(e.confirmed)/\(e.batches)", "\(e.documents)",
                    Terminal.size(e.payloadBytes),
                    e.updated, Terminal.printable(e.target)
                ])
            }
            table.finish()
            output.flush()
        }
    }

    /// `vault uploads prune`.
    struct Prune: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Remove the journals of complete, damaged and abandoned uploads.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Uploads

        @Option(
            help: ArgumentHelp(
                "Days without progress after which an unfinished upload is abandoned.", valueName: "days"))
        var abandonedAfter: Double = 30

        @Flag(help: "Print the journals removed as one JSON object.")
        var json = false

        func validate() throws {
            if !(abandonedAfter >= 0) {
                throw ValidationError("--abandoned-after must be a number of days, 0 or more.")
            }
        }

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let vault = try options.unlock()
            // What a journal alone says was confirmed goes into the ledger before the journal goes.
            try Uploader.recordConfirmedBatches(in: vault)
            let removed = try UploadJournals.prune(in: vault, abandonedAfter: abandonedAfter * 86_400)
            if json { Terminal.out(JSONOutput.line(VaultCommand.Uploads.Result(journals: nil, removed: removed))) }
            for e in removed where !json { Terminal.out("removed  \(e.job)  \(e.state.rawValue)  \(e.target)\n") }
            if !json { Terminal.err("vault: removed \(Plural.count(removed.count, "upload journal"))") }
        }
    }

    /// `vault uploads show JOB`.
    struct Show: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print one journal whole, as JSON, after it authenticated.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Uploads

        @Argument(help: ArgumentHelp("The job, as the list prints it.", valueName: "job"))
        var job: String

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            Terminal.out(try UploadJournals.show(job: job, in: try options.unlock()))
        }
    }
}
