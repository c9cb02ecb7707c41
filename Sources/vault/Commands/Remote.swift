import ArgumentParser
import Foundation
import VaultCore
import VaultRemote
import VaultS3

extension VaultCommand {
    /// `vault remote`: the remote stores a vault replicates to.
    struct Remote: VaultSubcommand {
        static let configuration = CommandConfiguration(
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
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("list (default), add NAME URL, or remove NAME.", valueName: "action"))
        var action: String = "list"

        @Argument(help: ArgumentHelp("The remote's name, and for add its s3://BUCKET/PREFIX URL.", valueName: "args"))
        var arguments: [String] = []

        @OptionGroup var result: ResultOptions

        func validate() throws {
            switch (action, arguments.count) {
            case ("list", 0), ("add", 2), ("remove", 1): break
            case ("add", _): throw ValidationError("Usage: vault remote add NAME s3://BUCKET/PREFIX")
            case ("remove", _): throw ValidationError("Usage: vault remote remove NAME")
            case ("list", _): throw ValidationError("'vault remote list' takes no arguments.")
            default: throw ValidationError("The actions are list, add and remove, not '\(action)'.")
            }
        }

        func run() async throws { try await run(parent: root.global) }

        /// `remote --json`.
        struct Result: Encodable { var remotes: [RemoteList.Remote] }

        func execute(_ options: GlobalOptions) async throws {
            try options.requireLocal()
            let vault = try options.unlock()
            var list = try RemoteList.load(vault)
            switch action {
            case "add":
                let (name, url) = (arguments[0], arguments[1])
                guard RemoteList.isValidName(name) else {
                    throw VaultError(.usage, "'\(Terminal.printable(name))' is not a remote name (letters, digits, '-', '_' and '.', up to 64)")
                }
                if name.hasPrefix("s3:") { throw VaultError(.usage, "a remote's name cannot start with 's3:'") }
                let location = try RemoteLocation(url: url)
                if list.remotes.contains(where: { $0.name == name }) {
                    throw VaultError(.alreadyExists, "a remote named '\(name)' exists", hint: "remove it first with 'vault remote remove \(name)'")
                }
                list.remotes.append(.init(name: name, url: location.description))
                try list.save(vault)
                Terminal.err("vault: added remote \(name) → \(location)")
            case "remove":
                guard let i = list.remotes.firstIndex(where: { $0.name == arguments[0] }) else {
                    throw VaultError(.notFound, "no remote named '\(Terminal.printable(arguments[0]))'")
                }
                list.remotes.remove(at: i)
                try list.save(vault)
                Terminal.err("vault: removed remote \(arguments[0]) (the store itself is unchanged)")
            default:
                if result.json { Terminal.out(JSONOutput.line(Result(remotes: list.remotes))); return }
                for r in list.remotes { Terminal.out("\(r.name)  \(r.url)\n") }
            }
        }
    }

    /// `vault push`: send the store what it lacks.
    struct Push: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a remote store the documents and removals it lacks.",
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

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("A remote's name or an s3://BUCKET/PREFIX URL (default: the only remote).", valueName: "remote"))
        var remote: String?

        @OptionGroup var transfer: TransferOptions

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let (vault, location, client) = try transfer.open(remote, options, purpose: "vault push")
            defer { Task { await client.shutdown() } }
            let start = Date()
            let report = try await transfer.run(location, label: "push") { progress in
                try await Replicator(vault: vault, client: client, location: location, parallel: transfer.parallel).push(progress: progress)
            }
            Terminal.warnRefusedTombstones(report.refusedTombstones)
            if !report.sent.isEmpty || report.tombstones > 0 || !report.refusedTombstones.isEmpty {
                let sent = Set(report.sent)
                try vault.recordPush(try vault.records().records.filter { sent.contains($0.id) }, to: location.description, outcome: .ok,
                                     detail: report.tombstones > 0 ? "\(report.tombstones) tombstone(s)" : nil,
                                     anomalies: Replicator.anomalies(report.refusedTombstones))
            }
            if transfer.progress.printsSummary {
                var line = String(format: "vault: pushed %d document%@ (%@) to %@ in %.1f s", report.sent.count, report.sent.count == 1 ? "" : "s",
                                  Terminal.size(report.sentBytes), location.description, Date().timeIntervalSince(start))
                if report.tombstones > 0 { line += "; \(report.tombstones) removal\(report.tombstones == 1 ? "" : "s")" }
                if report.alreadyThere > 0 { line += "; \(report.alreadyThere) already there" }
                if report.created { line += "; the store's vault.json was written" }
                Terminal.err(line)
            }
        }
    }

    /// `vault pull`: fetch what the vault lacks.
    struct Pull: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch from a remote store the documents and removals this vault lacks.",
            discussion: """
                Every fetched envelope is authenticated chunk by chunk, with its id, under this vault's key \
                before it enters objects/; a damaged or foreign object is reported and not taken (exit 65, or 2 \
                when others were taken). Tombstones (removals made elsewhere) are authenticated and applied. \
                A pull that was killed is resumed by running it again: what it took in is not fetched again.

                Examples:
                  vault pull
                  vault pull office --progress bar
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("A remote's name or an s3://BUCKET/PREFIX URL (default: the only remote).", valueName: "remote"))
        var remote: String?

        @OptionGroup var transfer: TransferOptions

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let (vault, location, client) = try transfer.open(remote, options, purpose: "vault pull")
            defer { Task { await client.shutdown() } }
            let start = Date()
            let report = try await transfer.run(location, label: "pull") { progress in
                try await Replicator(vault: vault, client: client, location: location, parallel: transfer.parallel).pull(progress: progress)
            }
            try Self.finish(report, from: location, start: start, summary: transfer.progress.printsSummary, verb: "pulled")
        }

        /// The summary line, the rejected objects as warnings, and the exit status they call for.
        static func finish(_ report: PullReport, from location: RemoteLocation, start: Date, summary: Bool, verb: String) throws {
            for (key, e) in report.rejected { Terminal.err("vault: warning: not taken: \(key): \(e.message)") }
            Terminal.warnRefusedTombstones(report.refusedTombstones)
            if summary {
                var line = String(format: "vault: %@ %d document%@ (%@) from %@ in %.1f s", verb, report.fetched.count, report.fetched.count == 1 ? "" : "s",
                                  Terminal.size(report.fetchedBytes), location.description, Date().timeIntervalSince(start))
                if !report.removed.isEmpty { line += "; removed \(report.removed.count) (removed elsewhere)" }
                Terminal.err(line)
            }
            guard !report.rejected.isEmpty else { return }
            if report.fetched.isEmpty && report.removed.isEmpty {
                throw VaultError(.vaultDamaged, "\(report.rejected.count) object(s) at \(location) failed authentication and were not taken",
                                 hint: "the store's copy is damaged or not this vault's; push it again from a station that has it")
            }
            throw VaultError(.partial, "\(report.rejected.count) object(s) at \(location) failed authentication and were not taken")
        }
    }

    /// `vault clone`: a new local replica of a remote vault.
    struct Clone: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new local replica of a vault kept on an S3-compatible store.",
            discussion: """
                Fetches the store's vault.json and checks the password against it before anything is created, \
                then pulls every document (each authenticated before it is taken) and adds the store as the \
                remote 'origin'. The vault directory (--vault, $VAULT_DIR, ...) must not exist or be empty.

                Examples:
                  vault clone s3://backoffice/vault --vault ~/vault-replica
                  VAULT_DIR=/srv/vault vault clone s3://backoffice/vault --progress bar
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("The store: s3://BUCKET/PREFIX.", valueName: "url"))
        var url: String

        @OptionGroup var transfer: TransferOptions

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let location = try RemoteLocation(url: url)
            try options.requireLocal()
            let store = options.store
            if store.exists { throw VaultError(.alreadyExists, "a vault already exists at \(store.root)", hint: "use 'vault pull' to update it") }
            let client = try S3Environment.connection(purpose: "vault clone").client(timeout: transfer.timeout)
            defer { Task { await client.shutdown() } }
            let password = try PasswordReader.read(file: options.passwordFile)
            let start = Date()
            let report = try await transfer.run(location, label: "clone") { progress in
                try await Replicator.clone(location, client: client, into: store, password: password, parallel: transfer.parallel, progress: progress).1
            }
            try Pull.finish(report, from: location, start: start, summary: transfer.progress.printsSummary, verb: "cloned")
        }
    }
}

/// What push, pull and clone share: objects in flight, progress, and how a run is reported.
struct TransferOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Objects in flight at once.", valueName: "n"))
    var parallel: Int = 4

    @Option(help: ArgumentHelp("Seconds a request may go without progress; a whole request may take this plus its bytes at 256 KiB/s.", valueName: "seconds"))
    var timeout: Double = 60

    @OptionGroup var progress: ProgressOptions

    func validate() throws {
        if !(1...32).contains(parallel) { throw ValidationError("--parallel must be 1 to 32.") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds.") }
    }

    /// The local vault (unlocked), the store `remote` names, and a client of it.
    func open(_ remote: String?, _ options: GlobalOptions, purpose: String) throws -> (VaultCore.Vault, RemoteLocation, S3Client) {
        try options.requireLocal()
        let store = options.store
        _ = try store.unlockCheckExists()
        let connection = try S3Environment.connection(purpose: purpose)   // checked before the password is asked
        let vault = try options.unlock()
        let (_, location) = try RemoteList.load(vault).resolve(remote)
        return (vault, location, connection.client(timeout: timeout))
    }

    /// Runs `body` with a progress bar or events (cleared before any summary or error); failures
    /// that are not `VaultError`s (the network) become exit 75.
    func run<R>(_ location: RemoteLocation, label: String, _ body: (@escaping @Sendable (TransferProgress) -> Void) async throws -> R) async throws -> R {
        let renderer = ProgressRenderer(mode: progress.resolved)
        defer { renderer.clear() }
        do {
            return try await body { renderer.handle($0, label: label) }
        } catch let e as VaultError {
            throw e
        } catch {
            throw VaultError(.storeUnavailable, "\(location): \(error)")
        }
    }
}
