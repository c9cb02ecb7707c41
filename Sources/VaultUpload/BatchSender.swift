import AsyncHTTPClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOPosix
import NIOSSL
import VaultCore
import VaultS3

/// One protocol's way of sending a batch (``UploadProtocol``). A sender owns what it learns
/// over a run (a tus server's capabilities, an S3 client) and keeps the batch's server-side
/// state in the journal through the ``BatchAttempt`` it is given; the ``Uploader`` drives every
/// sender through the same loop: attempt → ``AttemptOutcome`` → the outcome's handler.
protocol BatchSender: AnyObject, Sendable {
    /// The payload format of batch `batch` of `of`.
    func format(batch: Int, of: Int) -> PayloadFormat
    /// One attempt at a batch. Throws only when cancelled.
    func attempt(_ batch: BatchAttempt) async throws -> AttemptOutcome
    /// Gives up what the server holds of a batch that will not be continued (it was split, or
    /// a document was cut out of it): best effort.
    func abandon(_ state: UploadJournal.WireState) async
    /// Closes connections.
    func shutdown() async
}

extension BatchSender {
    func abandon(_ state: UploadJournal.WireState) async {}
    func shutdown() async {}
}

/// What one attempt at a batch came to; each has one handler in ``Uploader``.
enum AttemptOutcome: Sendable {
    /// The server has the batch; `body` is what it answered (a receiver's receipt).
    case confirmed(status: Int, duplicate: Bool, body: [UInt8] = [])
    /// A transient failure: try again after a delay (the server's `Retry-After`, if any);
    /// `unreached` when no connection was made, so the server received nothing of it.
    case retry(reason: String, retryAfter: Double?, unreached: Bool = false)
    /// The batch is too large for the server (413): why, and what the server said.
    case split(reason: String, serverSays: String)
    /// A document failed authentication mid-stream; the request was aborted.
    case skip(DocumentFailure)
    /// The server refused for good (credentials, other 4xx).
    case refused(VaultError)
    /// The server refused the batch for one document, named by its place in it (from 1) with
    /// the server's reason (`(400 Bad Request): what it says`); `otherwise` is the refusal of
    /// the whole batch, for a place that is not in it.
    /// `remedy`: what sets it right, when the refusal's code says (a document sealed to others).
    case refusedDocument(place: Int, reason: String, otherwise: VaultError, remedy: VaultError.Remedy? = nil)
    /// The attempt ended (a dropped connection, a 5xx) after the server acknowledged more of
    /// the batch, up to `at`; the next attempt continues from there.
    case resume(at: UInt64, reason: String)

    /// The outcome of an HTTP answer by its status alone (``RetryPolicy/decide(status:)``).
    /// - Parameter what: the request, for a refusal's message ("the server rejected batch 2/5").
    static func of(_ r: UploadResponse, rejected what: String) -> AttemptOutcome {
        switch RetryPolicy.decide(status: r.status) {
        case .confirmed:
            .confirmed(
                status: r.status, duplicate: r.jsonField("duplicate", as: Bool.self) == true, body: Array(r.body.utf8))
        case .authentication:
            r.refusalCode == "station-removed"
                ? .refused(
                    VaultError(
                        .uploadUnauthorized,
                        "the back office removed this station (\(r.status) \(r.reason)): its token is no longer taken",
                        hint: "ask the office to add this station again, then use the new token"))
                : .refused(
                    VaultError(.uploadUnauthorized, "the server refused the credentials (\(r.status) \(r.reason))"))
        case .tooLarge: .split(reason: "\(r.status) \(r.reason)", serverSays: r.serverSays)
        case .outOfSpace:
            // Resending a large batch into a full disk only costs the network: the run stops,
            // its journal kept, and a later run resumes it.
            .refused(
                VaultError(
                    .uploadFailed,
                    """
                        the back office is out of space (\(r.status) \(r.reason)): it kept nothing of the batch, and \
                        nothing more was sent
                        """,
                    hint: "ask the office to free space"))
        case .reject:
            // A refusal by place is a client error (4xx); a 3xx, 501 or 505 refuses the batch.
            if let station = stationRefusal(r, rejected: what) {
                .refused(station)
            } else if (400..<500).contains(r.status), let refusal = r.refusedDocument {
                .refusedDocument(
                    place: refusal.place, reason: "(\(r.status) \(r.reason))\(refusal.says)",
                    otherwise: VaultError(.uploadRejected, "\(what): \(r.status) \(r.reason)\(r.serverSays)"),
                    remedy: refusal.code == "not-sealed-to-this-receiver" ? .checkRecipients : nil)
            } else {
                .refused(
                    VaultError(
                        .uploadRejected, "\(what): \(r.status) \(r.reason)\(r.serverSays)",
                        remedy: r.status == 404
                            ? .checkURLPath : r.refusalCode == "not-sealed-to-this-receiver" ? .checkRecipients : nil))
            }
        case .retry:
            if r.refusalCode == "too-many-failures" {
                // vault's receiver refusing this address for a minute after failed
                // authentications: retrying meanwhile only prolongs it.
                .refused(
                    VaultError(
                        .uploadUnauthorized,
                        """
                        the back office refuses this address for a minute after too many failed authentications \
                        (\(r.status) \(r.reason)); nothing was sent
                        """,
                        hint: "check the upload token, then send again in a minute"))
            } else {
                .retry(reason: "\(r.status) \(r.reason)", retryAfter: RetryPolicy.parseRetryAfter(r.retryAfter))
            }
        }
    }

    /// vault's receiver refusing the station itself, for what its history says of the vault
    /// (docs/RECEIVE.md, "Stations and their history heads"): worded with what to do, not the answer's JSON. Nil
    /// for any other answer.
    static func stationRefusal(_ r: UploadResponse, rejected what: String) -> VaultError? {
        switch r.refusalCode {
        case "station-forked":
            VaultError(
                .uploadRejected,
                """
                \(what): the back office knows another history for this station (\(r.status) \(r.reason)): this \
                vault is not the one its token was given to (it was made again, or replaced)
                """,
                hint: "ask the office to remove and add this station again, then use the new token")
        case "station-rolled-back":
            VaultError(
                .uploadRejected,
                """
                \(what): this vault's history is behind what this station sent before (\(r.status) \(r.reason)): \
                the vault folder was put back to an older copy
                """,
                hint: """
                    put the vault's newest copy back and send again; if there is none, ask the office to remove and \
                    add this station again, then use the new token
                    """)
        default: nil
        }
    }

    /// The outcome of an error thrown during an attempt: a failed document is cut out, a
    /// ``TransientFailure`` or a transport error is retried, and cancellation is thrown on.
    static func of(_ error: any Error, timeout: Double) throws -> AttemptOutcome {
        if let f = error as? DocumentFailure { return .skip(f) }
        if error is CancellationError { throw error }
        if let t = error as? TransientFailure { return .retry(reason: t.reason, retryAfter: t.retryAfter) }
        if let e = error as? VaultError { return .refused(e) }
        // A TLS handshake that fails (an unknown authority, a name mismatch) fails the same way
        // every time: refused at once, not retried.
        if let tls = error as? NIOSSLError {
            // BoringSSL's reason (CERTIFICATE_VERIFY_FAILED, …), without the file and line it adds.
            let text = String(describing: tls)
            let reason = text.firstRange(of: "OPENSSL_internal:").map {
                String(text[$0.upperBound...].prefix { $0 != " " && $0 != "]" })
            } ?? String(text.prefix(200))
            return .refused(
                VaultError(
                    .uploadRejected,
                    "the TLS handshake with the server failed (\(reason)); nothing was sent",
                    remedy: .trustServerCertificate))
        }
        // A name that does not resolve (EAI_NONAME) will not on a retry: a typo in the URL.
        // A temporary failure of the resolver (EAI_AGAIN) is retried as other network errors.
        if let host = TransportError.unknownHost(error) {
            return .refused(
                VaultError(
                    .uploadRejected, "cannot find the host '\(host.host)' (\(host.reason)); nothing was sent",
                    remedy: .checkHostName))
        }
        return .retry(
            reason: TransportError.describe(error, timeout: timeout), retryAfter: nil,
            unreached: TransportError.neverConnected(error))
    }

    /// True when this attempt shows the server received nothing of the run: no connection was
    /// made (refused, unreachable, a name that does not resolve, a failed TLS handshake), or it
    /// has nothing at the URL's path (404 to the run's first batch). An attempt that ends in
    /// any other way may have reached it.
    func reachedNothing(firstBatch: Bool) -> Bool {
        switch self {
        case .retry(_, _, let unreached): unreached
        case .refused(let e):
            e.remedy == .checkHostName || e.remedy == .trustServerCertificate
                || (firstBatch && e.remedy == .checkURLPath)
        default: false
        }
    }
}

/// A failure that may pass, met before the batch's state changed (a tus `OPTIONS` or a
/// presign call answered 503): the attempt ends in ``AttemptOutcome/retry(reason:retryAfter:)``.
struct TransientFailure: Error, CustomStringConvertible {
    var reason: String
    var retryAfter: Double? = nil
    var description: String { reason }
}

extension UploadResponse {
    /// `: <the body's first 300 Unicode scalars>`, or nothing for an empty body; a refusal of
    /// vault's receiver (`{"error":{"code":…,"message":…}}`) in words: `: message (code)`.
    var serverSays: String {
        struct Answer: Decodable {
            struct Refusal: Decodable {
                var code: String
                var message: String?
            }
            var error: Refusal
        }
        if let e = (try? JSONDecoder().decode(Answer.self, from: Data(body.utf8)))?.error {
            return ": " + UploadResponse.cut([e.message, "(\(e.code))"].compactMap { $0 }.joined(separator: " "))
        }
        let text = body.trimmingSpacesAndNewlines()
        return text.isEmpty ? "" : ": " + UploadResponse.cut(text)
    }
}

/// One attempt at one batch, as a sender sees it: the batch's documents, format and exact
/// length, where it stands in the run, its journaled wire state, and the ways to report
/// progress and make state durable. Made by the ``Uploader`` for each attempt.
final class BatchAttempt {
    /// The batch's 0-based index, and the run's batch count.
    let index: Int
    let count: Int
    /// The run id and the batch's `Idempotency-Key`.
    let runID: String
    let key: String
    let docs: [DocumentRecord]
    let format: PayloadFormat
    /// The payload's exact length, and the payload bytes of the batches before it and of the run.
    let length: UInt64
    let before: UInt64
    let total: UInt64
    /// What the server holds of the batch, as journaled.
    private(set) var wire: UploadJournal.WireState
    /// `X-Vault-Log-Head`, sent with every batch (empty when the vault has no history yet).
    let logHead: [(String, String)]
    /// Reports payload bytes of this batch handed to the network (the run's total is added).
    let onSent: @Sendable (UInt64) -> Void
    /// Reports anything else (a smaller tus chunk size).
    let onEvent: @Sendable (UploadEvent) -> Void
    private let persist: (UploadJournal.WireState) throws -> Void
    private let setStatus: (Int) -> Void
    private let onResumed: (UInt64) -> Void
    private let makeProducer: (UInt64) -> PayloadProducer

    init(
        index: Int, count: Int, runID: String, key: String, docs: [DocumentRecord], format: PayloadFormat,
        length: UInt64,
        before: UInt64, total: UInt64, wire: UploadJournal.WireState, logHead: [(String, String)],
        onSent: @escaping @Sendable (UInt64) -> Void,
        onEvent: @escaping @Sendable (UploadEvent) -> Void,
        persist: @escaping (UploadJournal.WireState) throws -> Void, setStatus: @escaping (Int) -> Void,
        onResumed: @escaping (UInt64) -> Void, makeProducer: @escaping (UInt64) -> PayloadProducer
    ) {
        (self.index, self.count, self.runID, self.key, self.docs, self.format) = (
            index, count, runID, key, docs, format
        )
        (self.length, self.before, self.total, self.wire, self.logHead) = (length, before, total, wire, logHead)
        (self.onSent, self.onEvent, self.persist, self.setStatus) = (onSent, onEvent, persist, setStatus)
        (self.onResumed, self.makeProducer) = (onResumed, makeProducer)
    }

    /// `i/n`, as `X-Vault-Batch` and messages name the batch.
    var label: String { "\(index + 1)/\(count)" }
    /// `batch-NNNN.json`, the batch's object or file name.
    var fileName: String { ExportBatch.fileName(index: index + 1) }

    /// Journals the batch's new wire state now.
    func record(_ state: UploadJournal.WireState) throws {
        wire = state
        try persist(state)
    }

    /// Notes the server's last HTTP status (journaled with the next save).
    func answered(_ status: Int) { setStatus(status) }

    /// The server already had `bytes` of the batch: they are not sent again.
    func resumed(at bytes: UInt64) { onResumed(bytes) }

    /// The payload produced from its start, for one request.
    func producer() -> PayloadProducer { makeProducer(0) }

    /// The payload readable in chunks from any offset (tus PATCHes, S3 parts).
    func chunks() -> PayloadChunks { PayloadChunks(make: makeProducer) }
}
