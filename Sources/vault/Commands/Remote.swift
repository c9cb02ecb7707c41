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
    /// `vault remote`: the remote stores a vault replicates to.
    struct Remote: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remote",
            abstract: "List, add or remove the S3-compatible stores this vault is replicated to.",
            discussion: """
                A remote is a name for s3://BUCKET/PREFIX, kept sealed in remotes.vlt in the vault folder \
                (so this asks for the password: nobody without it can redirect a push). Credentials and \
                the store's address come from the AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, \
                AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL) each time, never from the vault folder.

                Examples:
                  vault remote add office s3://backoffice/vault
                  vault remote
                  vault remote list --json
                  vault remote remove office
                """,
            subcommands: [List.self, Add.self, Remove.self],
            defaultSubcommand: List.self)

        /// `vault --vault DIR remote …` and `vault remote --vault DIR …` both name the vault.
        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        /// The global options as given before and after `remote`.
        var parentOptions: GlobalOptions { global.merged(with: root.global) }
    }
}

extension VaultCommand.Remote {
    /// `vault remote list`.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the remotes (the default).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Remote
        @OptionGroup var result: ResultOptions

        /// `remote --json`.
        struct Result: Encodable { var remotes: [RemoteList.Remote] }

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let list = try RemoteList.load(try options.unlock())
            if result.json { Terminal.out(JSONOutput.line(Result(remotes: list.remotes))); return }
            for r in list.remotes { Terminal.out("\(r.name)  \(r.url)\n") }
        }
    }

    /// `vault remote add NAME URL`.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Name a store: s3://BUCKET/PREFIX.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Remote

        @Argument(
            help: ArgumentHelp("The remote's name (letters, digits, '-', '_' and '.', up to 64).", valueName: "name"))
        var name: String

        @Argument(help: ArgumentHelp("The store: s3://BUCKET/PREFIX.", valueName: "url"))
        var url: String

        @OptionGroup var output: QuietOption

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            guard RemoteList.isValidName(name) else {
                throw VaultError(
                    .usage,
                    "'\(Terminal.printable(name))' is not a remote name (letters, digits, '-', '_' and '.', up to 64)")
            }
            if name.hasPrefix("s3:") { throw VaultError(.usage, "a remote's name cannot start with 's3:'") }
            let location = try RemoteLocation(url: url)
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try RemoteList.load(vault)
            if list.remotes.contains(where: { $0.name == name }) {
                throw VaultError(
                    .alreadyExists, "a remote named '\(name)' exists",
                    hint: "remove it first with 'vault remote remove \(name)'")
            }
            list.remotes.append(.init(name: name, url: location.description))
            try list.save(vault)
            if !output.quiet { Terminal.err("vault: added remote \(name) → \(location)") }
        }
    }

    /// `vault remote remove NAME`.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Forget a remote (the store itself is unchanged).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Remote

        @Argument(help: ArgumentHelp("The remote's name.", valueName: "name"))
        var name: String

        @OptionGroup var output: QuietOption

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try RemoteList.load(vault)
            guard let i = list.remotes.firstIndex(where: { $0.name == name }) else {
                throw VaultError(.notFound, "no remote named '\(Terminal.printable(name))'")
            }
            list.remotes.remove(at: i)
            try list.save(vault)
            if !output.quiet { Terminal.err("vault: removed remote \(name) (the store itself is unchanged)") }
        }
    }
}
