#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import Synchronization
import VaultS3

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
    let records: [DocumentID: DocumentRecord]
    let order: [DocumentRecord]
    let options: UploadOptions
    /// How this run relates to its job's earlier runs and what follows a confirmation.
    let controls: UploadRunControls
    let onEvent: @Sendable (UploadEvent) -> Void
    let transport: any UploadTransport
    let sender: any BatchSender
    /// A capture-only station's documents' metadata file lengths: its batches are captured payloads.
    let captured: CapturedFiles?
    let job: String
    /// What this call sent and had confirmed, and removed.
    var sent = (documents: 0, batches: 0, bytes: UInt64(0))
    var removedIDs: [DocumentRecord] = []
    /// The run's journal, loaded or planned by ``run()``.
    var journal: UploadJournal!
    /// Payload bytes servers already had when batches resumed (not sent again).
    var resumedBytes: UInt64 = 0
    /// False while every attempt of this run, from its journal's start, showed the server
    /// received nothing (``AttemptOutcome/reachedNothing(firstBatch:)``): such a run that stops
    /// leaves no journal, as there is nothing to finish (docs/UPLOAD.md, "Journal").
    var mayHaveReached = true
    /// Documents a new run left out before sending (``undeliverable(_:shape:)``), told as skipped.
    var leftOutAtStart: [(record: DocumentRecord, error: VaultError)] = []
    /// Documents and plaintext bytes before each batch (for the progress counter), made once
    /// for the batches as they stand and again after a split or a skip: summing them for every
    /// batch cost O(n²) (a fifth of an upload of 100,000 documents).
    var prefix: (documents: [Int], bytes: [UInt64])?
    /// `X-Vault-Log-Head: <count>-<tag>`: the vault's history head when the run started, sent
    /// with every batch so the back office keeps a copy of it (docs/UPLOAD.md).
    /// The receipt key batches are checked against (``UploadOptions/receiptKey``, or the
    /// destination's), set when the uploader is made.
    var receiptKey: [UInt8]?
    private lazy var logHeadHeader: [(String, String)] =
        vault.storedHead().map { [("X-Vault-Log-Head", $0.description)] } ?? []
    /// Plaintext bytes and documents over the whole run, shared by its batches as in an export:
    /// `documentStarted` events count positions over the run.
    var runProgress = ProgressCounter(total: 0, documents: 0)

    /// True when the caller recorded every journal's confirmed batches already (a
    /// ``DocumentDelivery`` does, from the journals it read once): ``run()`` does not again.
    package var journalsRecorded = false

    /// The progress of ``run()``: a consumer slower than the upload sees the latest value, never
    /// a backlog. It ends when the run returns or throws. One consumer.
    public let progress: AsyncStream<UploadProgress>
    private let progressEnd: AsyncStream<UploadProgress>.Continuation

    /// Prepares an upload of `records` (in this order); with `job`, the run of that job (an
    /// interrupted run, ``interruptedRuns(in:options:among:)``); `controls` as a plan sets them.
    public convenience init(
        vault: Vault, records: [DocumentRecord], options: UploadOptions, controls: UploadRunControls = .init(),
        job: String? = nil, onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) throws {
        try self.init(
            vault: vault, records: records, options: options, controls: controls,
            transport: HTTPTransport(target: options.target), job: job, onEvent: onEvent)
    }

    package init(
        vault: Vault, records: [DocumentRecord], options: UploadOptions, controls: UploadRunControls = .init(),
        transport: any UploadTransport, job: String? = nil,
        onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) throws {
        try Self.refuseCleartext(options)
        var options = options
        try vault.refuseUntrustedDestinationList()
        // A destination's recipients seal every upload to its URL, named or not.
        for r in try options.destinationRecipients(in: vault) where !options.recipients.contains(r) {
            options.recipients.append(r)
        }
        if vault.capturesOnly {
            try Self.checkCaptured(options)
            captured = CapturedFiles(vault: vault, records: records)
        } else {
            captured = nil
        }
        if !options.recipients.isEmpty && options.shape != .objects {
            throw VaultError(
                .usage, "sealed delivery carries the objects shape only (each entry has its id and metadata)")
        }
        self.vault = vault
        self.order = records
        self.records = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.options = options
        self.controls = controls
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

    /// What a capture-only station's upload cannot be: its documents go as they were sealed at
    /// capture, in the objects shape, sealed to no other recipients.
    static func checkCaptured(_ options: UploadOptions) throws {
        guard options.recipients.isEmpty else {
            throw CapturedDocument.refusal(
                "its documents go sealed to the recipients it was made with, not to others",
                hint: "leave out the upload's recipients (and the destination's)")
        }
        guard options.shape == .objects else {
            throw CapturedDocument.refusal(
                "its documents go in the objects shape (each entry with its id, size and SHA-256)",
                hint: "leave out the strings shape")
        }
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
        mayHaveReached = journal.batches.contains { $0.attempts > 0 }  // a run resumed may have
        do {
            while i < journal.batches.count {
                if journal.batches[i].status != .complete {
                    let (tries, left) = try await send(index: i)
                    retries += tries
                    if left { continue }  // batch i was a refused document's alone: the next one is at i now
                }
                i += 1
            }
        } catch {
            if !mayHaveReached && !journal.batches.contains(where: { $0.status == .complete }) {
                try? UploadJournals.discard(job: job, in: vault)
            }
            throw error
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

    /// The documents among `records` whose names no back office takes (``DocumentName``), with
    /// why: a payload that names its documents (the objects shape, a form, sealed) does not
    /// carry them. The strings shape carries no name, and so leaves none out.
    package static func undeliverable(
        _ records: [DocumentRecord], shape: PayloadShape
    ) -> [(record: DocumentRecord, why: String)] {
        guard shape == .objects else { return [] }
        return records.compactMap { r in DocumentName.problem(r.metadata.name).map { (r, $0) } }
    }

    func batchRecords(_ b: UploadJournal.Batch) -> [DocumentRecord] {
        b.documents.compactMap { records[$0] }
    }

    /// Renumbers keys (and lengths) after the batch list changed (a split or a skip): index and
    /// documents are part of the key; batches after `from` have never been sent.
    func rekey(from: Int) throws {
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
    func send(index i: Int) async throws -> (retries: Int, left: Bool) {
        // The steering is BatchAttempts' (a value tested on its own); this performs its actions.
        var attempts = BatchAttempts(maxAttempts: options.policy.maxAttempts)
        var action = attempts.take(.start)
        var sealing: PayloadSealing?
        while true {
            switch action {
            case .send(let attempt):
                journal.batches[i].attempts += 1
                try journal.save(to: vault)
                PausePoint.reached("upload.attempt")
                let a = try begin(index: i, attempt: attempt)
                sealing = a.format.sealing
                let reachedBefore = mayHaveReached
                mayHaveReached = true  // until the outcome shows otherwise: an attempt that throws may have
                let outcome = try await sender.attempt(a)
                if outcome.reachedNothing(firstBatch: i == 0) { mayHaveReached = reachedBefore }
                try noteSealedPairs(i, sealing)
                action = attempts.take(.answered(outcome))
            case .confirm(let status, let duplicate, let body):
                let receipt: (receipt: String, sealed: [String]?)?
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
            case .leaveOut(let place, let reason, let otherwise, let remedy):
                let left = try await leaveOut(i, place: place, reason: reason, otherwise: otherwise, remedy: remedy)
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
    func format(batch: Int, of: Int, key: String? = nil) throws -> PayloadFormat {
        let plain = sender.format(batch: batch, of: of)
        if let captured {
            if case .raw(let framing) = plain { return .captured(captured.framed(framing)) }
            return .captured(captured)
        }
        guard !options.recipients.isEmpty else { return plain }
        let proof =
            try key.map { try UploadJournal.batchProof(vault: vault, key: $0) } ?? UploadJournal.placeholderProof
        let sealing = PayloadSealing(recipients: options.recipients, batchProof: proof)
        // A receiver without the identity signs for the sealed files: they are noted as they go.
        sealing.notesPairs = receiptKey != nil
        switch plain {
        case .json: return .sealed(sealing)
        case .raw(let framing): return .raw(framing.sealed(sealing))
        case .sealed, .captured: return plain
        }
    }

    /// What attempt `attempt` at batch `i` starts from: its documents, format and exact length
    /// (journaled), the payload bytes before it and of the run, its wire state; and the
    /// `attempt` event.
    func begin(index i: Int, attempt: Int) throws -> BatchAttempt {
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
    func batchProgress(_ i: Int) -> (ProgressCounter, Int) {
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

    /// Waits before the next attempt at batch `i`, as the policy says.
    func wait(_ i: Int, attempt: Int, retryAfter: Double?, reason: String) async throws {
        let delay = options.policy.delay(afterAttempt: attempt, retryAfter: retryAfter)
        onEvent(.retry(batch: i + 1, attempt: attempt, delay: delay, reason: reason))
        try await options.policy.clock.sleep(delay)
    }
}
