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

                When the vault's password was changed at another station (and pushed), the pull says so and \
                asks for the new password (--new-password-file FILE, else $VAULT_NEW_PASSWORD, else a no-echo \
                prompt): the vault then moves to it, as 'vault passwd' would, and the pull goes on.

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

        @Option(
            help: ArgumentHelp(
                "The new password, when it was changed at another station: read from this file.", valueName: "file"),
            completion: .file())
        var newPasswordFile: String?

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let (opened, location, client) = try transfer.open(remote, options, purpose: "vault pull")
            var vault = opened
            defer { Task { await client.shutdown() } }
            let start = Date()
            let pull = { (vault: VaultCore.Vault) in
                try await transfer.run(location, label: "pull") { progress in
                    try await Replicator(vault: vault, client: client, location: location, parallel: transfer.parallel)
                        .pull(progress: progress)
                }
            }
            let report: PullReport
            do {
                report = try await pull(vault)
            } catch let e as VaultError where e.remedy?.name == .takePasswordChange {
                vault = try await takePasswordChange(vault, from: location, client: client, refusal: e)
                report = try await pull(vault)
            }
            try Self.finish(report, from: location, start: start, transfer: transfer, verb: "pulled")
        }

        /// The password was changed at another station: said, the new one read, and the vault
        /// moved to the store's key epoch (`Vault.adoptPasswordChange`).
        /// Without a new password to read, the refusal stands.
        private func takePasswordChange(
            _ vault: VaultCore.Vault, from location: RemoteLocation, client: S3Client, refusal: VaultError
        ) async throws -> VaultCore.Vault {
            Terminal.err("vault: the vault's password was changed at another station (\(location.description))")
            guard PasswordReader.canRead(file: newPasswordFile, from: .changedPassword) else { throw refusal }
            let newPassword = try PasswordReader.read(file: newPasswordFile, from: .changedPassword)
            let replicator = Replicator(vault: vault, client: client, location: location)
            guard let config = try await replicator.storeConfig() else { throw refusal }
            let summary = try vault.adoptPasswordChange(
                storeConfig: config, password: newPassword, source: location.description)
            if transfer.printsSummary {
                Terminal.err(
                    "vault: the vault now opens with the new password (\(summary.documents) headers re-sealed); "
                        + "the old one no longer opens it")
            }
            return try vault.store.unlock(password: newPassword)
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
