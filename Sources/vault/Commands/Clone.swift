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
    /// `vault clone`: a new local replica of a remote vault.
    struct Clone: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "clone",
            abstract: "Make a new local replica of a vault kept on an S3-compatible store.",
            usage: "vault clone <url> [<options>]",
            discussion: """
                Fetches the store's vault.json and checks the password against it before anything is created, \
                then pulls every document (each authenticated before it is taken) and adds the store as the \
                remote 'origin'. The vault directory (--vault, $VAULT_DIR, ...) must not exist or be empty.

                Examples:
                  vault clone s3://backoffice/vault --vault ~/vault-replica
                  VAULT_DIR=/srv/vault vault clone s3://backoffice/vault --progress bar
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("The store: s3://BUCKET/PREFIX.", valueName: "url"))
        var url: String

        @OptionGroup var transfer: TransferOptions

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let location = try RemoteLocation(url: url)
            try options.requireLocal()
            let store = options.store
            if store.exists {
                throw VaultError(
                    .alreadyExists, "a vault already exists at \(store.root)", hint: "use 'vault pull' to update it")
            }
            // a folder that is not empty or not writable: said before credentials and the password
            try store.checkCanCreate()
            let client = try S3Environment.connection(purpose: "vault clone").client(timeout: transfer.timeout)
            defer { Task { await client.shutdown() } }
            let password = try PasswordReader.read(file: options.passwordFile, command: options.passwordCommand)
            let start = Date()
            let report = try await transfer.run(location, label: "clone") { progress in
                try await Replicator.clone(
                    location, client: client, into: store, password: password, parallel: transfer.parallel,
                    progress: progress
                ).report
            }
            try Pull.finish(report, from: location, start: start, transfer: transfer, verb: "cloned")
        }
    }
}
