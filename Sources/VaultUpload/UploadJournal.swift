import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The upload journal: what each batch of an upload job has become, kept in the vault
/// (`uploads/<job>.journal`, 0600, sealed) so an interrupted upload resumes where it stopped
/// and a confirmed batch is never sent again. It holds ids, sizes, digests of payloads and
/// states only: no plaintext, no credentials, and the target only as scheme, host, port and
/// path. Destinations it holds (a tus upload URL, an S3 key) are checked against what the
/// command line named before anything is sent to them, seal or not.
package struct UploadJournal: Codable, Sendable {
    /// One batch's state.
    package struct Batch: Codable, Sendable, Equatable, BatchBookkeeping {
        /// Ids of the documents in the payload, in order.
        package var documents: [DocumentID]
        /// Exact payload length.
        package var bytes: UInt64
        /// `pending`, or `complete` once the server confirmed it.
        package var status: BatchStatus
        /// Attempts made so far.
        package var attempts: Int
        /// The Idempotency-Key it was (or will be) sent with.
        package var key: String
        /// HTTP status of the last answer, if any.
        package var httpStatus: Int?
        /// When the server confirmed it (ISO 8601).
        package var confirmedAt: String?
        /// What the server holds of the batch so far, in the protocol's terms.
        package var wire = WireState.none
        /// A sealed batch to a destination that signs receipts: each attempt's sealed files, as
        /// a receiver that keeps them sealed names them in its receipt — per attempt, each
        /// document's `<SHA-256 hex>:<size>` in order (``PayloadSealing/sealedPair(_:)``). Kept,
        /// so that a receipt answered again for an earlier attempt is checked too.
        package var sealedPairs: [[String]] = []

        init(documents: [DocumentID], bytes: UInt64, status: BatchStatus, attempts: Int, key: String) {
            (self.documents, self.bytes, self.status, self.attempts, self.key) = (
                documents, bytes, status, attempts, key
            )
        }

        // The wire state is written as the flat keys journals have always had (tusURL,
        // tusOffset, s3Key, s3UploadID, s3PartSize, s3Parts), so journals of every version
        // resume, and read back into the one case they describe.
        enum CodingKeys: String, CodingKey {
            case documents, bytes, status, attempts, key, httpStatus, confirmedAt
            case tusURL, tusOffset, s3Key, s3UploadID, s3PartSize, s3Parts, sealedPairs
        }

        package init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            documents = try c.decode([DocumentID].self, forKey: .documents)
            bytes = try c.decode(UInt64.self, forKey: .bytes)
            status = try c.decode(BatchStatus.self, forKey: .status)
            attempts = try c.decode(Int.self, forKey: .attempts)
            key = try c.decode(String.self, forKey: .key)
            httpStatus = try c.decodeIfPresent(Int.self, forKey: .httpStatus)
            confirmedAt = try c.decodeIfPresent(String.self, forKey: .confirmedAt)
            sealedPairs = try c.decodeIfPresent([[String]].self, forKey: .sealedPairs) ?? []
            if let url = try c.decodeIfPresent(String.self, forKey: .tusURL) {
                wire = .tus(url: url, offset: try c.decodeIfPresent(UInt64.self, forKey: .tusOffset) ?? 0)
            } else if let id = try c.decodeIfPresent(String.self, forKey: .s3UploadID),
                let key = try c.decodeIfPresent(String.self, forKey: .s3Key)
            {
                wire = .multipart(
                    MultipartState(
                        key: key, uploadID: id, partSize: try c.decodeIfPresent(UInt64.self, forKey: .s3PartSize),
                        parts: try c.decodeIfPresent([S3Part].self, forKey: .s3Parts) ?? []))
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(documents, forKey: .documents)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(status, forKey: .status)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(key, forKey: .key)
            try c.encodeIfPresent(httpStatus, forKey: .httpStatus)
            try c.encodeIfPresent(confirmedAt, forKey: .confirmedAt)
            if !sealedPairs.isEmpty { try c.encode(sealedPairs, forKey: .sealedPairs) }
            switch wire {
            case .none: break
            case .tus(let url, let offset):
                try c.encode(url, forKey: .tusURL)
                try c.encode(offset, forKey: .tusOffset)
            case .multipart(let m):
                try c.encode(m.key, forKey: .s3Key)
                try c.encode(m.uploadID, forKey: .s3UploadID)
                try c.encodeIfPresent(m.partSize, forKey: .s3PartSize)
                try c.encode(m.parts, forKey: .s3Parts)
            }
        }
    }

    /// What a server holds of a batch that is not confirmed yet: nothing known, a tus upload, or
    /// an S3 multipart upload. Destinations in it are checked against the command line before
    /// use, seal or not.
    package enum WireState: Sendable, Equatable {
        /// Nothing the next attempt can continue.
        case none
        /// tus: the upload's URL on the server (kept so a resumed run continues the same upload;
        /// on a server without authentication it works as a capability) and the offset the
        /// server last acknowledged.
        case tus(url: String, offset: UInt64)
        /// S3, direct or presigned: a multipart upload under way.
        case multipart(MultipartState)
    }

    /// An S3 multipart upload under way: the object key, the upload's id and part size, and each
    /// part the store confirmed (number and MD5, which is its ETag).
    package struct MultipartState: Sendable, Equatable {
        package var key: String
        package var uploadID: String
        package var partSize: UInt64?
        package var parts: [S3Part]
    }

    /// A part an S3 store confirmed.
    package struct S3Part: Codable, Sendable, Equatable {
        package var number: Int
        package var md5: String
    }

    /// A document left out (damaged, with skipping asked for).
    package struct Skip: Codable, Sendable {
        /// Its id.
        package var id: DocumentID
        /// The error code.
        package var code: String
    }

    /// Journal format version.
    package var version = 1
    /// The job: a digest of the target, method, shape, limits and the selected documents.
    package var job: String
    /// The run id (random, kept across resumes; part of every Idempotency-Key).
    package var runId: String
    /// Where it goes (no credentials, no query).
    package var target: String
    /// The destination's identity (``DestinationIdentity``) when the run began: what its
    /// confirmed batches are recorded at, whatever the environment of a later command. Nil in
    /// journals of earlier versions (then the identity of `target`).
    package var identity: String?

    /// The identity the run's deliveries are recorded at; nil when `target` is not a destination.
    package var deliveryIdentity: DestinationIdentity? {
        identity.map(DestinationIdentity.init(recorded:)) ?? DestinationIdentity(url: target)
    }
    /// Created and last updated (ISO 8601).
    package var created: String
    package var updated: String
    /// The batches, in order (413 may split one into two).
    package var batches: [Batch]
    /// Documents left out.
    package var skipped: [Skip] = []
    /// The generation of the journal file (random, new each time it is written whole): the
    /// change log beside it belongs to this generation only (docs/UPLOAD.md, "Journal").
    package var generation: String?
    /// The command without its documents (a keyed digest of the target, method, wire format
    /// and limits): what an interrupted run must match to be finished by a later command whose
    /// selection lacks documents removed since (``UploadJournal/spec(vault:target:method:wire:limits:)``).
    /// Nil in journals of earlier versions (those match by their job).
    package var spec: String?
    /// The settings the run was started with, by option (``UploadOptions/settings``); nil in
    /// journals of earlier versions.
    package var settings: [String: String]?

    enum CodingKeys: String, CodingKey {
        case version, job, runId, target, identity, created, updated, batches, skipped, generation, spec, settings
    }

    /// A new journal (written by its first save).
    init(job: String, runId: String, target: String, created: String, updated: String, batches: [Batch]) {
        (self.job, self.runId, self.target, self.created, self.updated, self.batches) = (
            job, runId, target, created, updated, batches
        )
    }

    /// What the files on disk hold: the batches as last written, the change log's records and
    /// bytes, and the journal file's size. A save appends the batches that changed since.
    private var written: [Batch] = []
    private var writtenSkipped = 0
    private var logRecords = 0
    private var logBytes = 0
    private var baseBytes = 0

    /// The ``Vault/keyedDigest(purpose:_:)`` purpose of journal values.
    static let digestPurpose: UInt64 = 1

    /// The Idempotency-Key of a batch: a keyed digest (see ``Vault/keyedDigest(purpose:_:)``) of
    /// the run id, the batch's 1-based index and each document's id and plaintext SHA-256, as
    /// lower-case hex. Keyed, because the journal is stored in the clear: an unkeyed hash over
    /// document digests would let anyone with the vault folder confirm a guessed document.
    package static func idempotencyKey(
        vault: Vault, runID: String, index: Int, records: [DocumentRecord]
    ) throws -> String {
        var message = Array("vault-upload/2\n\(runID)\n\(index)\n".utf8)
        for r in records { message += Array("\(r.id.hex):\(Hex.encode(r.metadata.sha256))\n".utf8) }
        return try vault.keyedDigest(purpose: digestPurpose, message)
    }

    /// The proof sealed into every document of sealed batch `key` (docs/SECURITY.md, "A resend
    /// is the station's"): a keyed digest of the key, so the station seals the same proof into
    /// every attempt and every run that sends the batch again, and no one without the vault key
    /// can make it. Inside the sealed metadata only: a hop never sees it.
    package static func batchProof(vault: Vault, key: String) throws -> [UInt8] {
        Hex.decode(try vault.keyedDigest(purpose: digestPurpose, Array("vault-sealed-batch/1\n\(key)".utf8))) ?? []
    }

    /// A proof's length of zeros, for planning lengths before any key is made.
    package static let placeholderProof = [UInt8](repeating: 0, count: 32)

    /// The digest of an upload's command without its documents.
    package static func spec(
        vault: Vault, target: String, method: String, wire: String, limits: BatchLimits
    ) throws -> String {
        let bytes = limits.bytes.map(String.init) ?? "-"
        let message = Array("vault-upload-spec/1\n\(target)\n\(method)\n\(wire)\n\(limits.documents)\n\(bytes)\n".utf8)
        return String(try vault.keyedDigest(purpose: digestPurpose, message).prefix(32))
    }

    /// The job id of an upload: the same command over the same documents gives the same job.
    /// Keyed like ``idempotencyKey(vault:runID:index:records:)``.
    /// - Parameter wire: what the wire format depends on (the JSON shape, or the form's settings).
    package static func jobID(
        vault: Vault, target: String, method: String, wire: String, limits: BatchLimits,
        records: [DocumentRecord]
    ) throws -> String {
        let bytes = limits.bytes.map(String.init) ?? "-"
        var message = Array("vault-upload-job/2\n\(target)\n\(method)\n\(wire)\n\(limits.documents)\n\(bytes)\n".utf8)
        for r in records { message += Array("\(r.id.hex):\(Hex.encode(r.metadata.sha256))\n".utf8) }
        return String(try vault.keyedDigest(purpose: digestPurpose, message).prefix(32))
    }

    /// The journal's file: a sealed state file (purpose upload journal, role `uploads/<job>`),
    /// so nobody without the password can edit, swap or forge one (docs/FORMAT.md).
    package static func path(in store: VaultStore, job: String) -> String {
        store.root + "/" + UploadJournalFiles.name(job: job)
    }

    /// Where versions before sealed state kept the journal, as plain JSON.
    static func legacyPath(in store: VaultStore, job: String) -> String { "\(store.path(.uploads))/\(job).json" }

    package static func role(job: String) -> String { UploadJournalFiles.role(job: job) }

    /// The change log beside the journal: `u32 length ‖ sealed state` records, each the batches
    /// one save changed, sealed as the `n`th record of the journal's generation.
    package static func logPath(in store: VaultStore, job: String) -> String {
        store.root + "/" + UploadJournalFiles.logName(job: job)
    }
    package static func logRole(job: String, generation: String, n: Int) -> String {
        UploadJournalFiles.logRole(job: job, generation: generation, n: n)
    }

    /// One record of the change log.
    struct Change: Codable {
        struct Entry: Codable {
            var index: Int
            var batch: Batch
        }
        var updated: String
        var batches: [Entry]
    }

    /// The lock an upload of `job` holds while it runs (beside its journal).
    static func lockPath(in store: VaultStore, job: String) -> String { "\(store.path(.uploads))/\(job).lock" }

    /// A journal is small (ids, sizes and states of one run's batches): anything larger is not one.
    static let maxSize = 16 << 20

    /// The journal of `job`, nil when there is none.
    /// - Throws: ``VaultError/Code/vaultDamaged`` for a journal that was edited, swapped, cut,
    ///   written for another job or vault, or under a retired key, and for an unsealed journal
    ///   of an earlier version: none is trusted, and nothing is sent (the message says so
    ///   unless `listing`: a listing sends nothing either way).
    package static func load(from vault: Vault, job: String, listing: Bool = false) throws -> UploadJournal? {
        let nothingSent = listing ? "" : "; nothing was sent"
        let store = vault.store
        let p = path(in: store, job: job)
        let legacy = legacyPath(in: store, job: job)
        guard FileSystem.kind(of: p) == .file else {
            if FileSystem.kind(of: legacy) != .missing {
                throw VaultError(
                    .vaultDamaged,
                    """
                        the upload journal \(legacy) is unsealed (written by an earlier version of vault, or by \
                        someone else): it is not trusted, and nothing was sent
                        """,
                    remedy: .pruneUploadJournal)
            }
            return nil
        }
        let body: [UInt8]
        do {
            body = try vault.openState(
                try FileSystem.readFile(p, limit: maxSize), purpose: .uploadJournal, role: role(job: job),
                what: "the upload journal \(p)")
        } catch {
            var e = VaultError.from(error)
            if e.code == .vaultDamaged {
                e.message += nothingSent
                e.remedy = .pruneUploadJournal
            }
            throw e
        }
        var journal: UploadJournal
        do {
            journal = try JSONDecoder().decode(UploadJournal.self, from: Data(body))
            guard journal.job == job else { throw VaultError(.vaultDamaged, "it names another job") }
        } catch {
            throw VaultError(
                .vaultDamaged, "the upload journal \(p) is malformed\(nothingSent)", remedy: .pruneUploadJournal,
                cause: error)
        }
        journal.baseBytes = body.count
        try journal.applyLog(from: vault, nothingSent: nothingSent)
        journal.written = journal.batches
        journal.writtenSkipped = journal.skipped.count
        return journal
    }

    /// Applies the change log of this generation. Its first record not opening means it belongs
    /// to another generation (a crash between a whole write and the log's removal): ignored. A
    /// later record that does not open is damage; a torn last record (a crash mid-append) ends it.
    private mutating func applyLog(from vault: Vault, nothingSent: String) throws {
        let path = Self.logPath(in: vault.store, job: job)
        guard let generation,
              FileSystem.kind(of: path) == .file else { return }
        let bytes = try FileSystem.readFile(path, limit: Self.maxSize)
        var offset = 0, n = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(bigEndianBytes: bytes[offset..<offset + 4]))
            guard length <= Self.maxSize,
                  offset + 4 + length <= bytes.count else { break }
            let sealed = Array(bytes[offset + 4..<offset + 4 + length])
            guard
                let body = try? vault.openState(
                    sealed, purpose: .uploadJournal, role: Self.logRole(job: job, generation: generation, n: n + 1),
                    what: "the upload journal's change log")
            else {
                if n == 0 { return }
                throw VaultError(
                    .vaultDamaged,
                    """
                        the change log of the upload journal \(Self.path(in: vault.store, job: job)) fails \
                        authentication at record \(n + 1)\(nothingSent)
                        """,
                    remedy: .pruneUploadJournal)
            }
            guard let change = try? JSONDecoder().decode(Change.self, from: Data(body)),
                  change.batches.allSatisfy({ $0.index >= 0 && $0.index < batches.count }) else {
                throw VaultError(
                    .vaultDamaged,
                    """
                        the change log of the upload journal \(Self.path(in: vault.store, job: job)) is \
                        malformed\(nothingSent)
                        """,
                    remedy: .pruneUploadJournal)
            }
            for e in change.batches { batches[e.index] = e.batch }
            updated = change.updated
            n += 1
            offset += 4 + length
        }
        logRecords = n
        logBytes = offset
    }

    /// Makes the journal's state durable. The journal lists every batch, so writing it whole
    /// after each batch cost O(n²) for n documents; a save appends the batches that changed to
    /// the change log instead (one fsync), and writes the journal whole only when the batches
    /// were split or skipped into, or when the log has grown as large as the journal.
    mutating func save(to vault: Vault) throws {
        updated = UTCTime(Date()).iso8601
        let dir = vault.store.path(.uploads)
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let generation, written.count == batches.count, writtenSkipped == skipped.count, logBytes < baseBytes {
            let changed = batches.indices.filter { batches[$0] != written[$0] }
            guard !changed.isEmpty else { return }
            let change = Change(updated: updated, batches: changed.map { Change.Entry(index: $0, batch: batches[$0]) })
            let sealed = try vault.sealState(
                Array(try e.encode(change)), purpose: .uploadJournal,
                role: Self.logRole(job: job, generation: generation, n: logRecords + 1))
            var frame = [UInt8]()
            frame.appendBigEndian(UInt32(sealed.count))
            frame += sealed
            let path = Self.logPath(in: vault.store, job: job)
            let file = try OpenFile.openOrCreate(path)
            defer { file.close() }
            // a torn record of a crash
            if try file.size() != UInt64(logBytes) { try file.truncate(to: UInt64(logBytes)) }
            try file.write(frame, at: UInt64(logBytes))
            try file.sync()
            if logRecords == 0 { try FileSystem.syncDirectory(dir) }
            logRecords += 1
            logBytes += frame.count
            for i in changed { written[i] = batches[i] }
            return
        }
        generation = Hex.encode(SystemRandom().bytes(16))
        let sealed = try vault.sealState(Array(try e.encode(self)), purpose: .uploadJournal, role: Self.role(job: job))
        try AtomicFile.write(sealed, to: Self.path(in: vault.store, job: job))
        // The log of the generation before goes after the new journal is in place (a crash in
        // between leaves a log that no longer opens: ignored).
        try FileSystem.remove(Self.logPath(in: vault.store, job: job))
        baseBytes = sealed.count
        written = batches
        writtenSkipped = skipped.count
        logRecords = 0
        logBytes = 0
    }
}
