import AsyncHTTPClient
import Foundation
import VaultCore
import VaultS3
import NIOCore

/// What an upload is asked to do.
public struct UploadOptions: Sendable {
    /// Where batches go.
    public var target: UploadTarget
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
    /// Fail unless a journal of this job exists (`--resume`).
    public var requireJournal = false
    /// How batches go on the wire.
    public var wire = UploadProtocol.json
    /// `form`: the file parts' field name.
    public var formFieldName = "files[]"
    /// `form`: text fields sent with every batch.
    public var formFields: [FormBody.Field] = []
    /// `tus`: bytes per PATCH (halved on 413, down to 256 KiB).
    public var tusChunkSize = 4 << 20
    /// `s3`: the bucket, prefix, store and credentials.
    public var s3: S3Target?
    /// `s3` without credentials: the back office's presign endpoint (docs/UPLOAD.md).
    public var presignURL: String?
    /// `s3` with presigned URLs: bytes per part.
    public var s3PartSize: UInt64 = 8 << 20
    /// Allow `http://` part URLs to hosts that are not loopback (`--insecure-http`).
    public var insecureHTTP = false

    /// Options for `target`.
    public init(target: UploadTarget) { self.target = target }
}

/// How batches go on the wire (`--protocol`).
public enum UploadProtocol: String, CaseIterable, Sendable {
    /// One request per batch, its body the JSON payload `{"Files":[…]}` (base64).
    case json
    /// One `multipart/form-data` request per batch: one file part per document (raw bytes).
    case form
    /// tus 1.0 resumable uploads: one upload per batch (its JSON payload), sent in checksummed
    /// chunks that survive dropped connections and restarts.
    case tus
    /// S3 objects: each batch's JSON payload as `PREFIX/<run>/batch-NNNN.json`, by multipart
    /// upload with `Content-MD5` on every part, resumable.
    case s3
}

/// What one attempt at a batch came to; each has one handler in ``Uploader``.
enum AttemptOutcome: Sendable {
    /// The server has the batch.
    case confirmed(status: Int, duplicate: Bool)
    /// A transient failure: try again after a delay (the server's `Retry-After`, if any).
    case retry(reason: String, retryAfter: Double?)
    /// The batch is too large for the server (413): why, and what the server said.
    case split(reason: String, serverSays: String)
    /// A document failed authentication mid-stream; the request was aborted.
    case skip(DocumentFailure)
    /// The server refused for good (credentials, other 4xx).
    case refused(VaultError)
    /// tus: the attempt ended (a dropped connection, a 5xx) after the server acknowledged more
    /// of the batch, up to `at`; the next attempt continues from the server's offset.
    case resume(at: UInt64, reason: String)
}

/// What the uploader reports as it works.
public enum UploadEvent: Sendable {
    /// The run is planned (or resumed): totals, and how much was confirmed before.
    case started(runID: String, batches: Int, documents: Int, payloadBytes: UInt64, confirmedBatches: Int, resumed: Bool)
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
    /// A document was left out (`--skip-bad`).
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
    /// Batches in the run, and how many of them were already confirmed before this command.
    public var batches: Int
    public var alreadyConfirmed: Int
    /// Documents delivered.
    public var documents: Int
    /// Their ids, batch by batch.
    public var documentIDs: [String] = []
    /// Payload bytes of the run.
    public var payloadBytes: UInt64
    /// Retries this command made.
    public var retries: Int
    /// Documents left out.
    public var skipped: Int
    /// tus: payload bytes the server already had when batches resumed (not sent again).
    public var resumedBytes: UInt64 = 0
}

/// Streams batch payloads to a server, one batch at a time, journaling each batch's state.
///
/// For each unconfirmed batch: a request with the exact `Content-Length`, `Content-Type:
/// application/json`, an `Idempotency-Key` and `X-Vault-Batch: i/n`, its body produced while
/// it is sent. 2xx confirms it (journaled at once); 408, 429, 5xx, timeouts and connection errors
/// are retried with exponential backoff, full jitter and `Retry-After`, a bounded number of
/// times; 401/403 stop at once; 413 splits a multi-document batch in two (and fails for a single
/// document, naming the limit); other 4xx stop with the server's message. A document that fails
/// authentication aborts the request, so the server never gets a complete body holding it.
public final class Uploader: @unchecked Sendable {
    // @unchecked: run() is used from one task; the event sink tolerates calls from the
    // client's body-pulling task, which never overlap with the uploader's own.
    let vault: Vault
    private let records: [DocumentID: DocumentRecord]
    private let order: [DocumentRecord]
    let options: UploadOptions
    let onEvent: @Sendable (UploadEvent) -> Void
    let transport: any UploadTransport
    private let job: String
    /// tus: what the server offers (asked once), the current chunk size, bytes not resent.
    var tusServer: TusCapabilities?
    var tusChunkSize: Int
    var resumedBytes: UInt64 = 0
    /// `s3`: the client, made once.
    private let s3Lock = NSLock()
    private var s3ClientMade: S3Client?
    /// Documents and plaintext bytes before each batch (for the progress counter), made once
    /// for the batches as they stand and again after a split or a skip: summing them for every
    /// batch cost O(n²) (a fifth of an upload of 100,000 documents). Under `prefixLock`.
    private var prefix: (documents: [Int], bytes: [UInt64])?
    private let prefixLock = NSLock()
    var s3BucketChecked = false
    /// `X-Vault-Log-Head: <count>-<tag>`: the vault's history head when the run started, sent
    /// with every batch so the back office keeps a copy of it (docs/UPLOAD.md).
    lazy var logHeadHeader: [(String, String)] = vault.storedHead().map { [("X-Vault-Log-Head", $0.description)] } ?? []
    /// Plaintext bytes and documents over the whole run, shared by its batches as in an export:
    /// `documentStarted` events count positions over the run.
    private(set) var runProgress = ProgressCounter(total: 0, documents: 0)

    /// Prepares an upload of `records` (in this order).
    public convenience init(vault: Vault, records: [DocumentRecord], options: UploadOptions,
                            onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }) throws {
        try self.init(vault: vault, records: records, options: options, transport: HTTPTransport(target: options.target), onEvent: onEvent)
    }

    init(vault: Vault, records: [DocumentRecord], options: UploadOptions, transport: any UploadTransport,
         onEvent: @escaping @Sendable (UploadEvent) -> Void) throws {
        self.vault = vault
        self.order = records
        self.records = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.options = options
        self.transport = transport
        self.onEvent = onEvent
        tusChunkSize = options.tusChunkSize
        job = try UploadJournal.jobID(vault: vault, target: options.target.url, method: options.target.method,
                                      wire: Self.wireDescription(options), limits: options.limits, records: records)
    }

    /// Runs (or resumes) the upload.
    public func run() async throws -> UploadSummary {
        defer { Task { [transport, s3ClientMade] in await transport.shutdown(); await s3ClientMade?.shutdown() } }
        let lock = try FileDescriptor.openOrCreate(try lockPath())
        guard try lock.lockExclusive(wait: false) else {
            throw VaultError(.usage, "another upload of the same documents to the same place is running")
        }
        defer { lock.unlock() }
        var journal = try openJournal()
        let confirmedBefore = journal.batches.filter { $0.status == .complete }.count
        let total = journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }
        onEvent(.started(runID: journal.runId, batches: journal.batches.count, documents: journal.batches.reduce(0) { $0 + $1.documents.count },
                         payloadBytes: total, confirmedBatches: confirmedBefore, resumed: confirmedBefore > 0 || journal.batches.contains { $0.attempts > 0 }))
        let all = journal.batches.flatMap(batchRecords)
        runProgress = ProgressCounter(total: all.reduce(0) { $0 + $1.metadata.size }, documents: all.count)
        var retries = 0
        var i = 0
        while i < journal.batches.count {
            if journal.batches[i].status == .complete { i += 1; continue }
            retries += try await send(index: i, journal: &journal)
            i += 1
        }
        let summary = UploadSummary(runID: journal.runId, batches: journal.batches.count, alreadyConfirmed: confirmedBefore,
                                    documents: journal.batches.reduce(0) { $0 + $1.documents.count },
                                    documentIDs: journal.batches.flatMap(\.documents),
                                    payloadBytes: journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }, retries: retries,
                                    skipped: journal.skipped.count, resumedBytes: resumedBytes)
        onEvent(.finished(batches: summary.batches, documents: summary.documents, payloadBytes: summary.payloadBytes,
                          retries: retries, skipped: summary.skipped))
        return summary
    }

    private func lockPath() throws -> String {
        let dir = vault.store.root + "/uploads"
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        return UploadJournal.lockPath(in: vault.store, job: job)
    }

    private func openJournal() throws -> UploadJournal {
        if !options.newRun, let existing = try UploadJournal.load(from: vault, job: job) {
            // Every document of the journal must still be in the selection.
            for b in existing.batches { for id in b.documents where DocumentID(hex: id).flatMap({ records[$0] }) == nil {
                throw VaultError(.vaultDamaged, "the upload journal names document \(id), which is not in this selection")
            } }
            return existing
        }
        if options.requireJournal {
            throw VaultError(.notFound, "there is no interrupted upload of these documents to \(options.target.redacted)")
        }
        let planned = try BatchPlanner.plan(order, limits: options.limits, format: format(batch: 1, of: 1))
        let runID = UUID().uuidString.lowercased()
        let now = ISO8601DateFormatter().string(from: Date())
        var journal = UploadJournal(job: job, runId: runID, target: options.target.redacted, created: now, updated: now, batches: [])
        journal.batches = try planned.map { b in
            UploadJournal.Batch(documents: b.records.map(\.id.hex), bytes: b.length, status: .pending, attempts: 0,
                                key: try UploadJournal.idempotencyKey(vault: vault, runID: runID, index: b.index, records: b.records))
        }
        try rekey(&journal, from: 0)   // exact lengths (a form's manifest names its batch number)
        try journal.save(to: vault)
        return journal
    }

    func s3Client(_ t: S3Target) -> S3Client {
        s3Lock.lock(); defer { s3Lock.unlock() }
        if let c = s3ClientMade { return c }
        let c = S3Client(endpoint: t.endpoint, region: t.region, credentials: t.credentials, addressing: t.addressing,
                         timeout: options.target.idleTimeout)
        s3ClientMade = c
        return c
    }

    func batchRecords(_ b: UploadJournal.Batch) -> [DocumentRecord] {
        b.documents.compactMap { DocumentID(hex: $0).flatMap { records[$0] } }
    }

    /// Renumbers keys (and lengths) after the batch list changed (a split or a skip): index and
    /// documents are part of the key; batches after `from` have never been sent.
    private func rekey(_ journal: inout UploadJournal, from: Int) throws {
        prefixLock.lock(); prefix = nil; prefixLock.unlock()
        for j in from..<journal.batches.count where journal.batches[j].status != .complete {
            let docs = batchRecords(journal.batches[j])
            journal.batches[j].key = try UploadJournal.idempotencyKey(vault: vault, runID: journal.runId, index: j + 1, records: docs)
            journal.batches[j].bytes = format(batch: j + 1, of: journal.batches.count).length(of: docs)
        }
    }

    /// What every attempt at batch `i` starts from: its documents, format and exact length
    /// (journaled), the payload bytes of the batches before it and of the run, and the
    /// `attempt` event.
    struct BatchAttempt {
        let docs: [DocumentRecord]
        let n: Int
        let format: PayloadFormat
        let length: UInt64
        let before: UInt64
        let total: UInt64
    }

    func beginAttempt(index i: Int, journal: inout UploadJournal, attempt: Int) -> BatchAttempt {
        let docs = batchRecords(journal.batches[i])
        let n = journal.batches.count
        let format = format(batch: i + 1, of: n)
        let length = format.length(of: docs)
        journal.batches[i].bytes = length
        let b = BatchAttempt(docs: docs, n: n, format: format, length: length,
                             before: journal.batches[..<i].reduce(UInt64(0)) { $0 + $1.bytes },
                             total: journal.batches.reduce(UInt64(0)) { $0 + $1.bytes })
        onEvent(.attempt(batch: i + 1, of: n, attempt: attempt, documents: docs.count, payloadBytes: length))
        return b
    }

    /// The batch's payload, readable in chunks from any offset (tus PATCHes, S3 parts).
    func payloadChunks(_ b: BatchAttempt, index i: Int, journal: UploadJournal) -> PayloadChunks {
        let (progress, positionBase) = batchProgress(i, journal: journal)
        let (events, vault) = (onEvent, self.vault)
        return PayloadChunks { start in
            PayloadProducer(vault: vault, records: b.docs, format: b.format, progress: progress, positionBase: positionBase,
                            threads: Parallelism.besideOneStage, startOffset: start) { events(.document($0)) }
        }
    }

    /// The run's progress counter set back to the start of batch `i` (an attempt may be a
    /// retry), and the number of documents before it.
    func batchProgress(_ i: Int, journal: UploadJournal) -> (ProgressCounter, Int) {
        prefixLock.lock()
        defer { prefixLock.unlock() }
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

    /// What the wire format depends on besides the documents, for the job id: the JSON shape
    /// alone (so journals of earlier versions still resume), or the form's settings.
    static func wireDescription(_ o: UploadOptions) -> String {
        switch o.wire {
        case .json: o.shape.rawValue
        case .form: "form\n\(o.formFieldName)\n" + o.formFields.map { "\($0.name)=\($0.value)" }.joined(separator: "\n")
        case .tus: "tus\n" + o.shape.rawValue
        case .s3: "s3\n" + o.shape.rawValue + "\n\(o.s3?.partSize ?? 0)"
        }
    }

    /// The payload format of batch `batch` of `of`. A form's boundary is random for each
    /// request (40 hex digits from the system's generator, a fixed length so the body's length
    /// does not depend on it): nobody, not even a document's author, can know it in advance and
    /// put it in a document to inject a part.
    func format(batch: Int, of: Int) -> PayloadFormat {
        switch options.wire {
        case .json, .tus, .s3: .json(options.shape)
        case .form: .form(FormBody(boundary: "vault-" + Hex.encode(SystemRandom().bytes(20)), fieldName: options.formFieldName,
                                   fields: options.formFields, batch: batch, of: of))
        }
    }

    /// Sends batch `i` until it is confirmed; returns the number of retries it took. Each
    /// attempt ends in an ``AttemptOutcome``, handled below.
    private func send(index i: Int, journal: inout UploadJournal) async throws -> Int {
        var retries = 0
        var attempt = 0
        while true {
            let n = journal.batches.count
            attempt += 1
            journal.batches[i].attempts += 1
            try journal.save(to: vault)
            let outcome = try await self.attempt(index: i, journal: &journal, attempt: attempt)
            let docs = batchRecords(journal.batches[i])
            switch outcome {
            case .confirmed(let status, let duplicate):
                journal.batches[i].status = .complete
                journal.batches[i].confirmedAt = ISO8601DateFormatter().string(from: Date())
                try journal.save(to: vault)
                onEvent(.confirmed(batch: i + 1, of: n, status: status, duplicate: duplicate))
                return retries
            case .split(let reason, let says):
                guard docs.count > 1 else {
                    try journal.save(to: vault)
                    throw VaultError(.uploadRejected,
                                     "document \(docs[0].id.hex.prefix(12)) (\(docs[0].metadata.name)) makes a \(journal.batches[i].bytes)-byte payload, larger than the server accepts (\(reason))\(says)",
                                     hint: "raise the server's size limit, or leave this document out")
                }
                await terminate(journal.batches[i].tusURL)
                let half = docs.count / 2
                journal.batches.replaceSubrange(i...i, with: [Array(docs[..<half]), Array(docs[half...])].map { part in
                    UploadJournal.Batch(documents: part.map(\.id.hex), bytes: 0, status: .pending, attempts: 0, key: "")
                })
                try rekey(&journal, from: i)
                try journal.save(to: vault)
                onEvent(.split(batch: i + 1, into: [i + 1, i + 2]))
                attempt = 0
            case .skip(let f):
                guard options.skipBad else { throw f.error }
                await terminate(journal.batches[i].tusURL)   // the batch's payload changes
                journal.batches[i].tusURL = nil
                journal.batches[i].tusOffset = nil
                journal.batches[i].documents.removeAll { $0 == f.record.id.hex }
                journal.skipped.append(.init(id: f.record.id.hex, code: f.error.code.rawValue))
                runProgress.skip(remaining: f.record.metadata.size)
                try rekey(&journal, from: i)
                try journal.save(to: vault)
                onEvent(.skipped(id: f.record.id, name: f.record.metadata.name, error: f.error))
                attempt -= 1
            case .refused(let e):
                try journal.save(to: vault)
                throw e
            case .resume(let at, let reason):
                // Progress was made: the retry budget is for attempts that get nowhere.
                try journal.save(to: vault)
                attempt = 1
                let delay = options.policy.delay(afterAttempt: 1, retryAfter: nil, unit: Double.random(in: 0..<1))
                onEvent(.retry(batch: i + 1, attempt: attempt, delay: delay, reason: "\(reason); the server has \(at) of \(journal.batches[i].bytes) bytes"))
                retries += 1
                try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            case .retry(let reason, let retryAfter):
                try journal.save(to: vault)
                guard attempt < options.policy.maxAttempts else {
                    let confirmed = journal.batches.filter { $0.status == .complete }.count
                    throw VaultError(.uploadFailed, "batch \(i + 1)/\(n) failed \(attempt) time\(attempt == 1 ? "" : "s"), last: \(reason)",
                                     hint: "\(confirmed) of \(n) batches are confirmed; run the same command again to resume")
                }
                let delay = options.policy.delay(afterAttempt: attempt, retryAfter: retryAfter, unit: Double.random(in: 0..<1))
                onEvent(.retry(batch: i + 1, attempt: attempt, delay: delay, reason: reason))
                retries += 1
                try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            }
        }
    }

    /// One attempt at batch `i`: one request whose body (JSON or form) is produced while it is
    /// sent, with its exact length. Throws only when cancelled.
    private func attempt(index i: Int, journal: inout UploadJournal, attempt: Int) async throws -> AttemptOutcome {
        if options.wire == .tus { return try await tusAttempt(index: i, journal: &journal, attempt: attempt) }
        if options.wire == .s3, let s3 = options.s3 { return try await s3Attempt(index: i, journal: &journal, attempt: attempt, s3: s3) }
        if options.wire == .s3, let presign = options.presignURL {
            return try await presignedAttempt(index: i, journal: &journal, attempt: attempt, endpoint: presign)
        }
        let b = beginAttempt(index: i, journal: &journal, attempt: attempt)
        let (docs, n, format, length, before, total) = (b.docs, b.n, b.format, b.length, b.before, b.total)
        let (progress, positionBase) = batchProgress(i, journal: journal)
        let events = onEvent
        let producer = PayloadProducer(vault: vault, records: docs, format: format, progress: progress, positionBase: positionBase,
                                       threads: Parallelism.besideOneStage) { events(.document($0)) }
        let body = PayloadBody(producer: producer, length: length) { sent in events(.sent(done: before + sent, total: total)) }
        var headers: [(String, String)] = [
            ("Content-Type", format.contentType),
            ("Idempotency-Key", journal.batches[i].key),
            ("X-Vault-Batch", "\(i + 1)/\(n)"),
        ] + logHeadHeader
        if let auth = options.target.authorization { headers.append(("Authorization", auth)) }
        headers += options.target.headers
        let response: UploadResponse
        do {
            response = try await transport.send(body, method: options.target.method, headers: headers)
        } catch {
            if let f = body.failure { return .skip(f) }
            if error is CancellationError { throw error }
            return .retry(reason: Self.describe(error, timeout: options.target.idleTimeout), retryAfter: nil)
        }
        journal.batches[i].httpStatus = response.status
        switch RetryPolicy.decide(status: response.status) {
        case .confirmed:
            return .confirmed(status: response.status, duplicate: response.body.contains("\"duplicate\": true"))
        case .authentication:
            return .refused(VaultError(.uploadUnauthorized, "the server refused the credentials (\(response.status) \(response.reason))",
                                       hint: "check VAULT_UPLOAD_TOKEN, or VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD"))
        case .tooLarge:
            return .split(reason: "\(response.status) \(response.reason)", serverSays: Self.serverSays(response))
        case .reject:
            return .refused(VaultError(.uploadRejected, "the server rejected batch \(i + 1)/\(n): \(response.status) \(response.reason)\(Self.serverSays(response))"))
        case .retry:
            return .retry(reason: "\(response.status) \(response.reason)", retryAfter: RetryPolicy.parseRetryAfter(response.retryAfter))
        }
    }

    static func serverSays(_ r: UploadResponse) -> String {
        let text = r.body.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "" : ": " + String(text.prefix(300))
    }

    /// A transport error in words (no URL with credentials: the client's errors carry none).
    static func describe(_ error: any Error, timeout: Double) -> String {
        let seconds = String(format: "%g s", timeout)
        if let io = error as? IOError { return "connection error: " + String(cString: strerror(io.errnoCode)).lowercased() }
        if let h = error as? HTTPClientError {
            switch h {
            case .readTimeout: return "no answer within \(seconds)"
            case .writeTimeout: return "the server stopped reading for \(seconds)"
            case .connectTimeout: return "could not connect within \(seconds)"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: break
            }
        }
        let text = String(describing: error)
        if text.contains("Connection refused") || text.contains("connectionRefused") { return "connection refused" }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
