import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive
import VaultRemote
import VaultS3

extension VaultCommand {
    /// `vault push`: send the store what it lacks.
    struct Push: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "push",
            abstract: "Send a remote store the documents and removals it lacks.",
            usage: "vault push [<remote>] [<options>]",
            discussion: """
                Sends the envelopes (already sealed: the store never sees plaintext or keys) of documents the \
                store has neither as object nor as tombstone, and a sealed tombstone for each document removed \
                here; the first push to an empty prefix writes vault.json there. A store holding another vault \
                is refused. Nothing the store already has is sent again, so a push that was killed is resumed \
                by running it again.

                Examples:
                  vault push                 # the only remote
                  vault push office
                  vault push s3://backoffice/vault --progress json
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
            let (vault, location, client) = try transfer.open(remote, options, purpose: "vault push")
            defer { Task { await client.shutdown() } }
            let start = Date()
            let report = try await transfer.run(location, label: "push") { progress in
                try await Replicator(vault: vault, client: client, location: location, parallel: transfer.parallel)
                    .push(progress: progress, office: ReceiversLogCarrier())
            }
            Terminal.warnRefusedTombstones(report.refusedTombstones)
            if !report.sent.isEmpty || report.tombstones > 0 || !report.refusedTombstones.isEmpty
                || report.passwordCarried
            {
                let sent = Set(report.sent)
                try vault.recordPush(
                    try vault.records().records.filter { sent.contains($0.id) }, to: location.description, outcome: .ok,
                    detail: report.tombstones > 0 ? Plural.count(report.tombstones, "tombstone") : nil,
                    anomalies: Replicator.anomalies(report.refusedTombstones))
            }
            if transfer.json {
                Terminal.out(
                    JSONOutput.line(
                        TransferOptions.PushResult(
                            remote: location.description, sent: report.sent.map(\.hex), sentBytes: report.sentBytes,
                            alreadyThere: report.alreadyThere,
                            tombstones: report.tombstones, refusedTombstones: report.refusedTombstones.map(\.key),
                            created: report.created, passwordCarried: report.passwordCarried,
                            seconds: JSONOutput.seconds(since: start))))
            }
            if transfer.printsSummary {
                var line =
                    "vault: pushed \(report.sent.count) document\(report.sent.count == 1 ? "" : "s") "
                    + "(\(Terminal.size(report.sentBytes))) to \(location.description) "
                    + "in \(Seconds.tenths(Date().timeIntervalSince(start))) s"
                if report.tombstones > 0 {
                    line += "; \(report.tombstones) removal\(report.tombstones == 1 ? "" : "s")"
                }
                if report.alreadyThere > 0 { line += "; \(report.alreadyThere) already there" }
                if report.created { line += "; the store's vault.json was written" }
                if report.passwordCarried {
                    line += "; the store now holds the vault under the new password (other stations' pull asks for it)"
                    if report.fetchedForRotation > 0 {
                        line += "; \(Plural.count(report.fetchedForRotation, "document")) it held were taken in first"
                    }
                }
                Terminal.err(line)
            }
            switch report.office {
            case .carried(let stations, let batches, let operators)? where transfer.printsSummary:
                let others = operators == 0 ? "" : ", \(operators) operator record\(operators == 1 ? "" : "s")"
                Terminal.err(
                    "vault: the receiver's key, \(stations) station record\(stations == 1 ? "" : "s")\(others) and "
                        + "\(batches) batch\(batches == 1 ? "" : "es") went to the store: receivers serving it go on "
                        + "from here")
            case .otherKey(let key)?:
                Terminal.warn(
                    "the store's receivers sign with another key (\(key.prefix(16))…): this vault's receiver key, "
                        + "stations and batches were not carried to it")
            default: break
            }
        }
    }
}
