import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle
import VaultCore
import VaultReceive
import VaultRemote
import VaultS3

extension VaultCommand {
    /// `vault receive`: the back office's side: takes batches into this vault and signs for them.
    struct Receive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "receive",
            abstract: "Take batches from stations into this vault, and sign a receipt for each (a back office).",
            discussion: """
                'vault receive' runs an HTTP server that stores every batch a station uploads into \
                this vault (encrypted at rest like any document), whole or not at all, and answers \
                with a receipt signed by this receiver's key. Stations are known by a token: add one \
                with 'vault receive station add NAME' and give the station the token it prints \
                (as VAULT_UPLOAD_TOKEN). docs/RECEIVE.md has the endpoints and the receipt format.

                Examples:
                  vault init --vault office
                  vault receive --vault office station add station-3
                  vault receive --vault office key
                  vault receive --vault office --listen 0.0.0.0:8443 \\
                      --tls-cert cert.pem --tls-key key.pem
                  vault keygen --out office.key
                  vault receive --vault office --identity office.key
                  vault receive --vault office operator add alice
                  vault receive --vault s3://backoffice/office --listen 0.0.0.0:8080

                Operators see what arrived in a browser, at /ui/ of the receiver's address. \
                A vault pushed to a store (--vault s3://BUCKET/PREFIX) is served by as many \
                receivers as you start, sharing its key, stations and batches through the store. \
                The server's options: vault help receive serve.
                """,
            subcommands: [Serve.self, Stations.self, Batches.self, Operators.self, Key.self],
            defaultSubcommand: Serve.self)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        var parentOptions: GlobalOptions { global.merged(with: root.global) }
    }
}

extension VaultCommand.Receive {
    /// `vault receive serve`: the server (the default).
    struct Serve: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Run the receiver (the default): its address is the first line on standard output.",
            usage: "vault receive [--listen <host:port>] [--tls-cert <file>] [<options>]")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive

        @Option(help: ArgumentHelp("Where to listen (port 0: any free port).", valueName: "host:port"))
        var listen = "127.0.0.1:8080"

        @Option(
            help: ArgumentHelp(
                "Serve TLS with this PEM certificate chain (with --tls-key); SIGHUP reads both again.",
                valueName: "file"))
        var tlsCert: String?

        @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
        var tlsKey: String?

        @Option(
            name: .customLong("metrics-token-file"),
            help: ArgumentHelp(
                "/metrics answers only 'Authorization: Bearer' with the token in this file.", valueName: "file"),
            completion: .file())
        var metricsTokenFile: String?

        @Option(help: ArgumentHelp("The most bytes one batch may have (default 4 GiB).", valueName: "size"))
        var maxBytes: ByteCount?

        @Option(help: ArgumentHelp("The most documents one batch may have (default 20).", valueName: "n"))
        var maxDocuments: Int?

        @Option(
            help: ArgumentHelp(
                """
                Close a connection idle this long, or whose request headers take longer; after it, a body \
                must arrive at 16 KiB/s or more (default 30).
                """,
                valueName: "seconds"))
        var idleTimeout: Double = 30

        @Option(
            help: ArgumentHelp(
                "Drop a tus upload no request touched for this long (default 3600).", valueName: "seconds"))
        var uploadExpiry: Double = 3600

        @Option(
            name: .customLong("identity"),
            help: ArgumentHelp(
                "Open batches sealed to this age identity (vault keygen's or age-keygen's file; without one, "
                    + "sealed batches are kept sealed as they came); repeatable.",
                valueName: "file"),
            completion: .file())
        var identities: [String] = []

        @Flag(help: "Refuse plaintext batches (415): documents arrive sealed or not at all.")
        var requireSealed = false

        @Option(
            name: .customLong("ui-host"),
            help: ArgumentHelp(
                "A host name operators open the pages (/ui/) by, besides IP addresses and localhost; repeatable.",
                valueName: "name"))
        var uiHosts: [String] = []

        @Option(
            help: ArgumentHelp(
                "How log lines are written on standard error: text (for a person), logfmt or json (one object a line).",
                valueName: "format"))
        var logFormat: LogFormat = .text

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let (host, port) = try Self.address(listen)
            if (tlsCert == nil) != (tlsKey == nil) {
                throw VaultError(.usage, "--tls-cert and --tls-key go together")
            }
            let files = [tlsCert, tlsKey, metricsTokenFile].compactMap { $0 }
            for file in files where FileSystem.kind(of: file) != .file {
                throw VaultError(.notFound, "no file at \(Terminal.printable(file))")
            }
            // Checked before the vault is opened: a key that is not the certificate's is said at once.
            let tls = try tlsCert.flatMap { cert in try tlsKey.map { try TLSIdentity(certificate: cert, key: $0) } }
            let metricsToken = try metricsTokenFile.map(Self.token(in:))
            guard idleTimeout >= 0.1, idleTimeout <= 3600 else {
                throw VaultError(.usage, "--idle-timeout must be between 0.1 and 3600 seconds")
            }
            var limits = Receiver.Limits()
            limits.graceSeconds = idleTimeout
            if let maxBytes { limits.bytes = maxBytes.value }
            if let maxDocuments {
                guard maxDocuments >= 1 else { throw VaultError(.usage, "--max-documents must be at least 1") }
                limits.documents = maxDocuments
            }
            let ageIdentities = try AgeIdentityFiles.read(identities)
            let receiver = try await options.receiver(
                serving: true, limits: limits, identities: ageIdentities, requireSealed: requireSealed)
            var configuration = ReceiveServer.Configuration()
            (configuration.host, configuration.port) = (host, port)
            (configuration.tlsCertificate, configuration.tlsKey) = (tlsCert, tlsKey)
            (configuration.tlsIdentity, configuration.metricsToken) = (tls, metricsToken)
            configuration.version = BuildInfo.version
            configuration.idleTimeout = idleTimeout
            // At most 100 days: the expiry goes into each answer's Upload-Expires date.
            guard uploadExpiry >= 1, uploadExpiry <= 8_640_000 else {
                throw VaultError(.usage, "--upload-expiry must be at least 1 second and at most 8640000 (100 days)")
            }
            configuration.uploadExpiry = uploadExpiry
            for name in uiHosts {
                let ok =
                    (1...253).contains(name.utf8.count)
                    && name.utf8.allSatisfy { $0 < 0x80 && ($0.isASCIIAlphanumeric || $0 == 0x2E || $0 == 0x2D) }
                guard ok else {
                    throw VaultError(.usage, "--ui-host takes a host name, not '\(Terminal.printable(name))'")
                }
            }
            configuration.operatorHosts = uiHosts
            let format = logFormat
            let logger = Logger(label: "vault.receive") { label -> any LogHandler in
                format == .text
                    ? StreamLogHandler.standardError(label: label) : LineLogHandler(label: label, format: format)
            }
            let server = ReceiveServer(
                receiver: receiver, configuration: configuration, logger: logger,
                onListening: { Terminal.out("listening on \($0)\n") })
            var quiet = logger
            quiet.logLevel = .warning
            let group = ServiceGroup(
                configuration: .init(services: [server], gracefulShutdownSignals: [], logger: quiet))
            Self.onSignal(tls: tls, logger: logger) {
                Terminal.err("vault: stopping: batches in flight finish, new ones are refused")
                receiver.close()
                Task { await group.triggerGracefulShutdown() }
            }
            try await group.run()
            Terminal.err("vault: stopped")
        }

        /// SIGHUP reads the TLS pair again (the one in use stays when the new files do not make a
        /// pair, said in the log); SIGINT and SIGTERM stop the server (`stop`).
        static func onSignal(tls: TLSIdentity?, logger: Logger, stop: @escaping @Sendable () -> Void) {
            Interrupts.divert { signal in
                guard signal == Platform.hangup else { return stop() }
                if let tls {
                    do {
                        try tls.reload()
                        logger.info("tls reloaded", metadata: ["certificate": "\(tls.certificatePath)"])
                    } catch {
                        logger.error(
                            "tls not reloaded: the certificate in use stays",
                            metadata: ["error": "\(VaultError.from(error).message)"])
                    }
                } else {
                    logger.info("SIGHUP: no TLS certificate to read again")
                }
                onSignal(tls: tls, logger: logger, stop: stop)
            }
        }

        /// The token in `path`: its first line, 16 to 256 printable characters.
        static func token(in path: String) throws -> String {
            let bytes = try FileSystem.readFile(path, limit: 4096)
            let line = String(decoding: bytes.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
            guard (16...256).contains(line.utf8.count), line.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw VaultError(
                    .usage,
                    """
                        the metrics token in \(Terminal.printable(path)) must be one line of 16 to 256 printable \
                        characters
                        """)
            }
            return line
        }

        /// `HOST:PORT`, `[V6]:PORT` or `:PORT`.
        static func address(_ text: String) throws -> (String, Int) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                (0...65535).contains(port)
            else {
                throw VaultError(.usage, "--listen takes HOST:PORT, not '\(Terminal.printable(text))'")
            }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host.isEmpty ? "127.0.0.1" : host, port)
        }
    }

    /// `vault receive key`: the receiver's public key, for stations' `--receipt-key`.
    struct Key: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Print the receiver's public key (made when missing), for 'destination add --receipt-key'.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let receiver = try await options.receiver(serving: false)
            Terminal.out(Hex.encode(receiver.publicKey) + "\n")
        }
    }

    /// `vault receive station`: the stations that may send batches.
    struct Stations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "station",
            abstract: "List, add or remove the stations that may send batches.",
            subcommands: [List.self, Add.self, Remove.self],
            defaultSubcommand: List.self)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive

        var parentOptions: GlobalOptions { global.merged(with: group.parentOptions) }
    }
}

extension VaultCommand.Receive.Stations {
    /// `vault receive station list`.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the stations (the default).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Stations
        @OptionGroup var result: ResultOptions

        struct Entry: Encodable {
            var name: String
            var head: String?
            var batches: Int
            var documents: Int
            var bytes: UInt64
            /// When its last batch was taken, or its last refusal recorded, whichever is later.
            var lastSeen: String?
            var lastBatch: String?
            var lastRefusal: Refusal?
            /// Refusals recorded: once per code until a batch of the station is taken.
            var refusalsRecorded: Int
            var alerts: Int
        }

        struct Refusal: Encodable {
            var time: String
            var code: String
        }

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let book = try await options.officeBook()
            let stations = book.stations.values.sorted { $0.name < $1.name }
            let entries = stations.map { s in
                Entry(
                    name: s.name, head: s.head, batches: s.batches, documents: s.documents, bytes: s.bytes,
                    lastSeen: [s.lastBatchMillis, s.lastRefusal?.millis].compactMap { $0 }.max().map(JSONOutput.iso),
                    lastBatch: s.lastBatchMillis.map(JSONOutput.iso),
                    lastRefusal: s.lastRefusal.map { Refusal(time: JSONOutput.iso(millis: $0.millis), code: $0.code) },
                    refusalsRecorded: s.refusalsRecorded, alerts: s.alerts.count)
            }
            // A removed station's token used since: its name and when.
            struct Used: Encodable {
                var name: String
                var time: String
            }
            let used = book.removedTokensUsed.map { Used(name: $0.name, time: JSONOutput.iso(millis: $0.millis)) }
            if result.json {
                struct Result: Encodable {
                    var stations: [Entry]
                    var removedTokensUsed: [Used]
                }
                Terminal.out(JSONOutput.line(Result(stations: entries, removedTokensUsed: used)))
                return
            }
            for u in used {
                Terminal.warn("the token of removed station \(u.name) was used at \(u.time) (it was refused)")
            }
            if stations.isEmpty {
                Terminal.err("vault: no stations (add one with 'vault receive station add NAME')")
                return
            }
            for e in entries {
                var line =
                    "\(e.name)  last seen \(e.lastSeen ?? "never")  \(e.batches) batch\(e.batches == 1 ? "" : "es"), "
                    + "\(e.documents) document\(e.documents == 1 ? "" : "s"), \(ByteSize.text(e.bytes))"
                line += "  head \(e.head ?? "none received yet")"
                if let r = e.lastRefusal { line += "  last refusal \(r.time) \(r.code)" }
                if e.alerts > 0 { line += "  \(e.alerts) alert\(e.alerts == 1 ? "" : "s")" }
                Terminal.out(line + "\n")
            }
        }
    }

    /// `vault receive station add NAME`.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a station and print its token, once (only a keyed hash of it is kept).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Stations

        @Argument(
            help: ArgumentHelp(
                "The station's name (letters, digits, '-', '_' and '.', up to 64; first a letter or digit).",
                valueName: "name"))
        var name: String

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            guard Receiver.isStationName(name) else {
                throw VaultError(
                    .usage,
                    "'\(Terminal.printable(name))' is not a station name "
                        + "(letters, digits, '-', '_' and '.', up to 64, the first a letter or digit)")
            }
            let token = try await options.receiver(serving: false).addStation(name)
            Terminal.out(token + "\n")
            Terminal.err("vault: added station \(name); give it this token (VAULT_UPLOAD_TOKEN): it is not shown again")
        }
    }

    /// `vault receive station remove NAME`.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a station: its token is refused from now on.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Stations

        @Argument(help: ArgumentHelp("The station's name.", valueName: "name"))
        var name: String

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try await options.receiver(serving: false).removeStation(name)
            Terminal.err("vault: removed station \(Terminal.printable(name)) (its batches stay in the history)")
        }
    }
}

extension VaultCommand.Receive {
    /// `vault receive batches`: the batches the office took, from its records.
    struct Batches: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "batches",
            abstract: "List the batches the office took (oldest first), from a folder's history or a store's log.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive
        @OptionGroup var result: ResultOptions

        @Option(help: ArgumentHelp("Only this station's batches.", valueName: "name"))
        var station: String?

        struct Entry: Encodable {
            var time: String
            var station: String
            var wire: String
            var key: String
            var sealed: Bool
            var bytes: UInt64
            var documents: [Document]
        }

        struct Document: Encodable {
            var id: String
            var stationID: String?
            var name: String?
            var size: UInt64?
            var sha256: String?
        }

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let book = try await options.officeBook()
            let batches = book.batches.filter { station == nil || $0.station == station }
            if let station, batches.isEmpty, book.stations[station] == nil {
                throw VaultError(
                    .notFound, "there is no station named '\(Terminal.printable(station))' and no batch of one")
            }
            let entries = batches.map { b in
                Entry(
                    time: JSONOutput.iso(millis: b.timeMillis), station: b.station, wire: b.wire, key: b.key,
                    sealed: b.sealed, bytes: b.bytes,
                    documents: b.documents.enumerated().map { i, d in
                        // A store's entries from before names were kept there know a document by id only.
                        Document(
                            id: d.id.hex, stationID: b.stationIDs?[i].hex, name: d.name.isEmpty ? nil : d.name,
                            size: d.name.isEmpty ? nil : d.size, sha256: d.sha256.isEmpty ? nil : d.sha256)
                    })
            }
            if result.json {
                struct Result: Encodable { var batches: [Entry] }
                Terminal.out(JSONOutput.line(Result(batches: entries)))
                return
            }
            if entries.isEmpty {
                Terminal.err("vault: no batches" + (station.map { " from station \(Terminal.printable($0))" } ?? ""))
                return
            }
            var text = ""
            for e in entries {
                let n = e.documents.count
                text +=
                    "\(e.time)  \(e.station)  \(e.wire)\(e.sealed ? " sealed" : "")  "
                    + "\(n) document\(n == 1 ? "" : "s")  \(ByteSize.text(e.bytes))  \(Terminal.printable(e.key))\n"
                // Each document: the office's id, the station's, its size and its name with folders.
                for d in e.documents {
                    let station = d.stationID ?? "unknown".padded(to: 32)
                    let name = d.name.map(Terminal.printable) ?? "(no name kept)"
                    text += "    \(d.id)  station's \(station)  \(d.size.map(ByteSize.text) ?? "?")  \(name)\n"
                }
            }
            Terminal.out(text)
        }
    }

    /// `vault receive operator`: who may sign in to the browser view.
    struct Operators: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "operator",
            abstract: "List, add or remove the operators who sign in to the browser view (/ui/).",
            subcommands: [List.self, Add.self, Remove.self],
            defaultSubcommand: List.self)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive

        var parentOptions: GlobalOptions { global.merged(with: group.parentOptions) }
    }
}

extension VaultCommand.Receive.Operators {
    /// `vault receive operator list`.
    struct List: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the operators (the default).")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Operators
        @OptionGroup var result: ResultOptions

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            let names = try await OperatorAccounts(home: try await options.officeHome()).names
            if result.json {
                struct Result: Encodable { var operators: [String] }
                Terminal.out(JSONOutput.line(Result(operators: names)))
                return
            }
            if names.isEmpty {
                Terminal.err("vault: no operators (add one with 'vault receive operator add NAME')")
                return
            }
            for name in names { Terminal.out(name + "\n") }
        }
    }

    /// `vault receive operator add NAME`.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add an operator; their password is kept only as an Argon2id hash.",
            discussion: """
                The operator's password is read like 'vault passwd' reads a new one: from \
                --new-password-file FILE, else $VAULT_NEW_PASSWORD, else a no-echo prompt asked twice.
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Operators

        @Argument(
            help: ArgumentHelp(
                "The operator's name (letters, digits, '-', '_' and '.', up to 64; first a letter or digit).",
                valueName: "name"))
        var name: String

        @Option(
            help: ArgumentHelp("Read the operator's password from this file (first line).", valueName: "file"),
            completion: .file())
        var newPasswordFile: String?

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            guard OperatorAccounts.isName(name) else {
                throw VaultError(
                    .usage,
                    "'\(Terminal.printable(name))' is not an operator name "
                        + "(letters, digits, '-', '_' and '.', up to 64, the first a letter or digit)"
                )
            }
            let accounts = try await OperatorAccounts(home: try await options.officeHome())
            guard try await !accounts.names.contains(name) else {
                throw VaultError(.alreadyExists, "there is already an operator named '\(name)'")
            }
            let password = try PasswordReader.read(file: newPasswordFile, from: .operatorPassword, confirm: true)
            try await accounts.add(name, password: password)
            Terminal.err("vault: added operator \(name); they sign in at /ui/ of the receiver's address")
        }
    }

    /// `vault receive operator remove NAME`.
    struct Remove: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an operator: they cannot sign in, and their sessions end.")

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var group: VaultCommand.Receive.Operators

        @Argument(help: ArgumentHelp("The operator's name.", valueName: "name"))
        var name: String

        func run() async throws { try await run(parent: group.parentOptions) }

        func execute(_ options: GlobalOptions) async throws {
            try await OperatorAccounts(home: try await options.officeHome()).remove(name)
            Terminal.err("vault: removed operator \(Terminal.printable(name))")
        }
    }
}

extension GlobalOptions {
    /// The vault to read documents from (``open()``), and for one on a store a way to read what
    /// its receivers recorded (to find a document by the id its station reported); nil for a
    /// local vault, whose history holds that.
    func openWithOffice() async throws -> (VaultCore.Vault, (@Sendable () async throws -> OfficeBook)?) {
        guard let store = try await openStore() else { return (try unlock(), nil) }
        let log = SharedReceiverLog(vault: store.vault, client: store.client, location: store.location)
        return (store.vault, { OfficeBook(try await StoreHome(log: log).records().records) })
    }

    /// What the office of the vault these options name recorded, read without changing anything
    /// (no receiver key is made): its stations and batches.
    /// - Throws: ``VaultError/Code/vaultDamaged`` when the records do not verify.
    /// - Throws: ``VaultError/Code/vaultDamaged`` also when the receivers' key is missing or is
    ///   not the one the records name (checked, never made).
    func officeBook() async throws -> OfficeBook {
        let home = try await officeHome()
        let (records, problems) = try await home.records()
        if !problems.isEmpty { throw Receiver.untrusted(problems) }
        _ = try await home.identity(create: false)
        return OfficeBook(records)
    }

    /// Where the office of the vault these options name keeps its records: a local vault's
    /// history, or, for a vault on a store, the store's receivers' log.
    func officeHome() async throws -> any OfficeHome {
        guard let store = try await openStore() else { return FolderHome(vault: try unlock()) }
        return StoreHome(log: SharedReceiverLog(vault: store.vault, client: store.client, location: store.location))
    }

    /// The receiver of the vault these options name: a local vault's own, or, for a vault on a
    /// store (`--vault s3://BUCKET/PREFIX`), one of the receivers sharing that store's log.
    /// - Parameter serving: a server (a local vault's receiver lock is taken).
    func receiver(
        serving: Bool, limits: Receiver.Limits = Receiver.Limits(), identities: [AgeIdentity] = [],
        requireSealed: Bool = false
    ) async throws -> Receiver {
        guard let store = try await openStore() else {
            return try Receiver(
                vault: try unlock(), limits: limits, serving: serving, identities: identities,
                requireSealed: requireSealed)
        }
        let log = SharedReceiverLog(vault: store.vault, client: store.client, location: store.location)
        return try await Receiver.serving(
            StoreHome(log: log), limits: limits, serving: serving, identities: identities, requireSealed: requireSealed)
    }
}
