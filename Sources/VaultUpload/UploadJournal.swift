import Crypto
import Foundation
import VaultCore

/// The upload journal: what each batch of an upload job has become, kept in the vault
/// (`uploads/<job>.journal`, 0600, sealed) so an interrupted upload resumes where it stopped
/// and a confirmed batch is never sent again. It holds ids, sizes, digests of payloads and
/// states only: no plaintext, no credentials, and the target only as scheme, host, port and
/// path. Destinations it holds (a tus upload URL, an S3 key) are checked against what the
/// command line named before anything is sent to them, seal or not.
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

    /// The journal's file: a sealed state file (purpose upload journal, role `uploads/<job>`),
    /// so nobody without the password can edit, swap or forge one (docs/FORMAT.md).
    static func path(in store: VaultStore, job: String) -> String { "\(store.root)/uploads/\(job).journal" }

    /// Where versions before sealed state kept the journal, as plain JSON.
    static func legacyPath(in store: VaultStore, job: String) -> String { "\(store.root)/uploads/\(job).json" }

    static func role(job: String) -> String { "uploads/\(job)" }

    /// The lock an upload of `job` holds while it runs (beside its journal).
    static func lockPath(in store: VaultStore, job: String) -> String { "\(store.root)/uploads/\(job).lock" }

    /// A journal is small (ids, sizes and states of one run's batches): anything larger is not one.
    static let maxSize = 16 << 20

    /// The journal of `job`, nil when there is none.
    /// - Throws: ``VaultError/Code/vaultDamaged`` for a journal that was edited, swapped, cut,
    ///   written for another job or vault, or under a retired key, and for an unsealed journal
    ///   of an earlier version: none is trusted, and nothing is sent.
    static func load(from vault: Vault, job: String) throws -> UploadJournal? {
        let store = vault.store
        let p = path(in: store, job: job)
        let legacy = legacyPath(in: store, job: job)
        guard FileSystem.kind(of: p) == .file else {
            if FileSystem.kind(of: legacy) != .missing {
                throw VaultError(.vaultDamaged, "the upload journal \(legacy) is unsealed (written by an earlier version of vault, or by someone else): it is not trusted, and nothing was sent",
                                 hint: "'vault uploads prune' removes it; the upload then starts afresh")
            }
            return nil
        }
        let damagedHint = "'vault uploads prune' removes it; the upload then starts afresh"
        let body: [UInt8]
        do {
            body = try vault.openState(try FileSystem.readFile(p, limit: maxSize), purpose: .uploadJournal, role: role(job: job),
                                       what: "the upload journal \(p)")
        } catch {
            var e = VaultError.from(error)
            if e.code == .vaultDamaged { e.message += "; nothing was sent"; e.hint = damagedHint }
            throw e
        }
        do {
            let journal = try JSONDecoder().decode(UploadJournal.self, from: Data(body))
            guard journal.job == job else { throw VaultError(.vaultDamaged, "it names another job") }
            return journal
        } catch {
            throw VaultError(.vaultDamaged, "the upload journal \(p) is malformed; nothing was sent", hint: damagedHint, cause: error)
        }
    }

    mutating func save(to vault: Vault) throws {
        updated = ISO8601DateFormatter().string(from: Date())
        let dir = vault.store.root + "/uploads"
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write(try vault.sealState(Array(try e.encode(self)), purpose: .uploadJournal, role: Self.role(job: job)),
                             to: Self.path(in: vault.store, job: job))
    }
}
