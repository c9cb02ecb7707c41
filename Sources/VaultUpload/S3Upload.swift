import Foundation
import NIOCore
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

    /// The part size for a payload of `length` bytes: `atLeast`, grown to whole MiB so that
    /// no payload needs more than 10,000 parts.
    static func partSize(for length: UInt64, atLeast: UInt64) -> UInt64 {
        let needed = (length + maximumParts - 1) / maximumParts
        let mib: UInt64 = 1 << 20
        return max(atLeast, (needed + mib - 1) / mib * mib)
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
        let b = beginAttempt(index: i, journal: &journal, attempt: attempt)
        let (docs, n, length, before, total) = (b.docs, b.n, b.length, b.before, b.total)
        let client = s3Client(s3)
        let key: String
        do {
            try Destinations.checkRunID(journal.runId)
            key = try Destinations.checkS3Key(journal.batches[i].s3Key, expected: s3.key(run: journal.runId, index: i + 1), batch: i + 1)
        } catch {
            return .refused(VaultError.from(error))
        }
        let metadata = [("vault-batch", "\(i + 1)/\(n)"), ("vault-documents", String(docs.count)), ("vault-run", journal.runId)]
            + logHeadHeader.map { ("vault-log-head", $0.1) }
        let chunks = payloadChunks(b, index: i, journal: journal)
        let partSize = journal.batches[i].s3PartSize ?? S3Target.partSize(for: length, atLeast: s3.partSize)
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
                let body = try chunks.readBuffer(Int(length))
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
                try journal.save(to: vault)
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
                    let body = try chunks.readBuffer(Int(min(partSize, length - offset)))
                    group.addTask {
                        (number, try await Self.uploadPart(client, bucket: bucket, key: key, uploadID: id, number: number, body: body, batch: batch, of: n),
                         body.readableBytes)
                    }
                    inFlight += 1
                    return true
                }
                while inFlight < s3.parallel, try launch() {}
                while let (number, etag, size) = try await group.next() {
                    inFlight -= 1
                    done[number] = etag
                    journal.batches[i].s3Parts = done.keys.sorted().map { UploadJournal.S3Part(number: $0, md5: done[$0]!) }
                    try journal.save(to: vault)
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
            case .storeUnavailable: return .retry(reason: e.message, retryAfter: nil)
            case .storeUnauthorized: return .refused(VaultError(.uploadUnauthorized, e.message, cause: e.cause))
            case .storeRejected: return .refused(VaultError(.uploadRejected, e.message, cause: e.cause))
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
    static func uploadPart(_ client: S3Client, bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer,
                           batch: Int, of n: Int) async throws -> String {
        do {
            return try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
        } catch let e as VaultError where e.s3Code == "BadDigest" {
            do {
                return try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
            } catch let again as VaultError where again.s3Code == "BadDigest" {
                throw badDigestTwice(part: number, batch: batch, of: n)
            }
        }
    }

    static func badDigestTwice(part number: Int, batch: Int, of n: Int) -> VaultError {
        VaultError(.vaultDamaged, "part \(number) of batch \(batch)/\(n) failed its Content-MD5 check twice (BadDigest)",
                   hint: "the bytes change between this machine and the store; check the network path")
    }

    /// Aborts a batch's multipart upload that will not be continued (best effort).
    func abandonS3(_ batch: inout UploadJournal.Batch, s3: S3Target) async {
        guard let id = batch.s3UploadID, let key = batch.s3Key else { return }
        try? await s3Client(s3).abortMultipartUpload(bucket: s3.bucket, key: key, uploadID: id)
        batch.s3UploadID = nil
        batch.s3Parts = nil
    }
}

// MARK: - Presigned mode

/// One presigned part URL from the back office.
struct PresignedPart: Codable, Sendable {
    var number: Int
    var url: String
    var expires: String?

    /// True when the URL expires within `margin` seconds (or its expiry cannot be read).
    func expiresSoon(margin: Double = 60, now: Date = Date()) -> Bool {
        guard let e = expires, let date = ISO8601DateFormatter().date(from: e) else { return false }
        return date.timeIntervalSince(now) < margin
    }
}

extension Uploader {
    /// POSTs `body` as JSON to the presign endpoint's `call` and decodes the answer. Credentials
    /// are the upload's (Bearer or Basic); the station has no S3 secret.
    private func presignCall<T: Decodable>(_ base: String, _ call: String, _ body: [String: Any], as: T.Type) async throws -> T {
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let auth = options.target.authorization { headers.append(("Authorization", auth)) }
        let url = base.hasSuffix("/") ? base + call : base + "/" + call
        let r = try await transport.request("POST", url: url, headers: headers,
                                            body: .bytes(Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]))))
        switch r.status {
        case 200..<300:
            do { return try JSONDecoder().decode(T.self, from: Data(r.body.utf8)) } catch {
                throw VaultError(.uploadRejected, "the presign endpoint's answer to \(call) is not what docs/UPLOAD.md describes: \(String(r.body.prefix(200)))")
            }
        case 401, 403:
            throw VaultError(.uploadUnauthorized, "the presign endpoint refused the credentials (\(r.status) \(r.reason))",
                             hint: "check VAULT_UPLOAD_TOKEN, or VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD")
        case 404 where r.body.contains("NoSuchUpload") || r.body.contains("NoSuchKey") || r.body.contains("NotFound"):
            throw VaultError(.notFound, "presign \(call): \(r.body.trimmingCharacters(in: .whitespacesAndNewlines))")
        default:
            if RetryPolicy.decide(status: r.status) == .retry { throw TusRetry(description: "presign \(call): \(r.status) \(r.reason)") }
            throw VaultError(.uploadRejected, "the presign endpoint rejected \(call): \(r.status) \(r.reason)\(Self.serverSays(r))")
        }
    }

    private struct Created: Decodable { var uploadId: String; var key: String; var parts: [PresignedPart] }
    private struct Parts: Decodable { var parts: [PresignedPart] }
    private struct Listed: Decodable { struct P: Decodable { var number: Int; var etag: String }; var parts: [P] }
    private struct Head: Decodable { var size: UInt64 }

    /// One attempt at batch `i` through presigned URLs (`--presign-url`): the back office creates
    /// the multipart upload and hands out a URL per part; vault PUTs each part (with
    /// `Content-MD5`, its ETag checked), asks again for URLs that expired or are about to, and has
    /// the back office complete (or abort) the upload. Resuming asks it to list the parts.
    func presignedAttempt(index i: Int, journal: inout UploadJournal, attempt: Int, endpoint: String) async throws -> AttemptOutcome {
        let b = beginAttempt(index: i, journal: &journal, attempt: attempt)
        let (docs, n, length, before, total) = (b.docs, b.n, b.length, b.before, b.total)
        let partSize = journal.batches[i].s3PartSize ?? S3Target.partSize(for: length, atLeast: options.s3PartSize)
        let count = Int(max(1, (length + partSize - 1) / partSize))
        let chunks = payloadChunks(b, index: i, journal: journal)
        do {
            var done: [Int: String] = [:]
            var urls: [Int: PresignedPart] = [:]
            try Destinations.checkRunID(journal.runId)
            let requested = "\(journal.runId)/" + String(format: "batch-%04d.json", i + 1)
            if let key = journal.batches[i].s3Key { try Destinations.checkPresignedKey(key, requested: requested) }
            if let id = journal.batches[i].s3UploadID, let key = journal.batches[i].s3Key {
                do {
                    let listed = try await presignCall(endpoint, "list", ["key": key, "uploadId": id], as: Listed.self)
                    let have = Dictionary(listed.parts.map { ($0.number, S3Client.unquote($0.etag)) }, uniquingKeysWith: { _, b in b })
                    for p in journal.batches[i].s3Parts ?? [] where have[p.number] == p.md5 { done[p.number] = p.md5 }
                    let kept = done.keys.reduce(UInt64(0)) { $0 + min(partSize, length - UInt64($1 - 1) * partSize) }
                    if kept > 0 { onEvent(.resumed(batch: i + 1, at: kept)); resumedBytes += kept }
                } catch let e as VaultError where e.code == .notFound {
                    if let head = try? await presignCall(endpoint, "head", ["key": key], as: Head.self), head.size == length {
                        return .confirmed(status: 200, duplicate: true)
                    }
                    journal.batches[i].s3UploadID = nil
                    journal.batches[i].s3Parts = nil
                }
            }
            if journal.batches[i].s3UploadID == nil {
                let metadata = ["vault-batch": "\(i + 1)/\(n)", "vault-documents": String(docs.count), "vault-run": journal.runId]
                let created = try await presignCall(endpoint, "create", [
                    "key": requested, "contentType": "application/json",
                    "metadata": metadata, "parts": count,
                ], as: Created.self)
                try Destinations.checkPresignedKey(created.key, requested: requested)
                journal.batches[i].s3UploadID = created.uploadId
                journal.batches[i].s3Key = created.key
                journal.batches[i].s3PartSize = partSize
                journal.batches[i].s3Parts = []
                try journal.save(to: vault)
                for p in created.parts { urls[p.number] = p }
            }
            let id = journal.batches[i].s3UploadID!, key = journal.batches[i].s3Key!
            var sent = done.keys.reduce(UInt64(0)) { $0 + min(partSize, length - UInt64($1 - 1) * partSize) }
            for number in 1...count where done[number] == nil {
                let offset = UInt64(number - 1) * partSize
                chunks.seek(to: offset)
                let body = try chunks.read(Int(min(partSize, length - offset)))
                let md5 = S3Client.md5(body)
                var asked = false, resent = false
                while true {
                    if urls[number] == nil || urls[number]!.expiresSoon() {
                        let fresh = try await presignCall(endpoint, "parts", ["key": key, "uploadId": id, "numbers": [number]], as: Parts.self)
                        for p in fresh.parts { urls[p.number] = p }
                        asked = true
                    }
                    guard let url = urls[number]?.url, let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
                          ["http", "https"].contains(scheme) else {
                        throw VaultError(.uploadRejected, "the presign endpoint gave no usable URL for part \(number)")
                    }
                    try Destinations.checkPresignedPart(parsed, number: number, uploadID: id, key: key)
                    if scheme == "http" && !UploadTarget.isLoopback(host: parsed.host ?? "") && !options.insecureHTTP {
                        throw VaultError(.usage, "refusing to send documents unencrypted over http:// to \(parsed.host ?? "?") (a presigned part URL)",
                                         hint: "have the back office presign https:// URLs, or use --insecure-http on a network you trust")
                    }
                    let r = try await transport.request("PUT", url: url, headers: [("Content-MD5", md5.base64)], body: .bytes(body))
                    if (200..<300).contains(r.status) {
                        let etag = S3Client.unquote(r.header("ETag") ?? "")
                        guard etag == md5.hex else {
                            throw VaultError(.uploadRejected, "part \(number) of batch \(i + 1)/\(n): the ETag \(etag) is not the part's MD5")
                        }
                        done[number] = etag
                        break
                    }
                    // An expired or refused URL is asked for again, once; then the S3 error is the answer.
                    let code = S3XML.error(Array(r.body.utf8))
                    if r.status == 403 && !asked { urls[number] = nil; continue }
                    let what = "part \(number) of batch \(i + 1)/\(n): \(r.status) \(code.map { "\($0.code): \($0.message)" } ?? r.reason)"
                    if r.status == 403 { throw VaultError(.uploadUnauthorized, "the store refused the presigned URL for \(what)", hint: "the URL expired or was altered") }
                    if code?.code == "BadDigest" {
                        if !resent { resent = true; continue }
                        throw Self.badDigestTwice(part: number, batch: i + 1, of: n)
                    }
                    if RetryPolicy.decide(status: r.status) == .retry { throw TusRetry(description: what) }
                    throw VaultError(.uploadRejected, what)
                }
                journal.batches[i].s3Parts = done.keys.sorted().map { UploadJournal.S3Part(number: $0, md5: done[$0]!) }
                try journal.save(to: vault)
                sent += UInt64(body.count)
                onEvent(.sent(done: before + sent, total: total))
            }
            _ = try await presignCall(endpoint, "complete", [
                "key": key, "uploadId": id, "parts": done.keys.sorted().map { ["number": $0, "etag": done[$0]!] as [String: Any] },
            ], as: [String: String].self)
            return .confirmed(status: 200, duplicate: false)
        } catch let f as DocumentFailure {
            await abandonPresigned(&journal.batches[i], endpoint: endpoint)
            return .skip(f)
        } catch let e as VaultError {
            if e.code == .uploadFailed { return .retry(reason: e.message, retryAfter: nil) }
            await abandonPresigned(&journal.batches[i], endpoint: endpoint)
            return .refused(e)
        } catch {
            if error is CancellationError { throw error }
            return .retry(reason: Self.describe(error, timeout: options.target.idleTimeout), retryAfter: nil)
        }
    }

    private func abandonPresigned(_ batch: inout UploadJournal.Batch, endpoint: String) async {
        guard let id = batch.s3UploadID, let key = batch.s3Key else { return }
        _ = try? await presignCall(endpoint, "abort", ["key": key, "uploadId": id], as: [String: String].self)
        batch.s3UploadID = nil
        batch.s3Parts = nil
    }
}
