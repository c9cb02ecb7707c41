import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOHTTP1
import Synchronization
import VaultCore
import VaultS3
import VaultUpload

extension UploadProtocol.Name: ExpressibleByArgument {}

/// `--method`: any case; the values offered are those an upload takes.
extension RequestMethod: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
    // None offered: the help says which (POST or PUT), and `validate` refuses the others.
    public static var allValueStrings: [String] { [] }
}

extension VaultCommand {
    /// `vault upload`: stream batch payloads to a server.
    struct Upload: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "upload",
            abstract:
                "Stream documents in batches to a server, as {\"Files\":[...]} JSON or multipart/form-data, resumably.",
            discussion: """
                Each batch is produced while it is sent (no plaintext temporary files), with its exact \
                Content-Length, an Idempotency-Key and X-Vault-Batch: i/n. Credentials come from \
                VAULT_UPLOAD_TOKEN (Bearer; or from the file VAULT_UPLOAD_TOKEN_FILE names, or what \
                VAULT_UPLOAD_TOKEN_COMMAND prints) or VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD (Basic). \
                Only documents the destination has not confirmed are sent (the delivery ledger; \
                --new-run sends them again). An interrupted upload to the same URL is finished \
                first, sending no confirmed batch again. A document the server refuses as too \
                large (413 for it alone) is named and left undelivered, the others still go (exit \
                2). --dry-run shows what would be sent (and removed) without sending. The \
                protocols: docs/UPLOAD.md.

                Examples:
                  VAULT_UPLOAD_TOKEN=... vault upload --url https://backoffice.example/batches
                  vault upload --url https://office.example/batches --tag 2026 --progress json
                  vault upload --to office --remove-delivered --dry-run
                  vault upload --url https://backoffice.example/batches --all --tag 2026
                  vault upload --url https://office.example/in.php --protocol form \\
                      --form-field case=4711
                  vault upload --url s3://inbox/station-3      (needs AWS_ACCESS_KEY_ID and
                                                                AWS_SECRET_ACCESS_KEY)
                  vault upload --presign-url https://office.example/presign
                                                               (no S3 credentials here)
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand
        @OptionGroup var progressOptions: ProgressOptions

        @Option(
            name: .customLong("url"),
            help: ArgumentHelp(
                "Where to send the batches: http:// or https://, or s3://BUCKET/PREFIX.", valueName: "url"))
        var urlOption: String?

        @Option(
            name: .customLong("presign-url"),
            help: ArgumentHelp(
                """
                    --protocol s3 without credentials: the back office's presign endpoint (docs/UPLOAD.md), which \
                    hands out presigned part URLs.
                    """,
                valueName: "url"))
        var presignURL: String?

        @Option(
            name: .customLong("to"),
            help: ArgumentHelp(
                "A destination by name ('vault destination add'): its URL and protocol.", valueName: "name"))
        var to: String?

        /// `--url`, or the presign endpoint.
        var url: String { urlOption ?? presignURL ?? "" }

        @OptionGroup var selection: SelectionOptions

        @OptionGroup var batching: BatchOptions

        @OptionGroup var sealing: SealingOptions

        @Option(
            name: .customLong("protocol"),
            help: ArgumentHelp(
                """
                    How batches go: json (one JSON payload per request), form (one multipart/form-data request per \
                    batch, a file part per document), tus (tus 1.0 resumable uploads of the JSON payloads) or s3 \
                    (objects PREFIX/<run>/batch-NNNN.json by multipart upload; the default for an s3:// URL).
                    """,
                valueName: "json|form|tus|s3"))
        var protocolOption: UploadProtocol.Name?

        /// `--protocol`, or s3 for an `s3://` URL, presigned-s3 for a presign endpoint, else
        /// json (`--protocol s3 --presign-url` is presigned-s3).
        var wire: UploadProtocol.Name {
            if protocolOption == .s3 && presignURL != nil { return .presignedS3 }
            return protocolOption
                ?? (url.lowercased().hasPrefix("s3://") ? .s3 : presignURL != nil ? .presignedS3 : .json)
        }

        @Option(
            help: ArgumentHelp(
                "--protocol s3: parts in flight at once (1-16; default 2); each holds one part in memory.",
                valueName: "n"))
        var parallel: Int?

        @Option(
            name: .customLong("part-size"),
            help: ArgumentHelp(
                "--protocol s3: bytes per multipart part (K, M, G suffixes; default 8M, at least 5M).",
                valueName: "size"),
            transform: ByteCount.option)
        var partSize: ByteCount?

        @Option(help: ArgumentHelp("--protocol form: the field name of the file parts.", valueName: "name"))
        var field: String = "files[]"

        @Option(
            name: .customLong("form-field"),
            help: ArgumentHelp(
                "--protocol form: a text field sent with every batch, 'name=value'; repeat for several.",
                valueName: "name=value"))
        var formFields: [String] = []

        @Option(
            name: .customLong("chunk-size"),
            help: ArgumentHelp(
                "--protocol tus: bytes per PATCH (K, M, G suffixes; default 4M; halved on 413).", valueName: "size"),
            transform: ByteCount.option)
        var chunkSize: ByteCount?

        @Option(help: "HTTP method: POST or PUT.")
        var method: RequestMethod = .post

        @Option(
            name: .customLong("header"),
            help: ArgumentHelp("An extra request header, 'Name: value'; repeat for several.", valueName: "header"))
        var headers: [String] = []

        @Option(help: "Retries per batch after the first attempt (network errors, timeouts, 408, 429, 5xx).")
        var retries: Int = 5

        @Option(
            help: ArgumentHelp(
                "Seconds without progress (connecting, sending or waiting for the answer) before an attempt fails.",
                valueName: "seconds"))
        var timeout: Double = 60

        @Option(
            help: ArgumentHelp(
                "Trust the certificate authorities in this PEM file for https:// (a private CA), as curl's --cacert.",
                valueName: "file"))
        var cacert: String?

        @Flag(help: "Leave documents that fail authentication out and go on (exit code 2).")
        var skipBad = false

        @Flag(help: "Only continue an interrupted upload to the same URL; fail if there is none.")
        var resume = false

        @Flag(
            help:
                """
                    Send every selected document, also those the destination has confirmed (by default only what it \
                    has not).
                    """
        )
        var all = false

        @Flag(
            help: "Start a new run of every selected document, delivered or not, never continuing an interrupted one.")
        var newRun = false

        @Flag(
            help:
                """
                    Remove each document from the vault once the destination confirmed its batch (and the history \
                    recorded it).
                    """
        )
        var removeDelivered = false

        @Flag(
            help:
                """
                    Show what would be sent (and, with --remove-delivered, removed), with names and sizes; send and \
                    remove nothing.
                    """
        )
        var dryRun = false

        @OptionGroup var result: ResultOptions

        @Flag(
            help:
                """
                    Allow http:// to a host that is not a loopback address (documents cross the network unencrypted; \
                    credentials are still never sent).
                    """
        )
        var insecureHTTP = false

        @Flag(
            help:
                """
                    The server takes uploads without credentials: send with none (otherwise an upload with none set \
                    is refused before anything is sent, exit 78).
                    """
        )
        var noCredentials = false

        /// The protocol with its options, as validated.
        private func uploadProtocol() throws -> UploadProtocol {
            switch wire {
            case .json:
                return .json
            case .form:
                return .form(
                    FormOptions(
                        fieldName: field,
                        fields: formFields.map { f in
                            let p = f.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                            return FormBody.Field(name: String(p[0]), value: p.count > 1 ? String(p[1]) : "")
                        }))
            case .tus:
                return .tus(TusOptions(chunkSize: chunkSize.map { Int($0.value) } ?? 4 << 20))
            case .presignedS3:
                return .presignedS3(PresignOptions(partSize: partSize?.value ?? 8 << 20, insecureHTTP: insecureHTTP))
            case .s3:
                return .s3(try Self.s3Target(url: url, partSize: partSize?.value, parallel: parallel ?? 2))
            }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            guard let to else { return try await send(options, vault: nil) }
            // A destination by name: its URL and protocol from the sealed list, then the
            // checks any URL gets.
            let vault = try await options.open()
            let (entry, _) = try DestinationList.load(vault).resolve(to)
            guard let entry else { throw VaultError(.usage, "--to takes a destination's name; give a URL with --url") }
            if let added = entry.s3Place, added != S3Environment.place() {
                let now = S3Environment.place()
                throw VaultError(
                    .usage,
                    """
                        destination '\(entry.name)' was added for the S3 endpoint \(added.endpoint) (region \
                        \(added.region)); 
                        """
                        + "this command would reach \(now.endpoint) (region \(now.region)); nothing was sent",
                    hint:
                        """
                            set AWS_ENDPOINT_URL and AWS_REGION as when it was added, or add the other endpoint as a \
                            destination of its own
                            """
                )
            }
            try await naming(entry).send(options, vault: vault, destination: entry)
        }

        /// This command as if the destination's URL and protocol had been given (`--url` or
        /// `--presign-url`, `--protocol`), checked as any URL given is: a named destination is
        /// exactly that, so one set of checks and one `send` serve both.
        func naming(_ entry: DestinationEntry) throws -> Upload {
            var given = self
            given.to = nil
            if entry.uploadProtocol == .presignedS3 {
                given.presignURL = entry.url
                given.protocolOption = protocolOption ?? .s3
            } else {
                given.urlOption = entry.url
                given.protocolOption = protocolOption ?? entry.uploadProtocol
            }
            do {
                try given.validate()
            } catch let e as ValidationError {
                throw VaultError(.usage, "destination '\(entry.name)': \(e.message)")
            }
            return given
        }

        /// Sends to the URL given (or resolved); `vault` when it is open already: parses what
        /// the library's delivery needs, runs it, and renders what it did.
        func send(
            _ options: GlobalOptions, vault opened: VaultCore.Vault?, destination: DestinationEntry? = nil
        ) async throws {
            let uploadOptions = try self.uploadOptions(destination: destination)
            let target = uploadOptions.target
            if !dryRun { try checkCredentials(uploadOptions, destination: destination) }
            // The cleartext rule, before the password is asked.
            if try uploadOptions.checkCleartext() {
                Terminal.warn(
                    "sending documents unencrypted over http:// to \(URLComponents(string: url)?.host ?? url)")
            }
            let vault: VaultCore.Vault
            if let opened { vault = opened } else { vault = try await options.open() }
            let delivery = DocumentDelivery(
                vault: vault, documents: try chosen(in: vault), options: uploadOptions,
                mode: mode, removeDelivered: removeDelivered)
            let plan: DocumentDelivery.Plan
            do {
                plan = dryRun ? try delivery.preview() : try delivery.prepare()
            } catch let e as VaultError {
                throw worded(e, target: target)
            }
            let say = UploadReport(
                target: target, json: result.json, printsSummary: progressOptions.printsSummary,
                warnsAtEnd: progressOptions.resolved == .none, removeDelivered: removeDelivered)
            if dryRun { return say.preview(plan, shape: uploadOptions.shape) }
            if !plan.deliveredBefore.isEmpty && !result.json {
                Removal.report(plan.deliveredBefore, why: "delivered before this upload")
            }
            let renderer = ProgressRenderer(mode: progressOptions.resolved)
            // Documents left out, as they were said: without a bar or JSON lines, named at the end.
            let leftOut = Mutex<[String]>([])
            let onEvent: @Sendable (UploadEvent) -> Void = { event in
                if case .skipped(let id, let name, let e) = event {
                    leftOut.withLock { $0.append("skipped \(id.hex.prefix(12)) \(name): \(Hints.withRemedy(e))") }
                }
                renderer.handle(event)
            }
            let started = Date()
            let total: UploadSummary?
            do {
                total = try await delivery.send(plan, onEvent: onEvent)
            } catch var e as VaultError {
                renderer.clear()
                // Documents left out before the run stopped are named, as when it ends.
                if progressOptions.resolved == .none { for line in leftOut.withLock({ $0 }) { Terminal.warn(line) } }
                if e.code == .notFound && resume && e.hint == nil {
                    e.hint = "run the upload without --resume to start one"
                }
                if e.code == .uploadUnauthorized && e.hint == nil {
                    // S3's own credentials signed it, not VAULT_UPLOAD_* (those are for HTTP and presign endpoints).
                    e.hint =
                        uploadOptions.wire.name == .s3
                        ? "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_REGION"
                        : Self.refusedCredentialsHint(destination: noCredentials ? nil : destination)
                }
                throw e
            } catch {
                renderer.clear()
                if progressOptions.resolved == .none { for line in leftOut.withLock({ $0 }) { Terminal.warn(line) } }
                throw error
            }
            renderer.clear()
            let freed = plan.deliveredBefore
            guard let summary = total else {
                return try say.nothingSent(vault, freed: freed) {
                    try !selection.excludes.isEmpty && vault.select(selection.selection(in: vault)).isEmpty
                }
            }
            try say.report(
                summary, vault: vault, freed: freed, seconds: Date().timeIntervalSince(started),
                leftOut: leftOut.withLock { $0 })
        }

        /// The chosen documents: the selection, with what `--exclude` leaves out (an empty vault,
        /// or an exclusion that leaves nothing, chooses none rather than failing).
        func chosen(in vault: VaultCore.Vault) throws -> [DocumentRecord] {
            let all = try vault.select(selection.selection(in: vault))
            if all.isEmpty && (selection.isEverything || !selection.excludes.isEmpty) { return [] }
            return try selection.records(in: vault, verb: "upload")
        }

        /// The runs `--all`, `--new-run` and `--resume` ask for.
        var mode: DocumentDelivery.Mode { resume ? .resumeOnly : newRun ? .newRun : all ? .everything : .undelivered }

        /// The target, protocol and settings, as validated; with what `destination` keeps (its CA
        /// file, its token source) where the command and the environment give none.
        func uploadOptions(destination: DestinationEntry? = nil) throws -> UploadOptions {
            let wire = try uploadProtocol()
            var s3: S3Target?
            if case .s3(let t) = wire { s3 = t }
            let headers = HTTPHeaders(
                headers.map { h in
                    let p = h.split(separator: ":", maxSplits: 1)
                    return (p[0].trimmingSpaces(), p[1].trimmingSpaces())
                })
            guard
                var target = UploadTarget(
                    address: s3?.name ?? url, method: method, headers: headers,
                    // A dry run sends nothing, so it reads no credentials (nor runs a token command).
                    authorization: s3 == nil && !noCredentials && !dryRun
                        ? try Self.authorization(destination: destination) : nil,
                    idleTimeout: timeout)
            else {
                throw VaultError(.usage, "'\(Terminal.printable(String(url.prefix(200))))' is not a URL")
            }
            if let cacert = cacert ?? destination?.cacert {
                let named = self.cacert == nil ? "the CA file destination '\(destination!.name)' keeps" : "--cacert"
                guard FileSystem.kind(of: cacert) == .file else {
                    throw VaultError(.notFound, "no file at \(Terminal.printable(cacert)) (\(named))")
                }
                try UploadTarget.checkCertificates(atPEM: cacert, named: "\(Terminal.printable(cacert)) (\(named))")
                target.trustedCertificates = URL(fileURLWithPath: cacert)
            }
            var o = UploadOptions(target: target, wire: wire)
            o.limits = batching.limits
            o.shape = batching.shape
            o.skipBad = skipBad
            o.policy = RetryPolicy(retries: retries)
            o.allowsCleartext = insecureHTTP
            o.recipients = try sealing.parsed(shape: batching.shape)
            return o
        }

        /// A planning error in the command's words: `--resume` with no run to finish, or one
        /// started with other settings (named by their options).
        func worded(_ error: VaultError, target: UploadTarget) -> VaultError {
            var e = error
            guard e.code == .notFound,
                  resume else { return e }
            guard let other = e.cause as? MismatchedRun else {
                if e.hint == nil { e.hint = "run the upload without --resume to start one" }
                return e
            }
            let option = [
                "batchSize": "--batch-size", "maxBytes": "--max-bytes", "shape": "--shape", "method": "--method",
                "protocol": "--protocol", "field": "--field", "formFields": "--form-field", "partSize": "--part-size"
            ]
            let differ = other.differences.map {
                "\(option[$0.setting] ?? $0.setting) \($0.then) (this command: \($0.now))"
            }
            return VaultError(
                .notFound,
                "the interrupted upload to \(target.redacted) (run \(other.runID.prefix(8))) was started with "
                    + (differ.isEmpty ? "other settings or documents" : differ.joined(separator: ", ")),
                hint: differ.isEmpty
                    ? "run the same command as then to finish it, or 'vault uploads prune' to give it up"
                    : "run it again with those settings to finish it, or 'vault uploads prune' to give it up")
        }
    }
}
