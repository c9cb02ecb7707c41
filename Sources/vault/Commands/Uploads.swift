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
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("prune: remove finished, damaged and abandoned journals; show JOB: print one journal whole (JSON).", valueName: "action"))
        var action: String?

        @Argument(help: ArgumentHelp("With show: the job (as the list prints it).", valueName: "job"))
        var job: String?

        @Option(help: ArgumentHelp("With prune: days without progress after which an unfinished upload is abandoned.", valueName: "days"))
        var abandonedAfter: Double = 30

        @Flag(help: "Print the journals (or those removed) as one JSON object.")
        var json = false

        func validate() throws {
            if let action, action != "prune" && action != "show" { throw ValidationError("The actions are prune and show, not '\(action)'.") }
            if action == "show" && job == nil { throw ValidationError("show needs the job, as 'vault uploads' lists it.") }
            if action != "show" && job != nil { throw ValidationError("Only show takes a job.") }
            if !(abandonedAfter >= 0) { throw ValidationError("--abandoned-after must be a number of days, 0 or more.") }
        }

        func run() async throws { try await run(parent: root.global) }

        /// `uploads --json`.
        struct Result: Encodable { var journals: [UploadJournals.Entry]? ; var removed: [UploadJournals.Entry]? }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let vault = try options.unlock()
            if action == "show", let job {
                Terminal.out(try UploadJournals.show(job: job, in: vault))
                return
            }
            if action == "prune" {
                let removed = try UploadJournals.prune(in: vault, abandonedAfter: abandonedAfter * 86_400)
                if json { Terminal.out(JSONOutput.line(Result(journals: nil, removed: removed))) }
                for e in removed where !json { Terminal.out("removed  \(e.job)  \(e.state.rawValue)  \(e.target)\n") }
                Terminal.err("vault: removed \(removed.count) upload journal\(removed.count == 1 ? "" : "s")")
                return
            }
            let entries = try UploadJournals.list(in: vault)
            if json { Terminal.out(JSONOutput.line(Result(journals: entries, removed: nil))); return }
            for e in entries {
                if let problem = e.problem {
                    Terminal.out("\(e.job)  damaged      \(Terminal.printable(problem))\n")
                    continue
                }
                Terminal.out("\(e.job)  \(e.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0))  \(e.confirmed)/\(e.batches) batches  "
                             + "\(e.documents) documents  \(Terminal.size(e.payloadBytes))  \(e.updated)  \(e.target)\n")
            }
        }
    }
}
