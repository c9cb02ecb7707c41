#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import Synchronization
import VaultS3

/// What an upload is asked to do.
public struct UploadOptions: Sendable {
    /// Where batches go: the URL (for S3 its `s3://BUCKET/PREFIX` name; presigned, the presign
    /// endpoint), method, headers, credentials and timeout.
    public var target: UploadTarget
    /// How batches go on the wire, with the protocol's own options.
    public var wire: UploadProtocol
    /// Batch limits.
    public var limits = BatchLimits()
    /// Payload shape.
    public var shape = PayloadShape.objects
    /// Cut damaged documents out and go on, instead of stopping.
    public var skipBad = false
    /// Retries and backoff.
    public var policy = RetryPolicy()
    /// Start a new run even if a journal of the same job exists.
    public var newRun = false
    /// Fail unless a journal of this job exists.
    public var requireJournal = false
    /// A journal of this job whose batches are all confirmed is not continued (into sending
    /// nothing): a new run starts. For a run of what is undelivered, where a finished run of
    /// the same documents left some out (too large for the server, or damaged). The journal is
    /// still read and checked first.
    public var renewFinished = false
    /// Remove each document once its batch is confirmed and the confirmation recorded (and
    /// every destination of ``alsoRequired`` confirmed it too).
    public var removeDelivered = false
    /// Destinations (identities) that must have confirmed a document too before
    /// ``removeDelivered`` removes it.
    public var alsoRequired: [String] = []
    /// Allow `http://` to a host that is not a loopback literal, where documents cross the network
    /// in the clear. Credentials are never sent that way, allowed or not.
    public var allowsCleartext = false
    /// The Ed25519 public key (32 bytes) of a receiver that signs receipts (`vault receive`): a
    /// batch counts as delivered only with a receipt it signed for exactly the batch's documents,
    /// and the receipt is kept in the history. Nil: the key of the destination with this URL, if
    /// it has one; else a 2xx confirms.
    public var receiptKey: [UInt8]?
    /// Seal every document and its metadata to these age recipients (docs/UPLOAD.md, "Sealed
    /// delivery"); none: plaintext payloads.
    package var recipients: [AgeRecipient] = []

    /// Options for `target`, sent by `wire`.
    public init(target: UploadTarget, wire: UploadProtocol = .json) {
        self.target = target
        self.wire = wire
    }

    /// What the wire format depends on besides the documents, for the job id: the JSON shape
    /// alone (so journals of earlier versions still resume), or the protocol's settings.
    /// The settings a run was started with, by name (`batchSize`, `maxBytes`, `shape`,
    /// `method`, `protocol`, `field`, `formFields`, `partSize`): what a later command is told
    /// when it does not match.
    public var settings: [String: String] {
        var out = [
            "batchSize": String(limits.documents), "maxBytes": limits.bytes.map(String.init) ?? "none",
            "shape": shape.rawValue, "method": target.method.rawValue
        ]
        out["protocol"] = wire.name.rawValue
        switch wire {
        case .form(let f):
            out["field"] = f.fieldName
            out["formFields"] = f.fields.map { "\($0.name)=…" }.joined(separator: ",")
        case .s3(let t):
            out["partSize"] = String(t.partSize)
        case .json, .tus, .presignedS3:
            break
        }
        return out
    }

    /// The cleartext rule, the one place it is decided: documents go over plain `http://` only
    /// to a loopback host, unless ``allowsCleartext``; credentials never. Returns true when
    /// documents will cross a network unencrypted (allowed: the caller may say so).
    /// - Throws: `VaultError.Code.usage` (remedy `VaultError.Remedy.useHTTPS`
    ///   or `VaultError.Remedy.dropCredentials`) when the rule refuses.
    public func checkCleartext() throws -> Bool {
        guard target.isCleartextOverNetwork else { return false }
        let host = URLComponents(string: target.address)?.host ?? target.redacted
        guard allowsCleartext else {
            throw VaultError(
                .usage, "refusing to send documents unencrypted over http:// to \(host)", remedy: .useHTTPS)
        }
        if target.authorization != nil {
            throw VaultError(
                .usage, "refusing to send credentials unencrypted over http:// to \(host)", remedy: .dropCredentials)
        }
        return true
    }

    /// What the wire format depends on, for the job id: the recipients too when sealed (so a
    /// journal of a plain run never resumes as a sealed one), else as earlier versions had it.
    var wireDescription: String {
        plainWireDescription
            + (recipients.isEmpty ? "" : "\nsealed\n" + recipients.map(\.description).joined(separator: "\n"))
    }

    private var plainWireDescription: String {
        switch wire {
        case .json: shape.rawValue
        case .form(let f): "form\n\(f.fieldName)\n" + f.fields.map { "\($0.name)=\($0.value)" }.joined(separator: "\n")
        case .tus: "tus\n" + shape.rawValue
        case .s3(let t): "s3\n" + shape.rawValue + "\n\(t.partSize)"
        case .presignedS3: "s3\n" + shape.rawValue + "\n0"
        }
    }
}

/// What the uploader reports as it works.
public enum UploadEvent: Sendable {
    /// The run is planned (or resumed): totals, and how much was confirmed before.
    case started(
        runID: String, batches: Int, documents: Int, payloadBytes: UInt64, confirmedBatches: Int, resumed: Bool)
    /// An attempt at a batch begins.
    case attempt(batch: Int, of: Int, attempt: Int, documents: Int, payloadBytes: UInt64)
    /// Payload bytes handed to the network for the whole run: confirmed batches plus the current
    /// attempt (it falls back to the batch's start when an attempt is retried).
    case sent(done: UInt64, total: UInt64)
    /// An attempt failed and will be retried after `delay` seconds.
    case retry(batch: Int, attempt: Int, delay: Double, reason: String)
    /// A batch was too large for the server and was split in two.
    case split(batch: Int, into: [Int])
    /// tus: a batch continues from `at`, the offset the server already has.
    case resumed(batch: Int, at: UInt64)
    /// tus: the server refused a chunk as too large (413); chunks are now `bytes` long.
    case chunkSize(bytes: Int, reason: String)
    /// The server confirmed a batch.
    case confirmed(batch: Int, of: Int, status: Int, duplicate: Bool)
    /// A damaged document was left out (skipping was asked for).
    case skipped(id: DocumentID, name: String, error: VaultError)
    /// Document-level events from the payload producer.
    case document(ExportEvent)
    /// Every batch is confirmed.
    case finished(batches: Int, documents: Int, payloadBytes: UInt64, retries: Int, skipped: Int)
}

/// The outcome of an upload.
public struct UploadSummary: Sendable {
    /// The run id.
    public var runID: String
    /// Batches in the run.
    public var batches: Int
    /// Batches of the run the server had confirmed before this call (an interrupted run resumed).
    public var alreadyConfirmed: Int
    /// Documents delivered.
    public var documents: Int
    /// Their ids, batch by batch.
    public var documentIDs: [DocumentID] = []
    /// Payload bytes of the run.
    public var payloadBytes: UInt64
    /// Retries this command made.
    public var retries: Int
    /// Documents left out (damaged with skipping asked for, too large for the server, or refused
    /// by it).
    public var skipped: Int
    /// Those of them the server refused as too large (413 for the document alone): not
    /// delivered, tried again by a later run.
    public var tooLarge: [DocumentID] = []
    /// Those of them the server refused by their place in a batch (vault's receiver: a name it
    /// will not store, a document that does not verify): not delivered, tried again by a later
    /// run.
    public var refused: [DocumentID] = []
    /// Those of them left out before anything was sent: their names are not ones a back office
    /// takes (a relative path without control characters, docs/RECEIVE.md).
    public var unsendable: [DocumentID] = []
    /// How many recipients the batches were sealed to (0: sent plain).
    public var sealedTo = 0
    /// Documents this call sent and had confirmed (a resumed run's earlier batches are not
    /// counted).
    public var sentDocuments = 0
    /// Batches this call sent and had confirmed.
    public var sentBatches = 0
    /// Payload bytes of the batches this call sent and had confirmed.
    public var sentBytes: UInt64 = 0
    /// Documents removed once delivered (`removeDelivered`), as they were.
    public var removed: [DocumentRecord] = []
    /// tus: payload bytes the server already had when batches resumed (not sent again).
    public var resumedBytes: UInt64 = 0
}

/// Streams batch payloads to a server, one batch at a time, journaling each batch's state.
///
/// The protocol's sender makes each attempt; the uploader decides what its outcome
/// means. 2xx confirms a batch (journaled at once); 408, 429, 5xx, timeouts and connection
/// errors are retried with exponential backoff, full jitter and `Retry-After`, a bounded number
/// of times; 401/403 stop at once; 413 splits a multi-document batch in two (and fails for a
/// single document, naming the limit); other 4xx stop with the server's message. A document
/// that fails authentication aborts the request, so the server never gets a complete body
/// holding it.
public final class Uploader: @unchecked Sendable {
    // @unchecked: run() is used from one task; the event sink tolerates calls from the
    // client's body-pulling task, which never overlap with the uploader's own.
    let vault: Vault
    private let records: [DocumentID: DocumentRecord]
    private let order: [DocumentRecord]
    let options: UploadOptions
    let onEvent: @Sendable (UploadEvent) -> Void
    private let transport: any UploadTransport
    private let sender: any BatchSender
    private let job: String
    /// What this call sent and had confirmed, and removed.
    private var sent = (documents: 0, batches: 0, bytes: UInt64(0))
    private var removedIDs: [DocumentRecord] = []
    /// The run's journal, loaded or planned by ``run()``.
    private var journal: UploadJournal!
    /// Payload bytes servers already had when batches resumed (not sent again).
    private var resumedBytes: UInt64 = 0
    /// Documents a new run left out before sending (``undeliverable(_:shape:)``), told as skipped.
    private var leftOutAtStart: [(record: DocumentRecord, error: VaultError)] = []
    /// Documents and plaintext bytes before each batch (for the progress counter), made once
    /// for the batches as they stand and again after a split or a skip: summing them for every
    /// batch cost O(n²) (a fifth of an upload of 100,000 documents).
    private var prefix: (documents: [Int], bytes: [UInt64])?
    /// `X-Vault-Log-Head: <count>-<tag>`: the vault's history head when the run started, sent
    /// with every batch so the back office keeps a copy of it (docs/UPLOAD.md).
    /// The receipt key batches are checked against (``UploadOptions/receiptKey``, or the
    /// destination's), set when the uploader is made.
    private var receiptKey: [UInt8]?
    private lazy var logHeadHeader: [(String, String)] =
        vault.storedHead().map { [("X-Vault-Log-Head", $0.description)] } ?? []
    /// Plaintext bytes and documents over the whole run, shared by its batches as in an export:
    /// `documentStarted` events count positions over the run.
    private var runProgress = ProgressCounter(total: 0, documents: 0)

    /// True when the caller recorded every journal's confirmed batches already (a
    /// ``DocumentDelivery`` does, from the journals it read once): ``run()`` does not again.
    package var journalsRecorded = false

    /// The progress of ``run()``: a consumer slower than the upload sees the latest value, never
    /// a backlog. It ends when the run returns or throws. One consumer.
    public let progress: AsyncStream<UploadProgress>
    private let progressEnd: AsyncStream<UploadProgress>.Continuation

    /// Prepares an upload of `records` (in this order); with `job`, the run of that job (an
    /// interrupted run, ``interruptedRuns(in:options:among:)``).
    public convenience init(
        vault: Vault, records: [DocumentRecord], options: UploadOptions, job: String? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(
            vault: vault, records: records, options: options, transport: HTTPTransport(target: options.target),
            job: job, onEvent: onEvent)
    }

    package init(
        vault: Vault, records: [DocumentRecord], options: UploadOptions, transport: any UploadTransport,
        job: String? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) throws {
        try Self.refuseCleartext(options)
        var options = options
        try vault.refuseUntrustedDestinationList()
        // A destination's recipients seal every upload to its URL, named or not.
        for r in try options.destinationRecipients(in: vault) where !options.recipients.contains(r) {
            options.recipients.append(r)
        }
        if !options.recipients.isEmpty && options.shape != .objects {
            throw VaultError(
                .usage, "sealed delivery carries the objects shape only (each entry has its id and metadata)")
        }
        self.vault = vault
        self.order = records
        self.records = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.options = options
        self.transport = transport
        let (stream, continuation) = AsyncStream.makeStream(
            of: UploadProgress.self, bufferingPolicy: .bufferingNewest(1))
        let tracker = UploadProgressTracker(continuation)
        self.onEvent = { event in
            tracker.take(event)
            onEvent(event)
        }
        progress = stream
        progressEnd = continuation
        sender = Self.sender(for: options, transport: transport)
        receiptKey = try options.receiptKey ?? options.destinationReceiptKey(in: vault)
        if receiptKey != nil, ![.json, .form].contains(options.wire.name) {
            throw VaultError(
                .usage,
                "receipts are signed for json and form batches; this destination is sent by \(options.wire.name)")
        }
        self.job = try job ?? Self.job(vault: vault, records: records, options: options)
    }

    static func refuseCleartext(_ options: UploadOptions) throws {
        _ = try options.checkCleartext()
    }

    /// The job an upload of `records` (in this order) with `options` is: the same command over
    /// the same documents is the same job, whose journal it continues.
    public static func job(vault: Vault, records: [DocumentRecord], options: UploadOptions) throws -> String {
        try UploadJournal.jobID(
            vault: vault, target: UploadJournals.jobTarget(options), method: options.target.method.rawValue,
            wire: options.wireDescription, limits: options.limits, records: records)
    }

    /// The protocol's sender.
    static func sender(for o: UploadOptions, transport: any UploadTransport) -> any BatchSender {
        switch o.wire {
        case .json: RequestSender(target: o.target, transport: transport, shape: o.shape, form: nil)
        case .form(let form): RequestSender(target: o.target, transport: transport, shape: o.shape, form: form)
        case .tus(let tus): TusSender(target: o.target, transport: transport, shape: o.shape, options: tus)
        case .s3(let s3): S3Sender(target: s3, shape: o.shape, timeout: o.target.idleTimeout)
        case .presignedS3(let presign):
            PresignedS3Sender(endpoint: o.target, transport: transport, shape: o.shape, options: presign)
        }
    }

    /// Runs (or resumes) the upload.
    public func run() async throws -> UploadSummary {
        defer {
            Task { [transport, sender] in
                await transport.shutdown(); await sender.shutdown()
            }
        }
        defer { progressEnd.finish() }
        let lock = try OpenFile.openOrCreate(try lockPath())
        guard try lock.lockExclusive(wait: false) else {
            throw VaultError(.usage, "another upload of the same documents to the same place is running")
        }
        defer { lock.unlock() }
        if !journalsRecorded { try Self.recordConfirmedBatches(in: vault) }
        journal = try openJournal()
        let confirmedBefore = journal.batches.filter { $0.status == .complete }.count
        onEvent(
            .started(
                runID: journal.runId, batches: journal.batches.count,
                documents: journal.batches.reduce(0) { $0 + $1.documents.count },
                payloadBytes: journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }, confirmedBatches: confirmedBefore,
                resumed: confirmedBefore > 0 || journal.batches.contains { $0.attempts > 0 }))
        for (d, error) in leftOutAtStart { onEvent(.skipped(id: d.id, name: d.metadata.name, error: error)) }
        let all = journal.batches.flatMap(batchRecords)
        runProgress = ProgressCounter(total: all.reduce(0) { $0 + $1.metadata.size }, documents: all.count)
        var retries = 0
        var i = 0
        while i < journal.batches.count {
            if journal.batches[i].status != .complete {
                let (tries, left) = try await send(index: i)
                retries += tries
                if left { continue }  // batch i was a refused document's alone: the next one is at i now
            }
            i += 1
        }
        var summary = UploadSummary(
            runID: journal.runId, batches: journal.batches.count, alreadyConfirmed: confirmedBefore,
            documents: journal.batches.reduce(0) { $0 + $1.documents.count },
            documentIDs: journal.batches.flatMap(\.documents),
            payloadBytes: journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }, retries: retries,
            skipped: journal.skipped.count,
            tooLarge: journal.skipped.filter { $0.code == VaultError.Code.uploadRejected.rawValue }
                .map(\.id), resumedBytes: resumedBytes)
        summary.refused = journal.skipped.filter { $0.code == VaultError.Code.documentRefused.rawValue }.map(\.id)
        summary.unsendable = journal.skipped.filter { $0.code == VaultError.Code.nameNotDeliverable.rawValue }
            .map(\.id)
        summary.sealedTo = options.recipients.count
        summary.sentDocuments = sent.documents
        summary.sentBatches = sent.batches
        summary.sentBytes = sent.bytes
        summary.removed = removedIDs
        onEvent(
            .finished(
                batches: summary.batches, documents: summary.documents, payloadBytes: summary.payloadBytes,
                retries: retries, skipped: summary.skipped))
        return summary
    }

    private func lockPath() throws -> String {
        let dir = vault.store.path(.uploads)
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        return UploadJournal.lockPath(in: vault.store, job: job)
    }

    private func openJournal() throws -> UploadJournal {
        if !options.newRun, let existing = try UploadJournal.load(from: vault, job: job),
            !(options.renewFinished && existing.batches.allSatisfy({ $0.status == .complete }))
        {
            // Every document still to send must be in the selection (those of confirmed batches
            // may have been removed since).
            for b in existing.batches where b.status != .complete {
                for id in b.documents where records[id] == nil {
                    throw VaultError(
                        .vaultDamaged, "the upload journal names document \(id), which is not in this selection")
                }
            }
            return existing
        }
        if options.requireJournal {
            throw VaultError(
                .notFound, "there is no interrupted upload of these documents to \(options.target.redacted)")
        }
        // What a back office would refuse by its name is known now: it leaves before anything is
        // sent, instead of costing its batch a refusal and a resend.
        leftOutAtStart = Self.undeliverable(order, shape: options.shape).map { d, why in
            (d, VaultError(.nameNotDeliverable, "its name \(why), which no back office takes; it was not sent"))
        }
        let leaving = Set(leftOutAtStart.map(\.record.id))
        let sending = order.filter { !leaving.contains($0.id) }
        // A run whose every document was left out has no batch (the planner gives one empty batch).
        let planned =
            sending.isEmpty
            ? [] : try BatchPlanner.plan(sending, limits: options.limits, format: try self.format(batch: 1, of: 1))
        let runID = UUID().uuidString.lowercased()
        let now = UTCTime(Date()).iso8601
        journal = UploadJournal(
            job: job, runId: runID, target: options.target.redacted, created: now, updated: now, batches: [])
        journal.identity = Destination.identity(of: options.target.address)
        journal.spec = try UploadJournals.spec(vault: vault, options: options)
        journal.settings = options.settings
        journal.batches = try planned.map { b in
            UploadJournal.Batch(
                documents: b.records.map(\.id), bytes: b.length, status: .pending, attempts: 0,
                key: try UploadJournal.idempotencyKey(vault: vault, runID: runID, index: b.index, records: b.records))
        }
        journal.skipped = leftOutAtStart.map { .init(id: $0.record.id, code: $0.error.code.rawValue) }
        try rekey(from: 0)  // exact lengths (a form's manifest names its batch number)
        try journal.save(to: vault)
        return journal
    }

    /// The documents among `records` whose names no back office takes (``DocumentName``), with
    /// why: a payload that names its documents (the objects shape, a form, sealed) does not
    /// carry them. The strings shape carries no name, and so leaves none out.
    package static func undeliverable(
        _ records: [DocumentRecord], shape: PayloadShape
    ) -> [(record: DocumentRecord, why: String)] {
        guard shape == .objects else { return [] }
        return records.compactMap { r in DocumentName.problem(r.metadata.name).map { (r, $0) } }
    }

    private func batchRecords(_ b: UploadJournal.Batch) -> [DocumentRecord] {
        b.documents.compactMap { records[$0] }
    }

    /// Renumbers keys (and lengths) after the batch list changed (a split or a skip): index and
    /// documents are part of the key; batches after `from` have never been sent.
    private func rekey(from: Int) throws {
        prefix = nil
        for j in from..<journal.batches.count where journal.batches[j].status != .complete {
            let docs = batchRecords(journal.batches[j])
            journal.batches[j].key = try UploadJournal.idempotencyKey(
                vault: vault, runID: journal.runId, index: j + 1, records: docs)
            journal.batches[j].bytes = try self.format(batch: j + 1, of: journal.batches.count).length(of: docs)
        }
    }

    // MARK: One batch

    /// Sends batch `i` until it is confirmed; returns the number of retries it took, and
    /// whether the batch left the run instead (its one document was too large for the server).
    /// Each attempt ends in an ``AttemptOutcome``, handled here.
    private func send(index i: Int) async throws -> (retries: Int, left: Bool) {
        // The steering is BatchAttempts' (a value tested on its own); this performs its actions.
        var attempts = BatchAttempts(maxAttempts: options.policy.maxAttempts)
        var action = attempts.take(.start)
        var sealing: PayloadSealing?
        while true {
            switch action {
            case .send(let attempt):
                journal.batches[i].attempts += 1
                try journal.save(to: vault)
                let a = try begin(index: i, attempt: attempt)
                sealing = a.format.sealing
                action = attempts.take(.answered(try await sender.attempt(a)))
            case .confirm(let status, let duplicate, let body):
                let receipt: String?
                do {
                    receipt = try checkReceipt(i, body, sealing: sealing)
                } catch {
                    try journal.save(to: vault)
                    throw error
                }
                try confirm(i, status: status, duplicate: duplicate, receipt: receipt)
                action = attempts.take(.handled(left: false))
            case .split(let reason, let says):
                action = attempts.take(.handled(left: try await split(i, reason: reason, serverSays: says)))
            case .skip(let f):
                try await skip(i, f)
                action = attempts.take(.handled(left: false))
            case .leaveOut(let place, let reason, let otherwise):
                let left = try await leaveOut(i, place: place, reason: reason, otherwise: otherwise)
                action = attempts.take(.handled(left: left))
            case .wait(let attempt, let retryAfter, let reason, let resumedAt):
                try journal.save(to: vault)
                let why = resumedAt.map { "\(reason); the server has \($0) of \(journal.batches[i].bytes) bytes" }
                try await wait(i, attempt: attempt, retryAfter: retryAfter, reason: why ?? reason)
                action = attempts.take(.waited)
            case .refuse(let e):
                try journal.save(to: vault)
                throw e
            case .giveUp(let attempt, let reason):
                try journal.save(to: vault)
                let confirmed = journal.batches.filter { $0.status == .complete }.count
                let n = journal.batches.count
                throw VaultError(
                    .uploadFailed,
                    "batch \(i + 1)/\(n) failed \(attempt) time\(attempt == 1 ? "" : "s"), last: \(reason)",
                    hint: "\(confirmed) of \(n) batch\(n == 1 ? " is" : "es are") confirmed")
            case .done(let retries, let left):
                return (retries, left)
            }
        }
    }

    /// The sender's format for batch `batch` of `of`, sealed to the recipients when there are
    /// any: a new sealing (new file keys) each time, so each attempt has its own, with the
    /// batch's proof (``UploadJournal/batchProof(vault:key:)``) of its `key`; without a key (a
    /// length being planned), a placeholder proof of the same length.
    private func format(batch: Int, of: Int, key: String? = nil) throws -> PayloadFormat {
        let plain = sender.format(batch: batch, of: of)
        guard !options.recipients.isEmpty else { return plain }
        let proof =
            try key.map { try UploadJournal.batchProof(vault: vault, key: $0) } ?? UploadJournal.placeholderProof
        let sealing = PayloadSealing(recipients: options.recipients, batchProof: proof)
        switch plain {
        case .json: return .sealed(sealing)
        case .raw(let framing): return .raw(framing.sealed(sealing))
        case .sealed: return plain
        }
    }

    /// What attempt `attempt` at batch `i` starts from: its documents, format and exact length
    /// (journaled), the payload bytes before it and of the run, its wire state; and the
    /// `attempt` event.
    private func begin(index i: Int, attempt: Int) throws -> BatchAttempt {
        let docs = batchRecords(journal.batches[i])
        let n = journal.batches.count
        let format = try self.format(batch: i + 1, of: n, key: journal.batches[i].key)
        let length = format.length(of: docs)
        journal.batches[i].bytes = length
        let before = journal.batches[..<i].reduce(UInt64(0)) { $0 + $1.bytes }
        let total = journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }
        let (progress, positionBase) = batchProgress(i)
        let (events, vault) = (onEvent, vault)
        onEvent(.attempt(batch: i + 1, of: n, attempt: attempt, documents: docs.count, payloadBytes: length))
        return BatchAttempt(
            index: i, count: n, runID: journal.runId, key: journal.batches[i].key, docs: docs, format: format,
            length: length,
            // A sealed batch is never continued: this attempt's file keys are new (none is ever
            // stored), so what a server holds of an earlier attempt is of other bytes.
            before: before, total: total, wire: options.recipients.isEmpty ? journal.batches[i].wire : .none,
            logHead: logHeadHeader,
            onSent: { events(.sent(done: before + $0, total: total)) }, onEvent: events,
            persist: { [unowned self] state in
                journal.batches[i].wire = state
                try journal.save(to: vault)
            },
            setStatus: { [unowned self] in journal.batches[i].httpStatus = $0 },
            onResumed: { [unowned self] at in
                resumedBytes += at
                events(.resumed(batch: i + 1, at: at))
            },
            makeProducer: { start in
                PayloadProducer(
                    vault: vault, records: docs, format: format, progress: progress, positionBase: positionBase,
                    threads: Parallelism.besideOneStage, startOffset: start
                ) { events(.document($0)) }
            })
    }

    /// The run's progress counter set back to the start of batch `i` (an attempt may be a
    /// retry), and the number of documents before it.
    private func batchProgress(_ i: Int) -> (ProgressCounter, Int) {
        if prefix == nil || prefix!.documents.count != journal.batches.count + 1 {
            var documents = [0], bytes: [UInt64] = [0]
            for b in journal.batches {
                let docs = batchRecords(b)
                documents.append(documents.last! + docs.count)
                bytes.append(bytes.last! + docs.reduce(0) { $0 + $1.metadata.size })
            }
            prefix = (documents, bytes)
        }
        runProgress.reset(done: prefix!.bytes[i])
        return (runProgress, prefix!.documents[i])
    }

    /// A confirmed batch: the journal says so first, then the history (the delivery ledger),
    /// and only then, when asked, its documents are removed. A kill between two steps leaves
    /// nothing unconfirmed removed, and the journal's word is recorded by the next upload
    /// (``recordConfirmedBatches(in:)``).
    /// The receipt `body` holds for batch `i`, checked, when the destination signs receipts:
    /// signed by its key, for this batch's key, naming exactly its documents (SHA-256 and size,
    /// in order). Nil when it does not sign receipts.
    /// - Throws: ``VaultError/Code/uploadRejected`` when the receipt is missing or not right.
    private func checkReceipt(_ i: Int, _ answered: [UInt8], sealing: PayloadSealing?) throws -> String? {
        guard let key = receiptKey else { return nil }
        let n = journal.batches.count
        func refused(_ why: String) -> VaultError {
            VaultError(
                .uploadRejected, "batch \(i + 1)/\(n): \(why); it is not counted as delivered",
                hint: "check that the destination's receipt key is the receiver's")
        }
        let answer: Receipt.Answer
        var body = answered
        do {
            // A sealed batch's answer comes sealed under its documents' file keys: opened here,
            // and the plain answer is what the history keeps (what an audit checks).
            let batch = journal.batches[i]
            if let sealing,
                let opened = try SealedAnswer.open(
                    body, key: sealing.receiptKey(documents: batch.documents, batch: batch.key))
            {
                body = opened
            }
            answer = try Receipt.answer(body)
        } catch {
            throw refused("the receiver answered without a valid receipt (\(VaultError.from(error).message))")
        }
        guard answer.isSigned(by: key) else { throw refused("the receipt is not signed by the destination's key") }
        guard answer.receipt.batch == journal.batches[i].key else { throw refused("the receipt is for another batch") }
        let docs = batchRecords(journal.batches[i])
        // The payload names each document's id unless it is the strings shape; the receipt then
        // must name the same ids.
        let named = options.wire.name == .form || options.shape == .objects
        guard answer.receipt.documents.count == docs.count,
            zip(answer.receipt.documents, docs).allSatisfy({
                $0.sha256 == $1.metadata.sha256 && $0.size == $1.metadata.size && (!named || $0.id == $1.id)
            })
        else { throw refused("the receipt names other documents than the batch's") }
        return String(decoding: body, as: UTF8.self)
    }

    private func confirm(_ i: Int, status: Int, duplicate: Bool, receipt: String? = nil) throws {
        journal.batches[i].status = .complete
        journal.batches[i].confirmedAt = UTCTime(Date()).iso8601
        journal.batches[i].httpStatus = status
        try journal.save(to: vault)
        let documents = batchRecords(journal.batches[i])
        guard let identity = journal.deliveryIdentity ?? DestinationIdentity(url: options.target.address) else {
            throw VaultError(.usage, "'\(options.target.redacted)' is not a destination URL")
        }
        try vault.recordDelivery(
            documents, at: identity,
            detail: UploadJournals.deliveryDetail(
                run: journal.runId, batch: i + 1, of: journal.batches.count, status: status, duplicate: duplicate),
            receipt: receipt)
        sent.documents += documents.count
        sent.batches += 1
        sent.bytes += journal.batches[i].bytes
        if options.removeDelivered {
            let ready = try documents.filter { d in
                try options.alsoRequired.allSatisfy { try vault.delivery(of: d.id, to: $0) != nil }
            }
            // Only what the history itself confirms at every required destination goes.
            let unproven = Set(
                try vault.unprovenDeliveries(ready.map(\.id), at: options.alsoRequired + [identity.value]).ids)
            let proven = ready.filter { !unproven.contains($0.id) }
            if !proven.isEmpty {
                try vault.removeDocuments(proven.map(\.id))
                removedIDs += proven
            }
        }
        onEvent(.confirmed(batch: i + 1, of: journal.batches.count, status: status, duplicate: duplicate))
    }

    /// 413: the batch becomes two halves (never sent: new keys), or, for one document, that
    /// document leaves the run — named, with the server's limit, and not delivered, so a later
    /// run tries it again — and the other batches still go, as rclone and restic go on past a
    /// file that fails. Returns true when batch `i` left the run.
    private func split(_ i: Int, reason: String, serverSays: String) async throws -> Bool {
        let docs = batchRecords(journal.batches[i])
        guard docs.count > 1 else {
            let d = docs[0]
            let error = VaultError(
                .uploadRejected,
                """
                it makes a \(journal.batches[i].bytes)-byte payload, larger than the server accepts \
                (\(reason))\(serverSays)
                """
            )
            return try await leave(d, outOf: i, for: error)
        }
        await sender.abandon(journal.batches[i].wire)
        let half = docs.count / 2
        journal.batches.replaceSubrange(
            i...i,
            with: [Array(docs[..<half]), Array(docs[half...])].map { part in
                UploadJournal.Batch(documents: part.map(\.id), bytes: 0, status: .pending, attempts: 0, key: "")
            })
        try rekey(from: i)
        try journal.save(to: vault)
        onEvent(.split(batch: i + 1, into: [i + 1, i + 2]))
        return false
    }

    /// A document failed authentication: it is cut out of the batch (whose payload changes, so
    /// what the server holds of it is given up), or the upload stops.
    private func skip(_ i: Int, _ f: DocumentFailure) async throws {
        guard options.skipBad else { throw f.error }
        await sender.abandon(journal.batches[i].wire)
        journal.batches[i].wire = .none
        journal.batches[i].documents.removeAll { $0 == f.record.id }
        journal.skipped.append(.init(id: f.record.id, code: f.error.code.rawValue))
        runProgress.skip(remaining: f.record.metadata.size)
        try rekey(from: i)
        try journal.save(to: vault)
        onEvent(.skipped(id: f.record.id, name: f.record.metadata.name, error: f.error))
    }

    /// The server refused batch `i` for the document at `place` (from 1): that document leaves
    /// the run — named, with the server's reason, and not delivered, so a later run tries it
    /// again — and the batch's other documents are sent again, each alone. A
    /// place that is not in the batch refuses the whole batch (`otherwise`). Each refusal takes
    /// one document out, so a server that refuses every one ends the run after as many
    /// requests. Returns true when batch `i` left the run (it held that document alone).
    private func leaveOut(_ i: Int, place: Int, reason: String, otherwise: VaultError) async throws -> Bool {
        let docs = batchRecords(journal.batches[i])
        guard place >= 1 && place <= docs.count else {
            try journal.save(to: vault)
            throw otherwise
        }
        let error = VaultError(.documentRefused, "the server refused it \(reason)")
        if try await leave(docs[place - 1], outOf: i, for: error) { return true }
        // The rest go one document a request: each is sent at most twice (in this batch, then
        // alone) whatever else the server refuses. Sent again together, a large scan went once
        // more for every refused document beside it.
        let rest = journal.batches[i].documents
        if rest.count > 1 {
            journal.batches.replaceSubrange(
                i...i,
                with: rest.map {
                    UploadJournal.Batch(documents: [$0], bytes: 0, status: .pending, attempts: 0, key: "")
                })
            try rekey(from: i)
            try journal.save(to: vault)
        }
        return false
    }

    /// Takes document `d` out of batch `i` and out of the run for `error` — named, and not
    /// delivered, so a later run tries it again — with the batch when `d` was all it held
    /// (then returns true); the batches from `i` on get their new keys.
    private func leave(_ d: DocumentRecord, outOf i: Int, for error: VaultError) async throws -> Bool {
        await sender.abandon(journal.batches[i].wire)
        journal.batches[i].wire = .none
        let alone = batchRecords(journal.batches[i]).count == 1
        if alone { journal.batches.remove(at: i) } else { journal.batches[i].documents.removeAll { $0 == d.id } }
        journal.skipped.append(.init(id: d.id, code: error.code.rawValue))
        runProgress.skip(remaining: d.metadata.size)
        if i < journal.batches.count { try rekey(from: i) }
        prefix = nil
        try journal.save(to: vault)
        onEvent(.skipped(id: d.id, name: d.metadata.name, error: error))
        return alone
    }

    /// Waits before the next attempt at batch `i`, as the policy says.
    private func wait(_ i: Int, attempt: Int, retryAfter: Double?, reason: String) async throws {
        let delay = options.policy.delay(afterAttempt: attempt, retryAfter: retryAfter)
        onEvent(.retry(batch: i + 1, attempt: attempt, delay: delay, reason: reason))
        try await options.policy.clock.sleep(delay)
    }
}

/// The interrupted runs to one destination still worth finishing.
public struct UnfinishedRuns: Sendable, Equatable {
    /// How many runs.
    public var runs: Int
    /// Their unconfirmed batches.
    public var batches: Int

    /// `runs` runs with `batches` unconfirmed batches between them.
    public init(runs: Int, batches: Int) {
        self.runs = runs
        self.batches = batches
    }

    mutating func add(batches more: Int) {
        runs += 1
        batches += more
    }
}

/// An interrupted run that a command would finish: its job and the chosen documents it holds.
public struct InterruptedRun: Sendable {
    /// The run's job (its journal's name).
    public var job: String
    /// Its documents among those chosen.
    public var records: [DocumentRecord]
}

/// An interrupted run to a destination, started with other settings than a command's.
public struct MismatchedRun: Sendable, Equatable {
    /// A setting that differs: its name (as ``UploadOptions/settings`` names it), its value
    /// when the run started, and the command's.
    public struct Difference: Sendable, Equatable {
        /// The setting's name (`batchSize`, `maxBytes`, `shape`, `method`, `protocol`, `field`,
        /// `formFields`, `partSize`).
        public var setting: String
        /// Its value when the run started.
        public var then: String
        /// Its value in this command (`none` when it has none).
        public var now: String
    }

    /// The run's id.
    public var runID: String
    /// The settings that differ, by name; empty for a journal of an earlier version.
    public var differences: [Difference]
}

/// Where an upload has got to.
public struct UploadProgress: Sendable, Equatable {
    /// Plaintext bytes of the documents sent so far, over the whole run (it goes back when a
    /// batch is sent again).
    public var completedBytes: UInt64 = 0
    /// Plaintext bytes in the run.
    public var totalBytes: UInt64 = 0
    /// Batches the server has confirmed, including those confirmed before a resumed run.
    public var confirmedBatches = 0
    /// Batches in the run.
    public var batches = 0
    /// Attempts that failed and were tried again.
    public var retries = 0

    /// `completedBytes` over `totalBytes` (confirmed batches over batches for a run of empty documents).
    public var fractionCompleted: Double {
        if totalBytes > 0 { return Double(completedBytes) / Double(totalBytes) }
        return batches == 0 ? 1 : Double(confirmedBatches) / Double(batches)
    }
}

/// Turns the uploader's events into ``UploadProgress`` values. Events come from the uploader's
/// task and the HTTP client's body-pulling task, one at a time; the lock makes that a rule.
private final class UploadProgressTracker: Sendable {
    private let continuation: AsyncStream<UploadProgress>.Continuation
    private let current = Mutex(UploadProgress())

    init(_ continuation: AsyncStream<UploadProgress>.Continuation) { self.continuation = continuation }

    func take(_ event: UploadEvent) {
        let value: UploadProgress? = current.withLock { p in
            switch event {
            case .started(_, let batches, _, _, let confirmed, _):
                p.batches = batches
                p.confirmedBatches = confirmed
            case .document(.progress(let done, let total)):
                p.completedBytes = done
                p.totalBytes = total
            case .confirmed:
                p.confirmedBatches += 1
            case .retry:
                p.retries += 1
            case .split(_, let into):
                p.batches += into.count - 1
            default:
                return nil
            }
            return p
        }
        if let value { continuation.yield(value) }
    }
}
