import ArgumentParser
import Foundation
import VaultCore
import VaultUpload

extension VaultCommand {
    /// `vault uploads`: the upload journals.
    struct Uploads: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "List the upload journals of the vault, or remove finished and abandoned ones.",
            discussion: """
                Each `vault upload` keeps a journal (uploads/<job>.json) so that running the same command \
                again resumes it. They hold ids, sizes, states and the target, no secret, so this needs no \
                password. `prune` removes the journals of complete uploads and of unfinished ones not \
                touched for --abandoned-after days (default 30); a running upload's journal is kept.

                Examples:
                  vault uploads
                  vault uploads --json
                  vault uploads prune --abandoned-after 7
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("prune: remove finished and abandoned journals.", valueName: "action"))
        var action: String?

        @Option(help: ArgumentHelp("With prune: days without progress after which an unfinished upload is abandoned.", valueName: "days"))
        var abandonedAfter: Double = 30

        @Flag(help: "Print the journals (or those removed) as one JSON object.")
        var json = false

        func validate() throws {
            if let action, action != "prune" { throw ValidationError("The only action is prune, not '\(action)'.") }
            if !(abandonedAfter >= 0) { throw ValidationError("--abandoned-after must be a number of days, 0 or more.") }
        }

        func run() async throws { try await run(parent: root.global) }

        /// `uploads --json`.
        struct Result: Encodable { var journals: [UploadJournals.Entry]? ; var removed: [UploadJournals.Entry]? }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let store = options.store
            _ = try store.unlockCheckExists()
            if action == "prune" {
                let removed = try UploadJournals.prune(in: store, abandonedAfter: abandonedAfter * 86_400)
                if json { Terminal.out(JSONOutput.line(Result(journals: nil, removed: removed))) }
                for e in removed where !json { Terminal.out("removed  \(e.job)  \(e.state.rawValue)  \(e.target)\n") }
                Terminal.err("vault: removed \(removed.count) upload journal\(removed.count == 1 ? "" : "s")")
                return
            }
            let entries = try UploadJournals.list(in: store)
            if json { Terminal.out(JSONOutput.line(Result(journals: entries, removed: nil))); return }
            for e in entries {
                Terminal.out("\(e.job)  \(e.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0))  \(e.confirmed)/\(e.batches) batches  "
                             + "\(e.documents) documents  \(Terminal.size(e.payloadBytes))  \(e.updated)  \(e.target)\n")
            }
        }
    }
}
