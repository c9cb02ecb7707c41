import Foundation
import VaultCore
import VaultS3

/// Where `--protocol s3` puts batches, and with which credentials.
public struct S3Target: Sendable {
    /// The store (`AWS_ENDPOINT_URL`, or AWS's regional endpoint).
    public var endpoint: URL
    public var region: String
    public var credentials: S3Credentials
    public var addressing: S3Addressing
    public var bucket: String
    /// Key prefix without leading or trailing `/` (may be empty).
    public var prefix: String
    /// Bytes per part (at least 5 MiB; grown so that no batch needs over 10,000 parts).
    public var partSize: UInt64
    /// Parts in flight at once (each holds one part in memory).
    public var parallel: Int

    public init(endpoint: URL, region: String, credentials: S3Credentials, addressing: S3Addressing, bucket: String, prefix: String,
                partSize: UInt64 = 8 << 20, parallel: Int = 2) {
        self.endpoint = endpoint
        self.region = region
        self.credentials = credentials
        self.addressing = addressing
        self.bucket = bucket
        self.prefix = prefix.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        self.partSize = partSize
        self.parallel = max(1, parallel)
    }

    /// S3's smallest part (but the last).
    public static let minimumPartSize: UInt64 = 5 << 20
    /// S3's most parts per upload.
    public static let maximumParts: UInt64 = 10_000

    /// The part size for a payload of `length` bytes.
    func partSize(for length: UInt64) -> UInt64 {
        let needed = (length + Self.maximumParts - 1) / Self.maximumParts
        let mib: UInt64 = 1 << 20
        return max(partSize, (needed + mib - 1) / mib * mib)
    }

    /// The object key of batch `index` of run `run`.
    func key(run: String, index: Int) -> String {
        (prefix.isEmpty ? "" : prefix + "/") + "\(run)/" + String(format: "batch-%04d.json", index)
    }
}

extension Uploader {
    /// One attempt at batch `i` as an S3 object `PREFIX/<run>/batch-NNNN.json`: a single PUT with
    /// `Content-MD5` when the payload fits one part, else a multipart upload whose parts are
    /// produced from the seekable payload, each with its exact length and `Content-MD5`, its
    /// ETag checked against the local MD5 and journaled. A resumed batch lists the store's parts
    /// (every page) and sends only those missing or different; an upload the store no longer
    /// knows is checked with a HEAD of the object (already complete) or started afresh.
    func s3Attempt(index i: Int, journal: inout UploadJournal, attempt: Int, s3: S3Target) async throws -> AttemptOutcome {
        let docs = batchRecords(journal.batches[i])
        let n = journal.batches.count
        let format = format(batch: i + 1, of: n, key: journal.batches[i].key)
        let length = format.length(of: docs)
        journal.batches[i].bytes = length
        let before = journal.batches[..<i].reduce(UInt64(0)) { $0 + $1.bytes }
        let total = journal.batches.reduce(UInt64(0)) { $0 + $1.bytes }
        onEvent(.attempt(batch: i + 1, of: n, attempt: attempt, documents: docs.count, payloadBytes: length))
        let client = s3Client(s3)
        let key = journal.batches[i].s3Key ?? s3.key(run: journal.runId, index: i + 1)
        let metadata = [("vault-batch", "\(i + 1)/\(n)"), ("vault-documents", String(docs.count)), ("vault-run", journal.runId)]
        let (progress, positionBase) = batchProgress(i, journal: journal)
        let events = onEvent
        let vault = self.vault
        let chunks = PayloadChunks { start in
            PayloadProducer(vault: vault, records: docs, format: format, progress: progress, positionBase: positionBase,
                            threads: Parallelism.besideOneStage, startOffset: start) { events(.document($0)) }
        }
        let partSize = journal.batches[i].s3PartSize ?? s3.partSize(for: length)
        do {
            if !s3BucketChecked {
                // Some stores create a bucket on the first PUT; a missing bucket is a mistake to name.
                guard try await client.bucketExists(s3.bucket) else {
                    return .refused(VaultError(.uploadRejected, "NoSuchBucket: the bucket \(s3.bucket) does not exist at \(s3.endpoint.absoluteString)",
                                               hint: "create it, or check the bucket name and AWS_ENDPOINT_URL"))
                }
                s3BucketChecked = true
            }
            if length <= partSize {
                let body = try chunks.read(Int(length))
                try await client.putObject(bucket: s3.bucket, key: key, body: body, contentType: "application/json", metadata: metadata)
                onEvent(.sent(done: before + length, total: total))
                return .confirmed(status: 200, duplicate: false)
            }
            // The multipart upload: the journaled one (its parts checked against the store) or a new one.
            var done: [Int: String] = [:]   // part number -> MD5 (hex), confirmed by the store
            if let id = journal.batches[i].s3UploadID {
                do {
                    let listed = Dictionary(try await client.listParts(bucket: s3.bucket, key: key, uploadID: id).map { ($0.number, $0.etag) },
                                            uniquingKeysWith: { _, last in last })
                    for p in journal.batches[i].s3Parts ?? [] where listed[p.number] == p.md5 { done[p.number] = p.md5 }
                    let kept = done.keys.reduce(UInt64(0)) { $0 + min(partSize, length - UInt64($1 - 1) * partSize) }
                    if kept > 0 { onEvent(.resumed(batch: i + 1, at: kept)); resumedBytes += kept }
                } catch let e as VaultError where e.code == .notFound {
                    // Completed before the journal knew, or aborted or expired: the object says which.
                    if let head = try await client.headObject(bucket: s3.bucket, key: key), head.size == length {
                        return .confirmed(status: 200, duplicate: true)
                    }
                    journal.batches[i].s3UploadID = nil
                    journal.batches[i].s3Parts = nil
                }
            }
            if journal.batches[i].s3UploadID == nil {
                journal.batches[i].s3UploadID = try await client.createMultipartUpload(bucket: s3.bucket, key: key, contentType: "application/json",
                                                                                         metadata: metadata)
                journal.batches[i].s3Key = key
                journal.batches[i].s3PartSize = partSize
                journal.batches[i].s3Parts = []
                try journal.save(to: vault.store)
            }
            let id = journal.batches[i].s3UploadID!
            let count = Int((length + partSize - 1) / partSize)
            var sent = done.keys.reduce(UInt64(0)) { $0 + min(partSize, length - UInt64($1 - 1) * partSize) }
            // Up to `parallel` parts in flight: parts are produced here, in order (the payload is
            // read once), and each is sent by its own task; memory holds at most `parallel` parts.
            var missing = (1...count).filter { done[$0] == nil }.makeIterator()
            let (bucket, batch) = (s3.bucket, i + 1)
            try await withThrowingTaskGroup(of: (Int, String, Int).self) { group in
                var inFlight = 0
                func launch() throws -> Bool {
                    guard let number = missing.next() else { return false }
                    let offset = UInt64(number - 1) * partSize
                    chunks.seek(to: offset)
                    let body = try chunks.read(Int(min(partSize, length - offset)))
                    group.addTask {
                        (number, try await Self.uploadPart(client, bucket: bucket, key: key, uploadID: id, number: number, body: body, batch: batch, of: n),
                         body.count)
                    }
                    inFlight += 1
                    return true
                }
                while inFlight < s3.parallel, try launch() {}
                while let (number, etag, size) = try await group.next() {
                    inFlight -= 1
                    done[number] = etag
                    journal.batches[i].s3Parts = done.keys.sorted().map { UploadJournal.S3Part(number: $0, md5: done[$0]!) }
                    try journal.save(to: vault.store)
                    sent += UInt64(size)
                    onEvent(.sent(done: before + sent, total: total))
                    while inFlight < s3.parallel, try launch() {}
                }
            }
            try await client.completeMultipartUpload(bucket: s3.bucket, key: key, uploadID: id,
                                                     parts: done.keys.sorted().map { ($0, done[$0]!) })
            return .confirmed(status: 200, duplicate: false)
        } catch let f as DocumentFailure {
            await abandonS3(&journal.batches[i], s3: s3)
            return .skip(f)
        } catch let e as VaultError {
            switch e.code {
            case .uploadFailed: return .retry(reason: e.message, retryAfter: nil)
            case .notFound: return .refused(VaultError(.uploadRejected, e.message, hint: "does the bucket \(s3.bucket) exist?"))
            default:
                await abandonS3(&journal.batches[i], s3: s3)
                return .refused(e)
            }
        } catch {
            if error is CancellationError { throw error }
            return .retry(reason: Self.describe(error, timeout: options.target.idleTimeout), retryAfter: nil)
        }
    }

    /// Sends one part; a `BadDigest` (the bytes changed on the way) is sent once more, and a
    /// second is damage (exit 65) naming the part.
    static func uploadPart(_ client: S3Client, bucket: String, key: String, uploadID: String, number: Int, body: [UInt8],
                           batch: Int, of n: Int) async throws -> String {
        do {
            return try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
        } catch let e as VaultError where e.message.contains("BadDigest") {
            do {
                return try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
            } catch let again as VaultError where again.message.contains("BadDigest") {
                throw VaultError(.vaultDamaged, "part \(number) of batch \(batch)/\(n) failed its Content-MD5 check twice (BadDigest)",
                                 hint: "the bytes change between this machine and the store; check the network path")
            }
        }
    }

    /// Aborts a batch's multipart upload that will not be continued (best effort).
    func abandonS3(_ batch: inout UploadJournal.Batch, s3: S3Target) async {
        guard let id = batch.s3UploadID, let key = batch.s3Key else { return }
        try? await s3Client(s3).abortMultipartUpload(bucket: s3.bucket, key: key, uploadID: id)
        batch.s3UploadID = nil
        batch.s3Parts = nil
    }
}
