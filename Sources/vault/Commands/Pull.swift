import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultRemote
import VaultS3

extension VaultCommand {
    /// `vault pull`: fetch what the vault lacks.
    struct Pull: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "pull",
            abstract: "Fetch from a remote store the documents and removals this vault lacks.",
            usage: "vault pull [<remote>] [<options>]",
            discussion: """
                Every fetched envelope is authenticated chunk by chunk, with its id, under this vault's key \
                before it enters objects/; a damaged or foreign object is reported and not taken (exit 65, or 2 \
                when others were taken). Tombstones (removals made elsewhere) are authenticated and applied. \
                A pull that was killed is resumed by running it again: what it took in is not fetched again.

                Examples:
                  vault pull
                  vault pull office --progress bar
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp(
                "A remote's name or an s3://BUCKET/PREFIX URL (default: the only remote).", valueName: "remote"))
        var remote: String?

        @OptionGroup var transfer: TransferOptions

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let (vault, location, client) = try transfer.open(remote, options, purpose: "vault pull")
            defer { Task { await client.shutdown() } }
            let start = Date()
            let report = try await transfer.run(location, label: "pull") { progress in
                try await Replicator(vault: vault, client: client, location: location, parallel: transfer.parallel)
                    .pull(progress: progress)
            }
            try Self.finish(report, from: location, start: start, transfer: transfer, verb: "pulled")
        }

        /// The summary line, the rejected objects as warnings, and the exit status they call for.
        static func finish(
            _ report: PullReport, from location: RemoteLocation, start: Date, transfer: TransferOptions, verb: String
        ) throws {
            for r in report.rejected { Terminal.err("vault: warning: not taken: \(r.key): \(r.error.message)") }
            Terminal.warnRefusedTombstones(report.refusedTombstones)
            if transfer.json {
                Terminal.out(
                    JSONOutput.line(
                        TransferOptions.PullResult(
                            remote: location.description, fetched: report.fetched.map(\.id.hex),
                            fetchedBytes: report.fetchedBytes,
                            removed: report.removed.map(\.hex),
                            rejected: report.rejected.map {
                                .init(key: $0.key, code: $0.error.code.rawValue, message: $0.error.message)
                            },
                            refusedTombstones: report.refusedTombstones.map(\.key),
                            seconds: JSONOutput.seconds(since: start))))
            }
            if transfer.printsSummary {
                var line =
                    "vault: \(verb) \(report.fetched.count) document\(report.fetched.count == 1 ? "" : "s") "
                    + "(\(Terminal.size(report.fetchedBytes))) from \(location.description) "
                    + "in \(Seconds.tenths(Date().timeIntervalSince(start))) s"
                if !report.removed.isEmpty { line += "; removed \(report.removed.count) (removed elsewhere)" }
                Terminal.err(line)
            }
            guard !report.rejected.isEmpty else { return }
            if report.fetched.isEmpty && report.removed.isEmpty {
                throw VaultError(
                    .vaultDamaged,
                    """
                        \(Plural.count(report.rejected.count, "object")) at \(location) failed authentication and \
                        \(report.rejected.count == 1 ? "was" : "were") not taken
                        """,
                    hint: "the store's copy is damaged or not this vault's; push it again from a station that has it")
            }
            throw VaultError(
                .partial,
                """
                    \(Plural.count(report.rejected.count, "object")) at \(location) failed authentication and \
                    \(report.rejected.count == 1 ? "was" : "were") not taken
                    """
            )
        }
    }
}
