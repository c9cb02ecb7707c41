#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import VaultCore
import VaultS3

/// A batch's payload as an S3 multipart upload: its parts' geometry, and resuming a journaled
/// upload. Shared by the direct and the presigned sender: the one place that decides which
/// parts are not sent again.
struct MultipartBatch {
    let length: UInt64
    let partSize: UInt64

    /// The batch's parts (at least one).
    var count: Int { Int(max(1, (length + partSize - 1) / partSize)) }
    func offset(of number: Int) -> UInt64 { UInt64(number - 1) * partSize }
    func size(of number: Int) -> UInt64 { min(partSize, length - offset(of: number)) }
    func bytes(of numbers: some Sequence<Int>) -> UInt64 { numbers.reduce(0) { $0 + size(of: $1) } }

    /// Where the batch's journaled multipart upload stands. The parts the store lists with the
    /// MD5 the journal recorded are kept (not sent again); when the store no longer knows the
    /// upload, the object says why: there whole (completed before the journal knew: nil is
    /// returned) or not (aborted or expired: the batch starts afresh, with no part).
    /// - Parameters:
    ///   - listed: the store's parts of the upload (number → ETag); throws `not-found` when the
    ///     store no longer knows it.
    ///   - objectSize: the size of the object at the upload's key, if there is one.
    func resume(
        _ a: BatchAttempt, listed: (UploadJournal.MultipartState) async throws -> [Int: String],
        objectSize: (String) async throws -> UInt64?
    ) async throws -> [Int: String]? {
        guard case .multipart(let state) = a.wire else { return [:] }
        do {
            let have = try await listed(state)
            let kept = Dictionary(
                state.parts.filter { have[$0.number] == $0.md5 }.map { ($0.number, $0.md5) },
                uniquingKeysWith: { _, last in last })
            let bytes = self.bytes(of: kept.keys)
            if bytes > 0 { a.resumed(at: bytes) }
            return kept
        } catch let e as VaultError where e.code == .notFound {
            if try await objectSize(state.key) == length { return nil }
            try a.record(.none)
            return [:]
        }
    }
}

extension UploadJournal.MultipartState {
    /// The same upload with `parts` confirmed.
    func with(parts: [Int: String]) -> Self {
        var copy = self
        copy.parts = parts.keys.sorted().map { UploadJournal.S3Part(number: $0, md5: parts[$0]!) }
        return copy
    }
}

extension UploadJournal.WireState {
    /// The multipart upload under way, if any.
    var multipart: UploadJournal.MultipartState? {
        if case .multipart(let m) = self { return m }
        return nil
    }
}

/// `s3` with the station's credentials: each batch as the object `PREFIX/<run>/batch-NNNN.json`,
/// a single PUT with `Content-MD5` when the payload fits one part, else a multipart upload whose
/// parts are produced from the seekable payload, each with its exact length and `Content-MD5`,
/// its ETag checked against the local MD5 and journaled, up to `parallel` in flight. A resumed
/// batch sends only the parts the store does not list as the journal has them.
final class S3Sender: BatchSender, @unchecked Sendable {
    // @unchecked: the uploader calls one attempt at a time; `bucketChecked` changes only in one.
    private let s3: S3Target
    private let client: S3Client
    private let shape: PayloadShape
    private let timeout: Double
    private var bucketChecked = false

    init(target: S3Target, shape: PayloadShape, timeout: Double) {
        (s3, self.shape, self.timeout) = (target, shape, timeout)
        client = S3Client(
            endpoint: target.endpoint, region: target.region, credentials: target.credentials,
            addressing: target.addressing,
            timeout: timeout)
    }

    func format(batch: Int, of: Int) -> PayloadFormat { .json(shape) }

    func shutdown() async { await client.shutdown() }

    func attempt(_ a: BatchAttempt) async throws -> AttemptOutcome {
        let key: String
        do {
            try Destinations.checkRunID(a.runID)
            key = try Destinations.checkS3Key(
                a.wire.multipart?.key, expected: s3.key(run: a.runID, index: a.index + 1), batch: a.index + 1)
        } catch {
            return .refused(VaultError.from(error))
        }
        let geometry = MultipartBatch(
            length: a.length,
            partSize: a.wire.multipart?.partSize ?? S3Target.partSize(for: a.length, atLeast: s3.partSize))
        let (client, bucket) = (client, s3.bucket)
        do {
            try await checkBucket()
            let chunks = a.chunks()
            if a.length <= geometry.partSize {
                try await client.putObject(
                    bucket: bucket, key: key, body: try chunks.readBuffer(Int(a.length)),
                    contentType: "application/json",
                    metadata: metadata(a))
                a.onSent(a.length)
                return .confirmed(status: 200, duplicate: false)
            }
            guard
                var done = try await geometry.resume(
                    a,
                    listed: { m in
                        Dictionary(
                            try await client.listParts(bucket: bucket, key: m.key, uploadID: m.uploadID).map {
                                ($0.number, $0.etag)
                            },
                            uniquingKeysWith: { _, last in last })
                    }, objectSize: { key in try await client.headObject(bucket: bucket, key: key)?.size })
            else {
                return .confirmed(status: 200, duplicate: true)
            }
            var state =
                a.wire.multipart
                ?? UploadJournal.MultipartState(key: key, uploadID: "", partSize: geometry.partSize, parts: [])
            if state.uploadID.isEmpty {
                state.uploadID = try await client.createMultipartUpload(
                    bucket: bucket, key: key, contentType: "application/json", metadata: metadata(a))
                try a.record(.multipart(state))
            }
            try await sendParts(a, state, geometry, chunks, done: &done)
            try await client.completeMultipartUpload(
                bucket: bucket, key: key, uploadID: state.uploadID,
                parts: done.keys.sorted().map { UploadedPart(number: $0, etag: done[$0]!) })
            return .confirmed(status: 200, duplicate: false)
        } catch {
            return try await outcome(of: error, a)
        }
    }

    /// The object's metadata: which batch of which run, and the history head.
    private func metadata(_ a: BatchAttempt) -> [String: String] {
        var out = ["vault-batch": a.label, "vault-documents": String(a.docs.count), "vault-run": a.runID]
        for (_, head) in a.logHead { out["vault-log-head"] = head }
        return out
    }

    /// Some stores create a bucket on the first PUT; a missing bucket is a mistake to name.
    private func checkBucket() async throws {
        guard !bucketChecked else { return }
        guard try await client.bucketExists(s3.bucket) else {
            throw VaultError(
                .uploadRejected,
                "NoSuchBucket: the bucket \(s3.bucket) does not exist at \(s3.endpoint.absoluteString)",
                hint: "create it, or check the bucket name and the store's endpoint")
        }
        bucketChecked = true
    }

    /// Sends the parts not `done`, up to `parallel` in flight: parts are produced here, in order
    /// (the payload is read once), and each is sent by its own task; memory holds at most
    /// `parallel` parts. Each confirmed part is journaled at once.
    private func sendParts(
        _ a: BatchAttempt, _ state: UploadJournal.MultipartState, _ geometry: MultipartBatch, _ chunks: PayloadChunks,
        done: inout [Int: String]
    ) async throws {
        var sent = geometry.bytes(of: done.keys)
        var missing = (1...geometry.count).filter { done[$0] == nil }.makeIterator()
        let (client, bucket, parallel, label) = (client, s3.bucket, s3.parallel, a.label)
        var confirmed = done
        try await withThrowingTaskGroup(of: (Int, String, Int).self) { group in
            var inFlight = 0
            func launch() throws -> Bool {
                guard let number = missing.next() else { return false }
                chunks.seek(to: geometry.offset(of: number))
                let body = try chunks.readBuffer(Int(geometry.size(of: number)))
                group.addTask {
                    (
                        number,
                        try await Self.uploadPart(
                            client, bucket: bucket, key: state.key, uploadID: state.uploadID, number: number,
                            body: body,
                            batch: label), body.readableBytes
                    )
                }
                inFlight += 1
                return true
            }
            while inFlight < parallel, try launch() {}
            while let (number, etag, size) = try await group.next() {
                inFlight -= 1
                confirmed[number] = etag
                try a.record(.multipart(state.with(parts: confirmed)))
                sent += UInt64(size)
                a.onSent(sent)
                while inFlight < parallel, try launch() {}
            }
        }
        done = confirmed
    }

    /// Sends one part; a `BadDigest` (the bytes changed on the way) is sent once more, and a
    /// second is damage (exit 65) naming the part.
    static func uploadPart(
        _ client: S3Client, bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer,
        batch: String
    ) async throws -> String {
        do {
            return try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
        } catch let e as VaultError where e.s3Code == "BadDigest" {
            do {
                return try await client.uploadPart(
                    bucket: bucket, key: key, uploadID: uploadID, number: number, body: body)
            } catch let again as VaultError where again.s3Code == "BadDigest" {
                throw badDigestTwice(part: number, batch: batch)
            }
        }
    }

    static func badDigestTwice(part number: Int, batch: String) -> VaultError {
        VaultError(
            .vaultDamaged, "part \(number) of batch \(batch) failed its Content-MD5 check twice (BadDigest)",
            hint: "the bytes change between this machine and the store; check the network path")
    }

    /// A store failure as an attempt's outcome: transient ones are retried; a refusal aborts the
    /// batch's multipart upload and stops, as an upload error of the same kind.
    private func outcome(of error: any Error, _ a: BatchAttempt) async throws -> AttemptOutcome {
        guard let e = error as? VaultError else { return try .of(error, timeout: timeout) }
        switch e.code {
        case .storeUnavailable:
            // No connection made: the store received nothing (a run of only such attempts leaves no journal).
            let failure = e.cause as? StatedTransportFailure
            return .retry(
                reason: e.message, retryAfter: nil,
                unreached: failure.map { TransportError.neverConnected($0.error) } ?? false)
        case .notFound:
            return .refused(
                VaultError(.uploadRejected, e.message, hint: "does the bucket \(s3.bucket) exist?", cause: e.cause))
        default:
            await abandon(a.wire)
            try? a.record(.none)
            switch e.code {
            case .storeUnauthorized: return .refused(e.recoded(.uploadUnauthorized))
            case .storeRejected: return .refused(e.recoded(.uploadRejected))
            default: return .refused(e)
            }
        }
    }

    /// Aborts a batch's multipart upload that will not be continued (best effort).
    func abandon(_ state: UploadJournal.WireState) async {
        guard let m = state.multipart else { return }
        try? await client.abortMultipartUpload(bucket: s3.bucket, key: m.key, uploadID: m.uploadID)
    }
}

extension VaultError {
    /// This error under another code, with its message, hint, remedy and cause.
    fileprivate func recoded(_ code: Code) -> VaultError {
        VaultError(code, message, hint: hint, remedy: remedy, cause: cause)
    }
}
