import Crypto
import Foundation
import VaultCore

/// The upload journal: what each batch of an upload job has become, kept in the vault
/// (`uploads/<job>.json`, 0600) so an interrupted upload resumes where it stopped and a
/// confirmed batch is never sent again. It holds ids, sizes, digests of payloads and states
/// only: no plaintext, no credentials, and the target only as scheme, host, port and path.
public struct UploadJournal: Codable, Sendable {
    /// One batch's state.
    public struct Batch: Codable, Sendable, BatchBookkeeping {
        /// Ids of the documents in the payload, in order.
        public var documents: [String]
        /// Exact payload length.
        public var bytes: UInt64
        /// `pending`, or `complete` once the server confirmed it.
        public var status: BatchStatus
        /// Attempts made so far.
        public var attempts: Int
        /// The Idempotency-Key it was (or will be) sent with.
        public var key: String
        /// HTTP status of the last answer, if any.
        public var httpStatus: Int?
        /// When the server confirmed it (ISO 8601).
        public var confirmedAt: String?
        /// tus: the upload's URL on the server (kept so a resumed run continues the same upload;
        /// on a server without authentication it works as a capability) and the offset the
        /// server last acknowledged.
        public var tusURL: String?
        public var tusOffset: UInt64?
        /// S3: the object key, the multipart upload's id and part size, and each part the
        /// store confirmed (number and MD5, which is its ETag).
        public var s3Key: String?
        public var s3UploadID: String?
        public var s3PartSize: UInt64?
        public var s3Parts: [S3Part]?
    }

    /// A part an S3 store confirmed.
    public struct S3Part: Codable, Sendable {
        public var number: Int
        public var md5: String
    }

    /// A document left out with `--skip-bad`.
    public struct Skip: Codable, Sendable {
        /// Its id.
        public var id: String
        /// The error code.
        public var code: String
    }

    /// Journal format version.
    public var version = 1
    /// The job: a digest of the target, method, shape, limits and the selected documents.
    public var job: String
    /// The run id (random, kept across resumes; part of every Idempotency-Key).
    public var runId: String
    /// Where it goes (no credentials, no query).
    public var target: String
    /// Created and last updated (ISO 8601).
    public var created: String
    public var updated: String
    /// The batches, in order (413 may split one into two).
    public var batches: [Batch]
    /// Documents left out.
    public var skipped: [Skip] = []

    /// The ``Vault/keyedDigest(purpose:_:)`` purpose of journal values.
    static let digestPurpose: UInt64 = 1

    /// The Idempotency-Key of a batch: a keyed digest (see ``Vault/keyedDigest(purpose:_:)``) of
    /// the run id, the batch's 1-based index and each document's id and plaintext SHA-256, as
    /// lower-case hex. Keyed, because the journal is stored in the clear: an unkeyed hash over
    /// document digests would let anyone with the vault folder confirm a guessed document.
    public static func idempotencyKey(vault: Vault, runID: String, index: Int, records: [DocumentRecord]) throws -> String {
        var message = Array("vault-upload/2\n\(runID)\n\(index)\n".utf8)
        for r in records { message += Array("\(r.id.hex):\(Hex.encode(r.metadata.sha256))\n".utf8) }
        return try vault.keyedDigest(purpose: digestPurpose, message)
    }

    /// The job id of an upload: the same command over the same documents gives the same job.
    /// Keyed like ``idempotencyKey(vault:runID:index:records:)``.
    /// - Parameter wire: what the wire format depends on (the JSON shape, or the form's settings).
    public static func jobID(vault: Vault, target: String, method: String, wire: String, limits: BatchLimits,
                             records: [DocumentRecord]) throws -> String {
        var message = Array("vault-upload-job/2\n\(target)\n\(method)\n\(wire)\n\(limits.documents)\n\(limits.bytes.map(String.init) ?? "-")\n".utf8)
        for r in records { message += Array("\(r.id.hex):\(Hex.encode(r.metadata.sha256))\n".utf8) }
        return String(try vault.keyedDigest(purpose: digestPurpose, message).prefix(32))
    }

    static func path(in store: VaultStore, job: String) -> String { "\(store.root)/uploads/\(job).json" }

    /// The lock an upload of `job` holds while it runs (beside its journal).
    static func lockPath(in store: VaultStore, job: String) -> String { "\(store.root)/uploads/\(job).lock" }

    static func load(from store: VaultStore, job: String) throws -> UploadJournal? {
        let p = path(in: store, job: job)
        guard FileSystem.kind(of: p) == .file else { return nil }
        do {
            return try JSONDecoder().decode(UploadJournal.self, from: Data(FileSystem.readFile(p, limit: 16 << 20)))
        } catch {
            throw VaultError(.vaultDamaged, "the upload journal \(p) is unreadable", hint: "remove it to start the upload afresh", cause: error)
        }
    }

    mutating func save(to store: VaultStore) throws {
        updated = ISO8601DateFormatter().string(from: Date())
        let dir = store.root + "/uploads"
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write(Array(try e.encode(self)) + [0x0a], to: Self.path(in: store, job: job))
    }
}
