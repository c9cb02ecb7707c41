import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import Synchronization
import VaultCore

/// The receiver's tus 1.0 endpoint (`/files/`): core, creation, checksum, termination and
/// expiration (tus.io/protocols/resumable-upload). Each upload is one batch: the JSON payload,
/// read, checked and encrypted as its chunks arrive (the same ``BatchIntake`` as `POST
/// /batches`), committed whole when its last byte arrives. A batch taken before (the same
/// Idempotency-Key) is uploaded as any other, compared, and answered with its first receipt.
///
/// A chunk with `Upload-Checksum` is spooled to a file in the receiver vault's `staging/` while
/// it is hashed, and only fed to the batch when its checksum matches (460 otherwise): memory stays
/// bounded whatever the chunk size. Uploads live in memory: after a restart the station's `HEAD`
/// gets 404 and it sends the batch again from its start (under the same Idempotency-Key, so a
/// batch committed before is answered, not stored twice). An upload no request touched for
/// ``TusReceiver/expiry`` is dropped with what it staged.
package final class TusReceiver: Sendable {
    /// One upload.
    final class Upload: @unchecked Sendable {
        // @unchecked: every field is used under `lock`, and by one request at a time (`busy`).
        let lock = NIOLock()
        let id: String
        let station: String
        let key: String
        let length: UInt64
        var offset: UInt64 = 0
        var intake: BatchIntake?
        /// The receipt once the batch is committed (or was, before: a resend).
        var answer: [UInt8]?
        var busy = false
        var touched: Date

        init(id: String, station: String, key: String, length: UInt64, intake: BatchIntake?, now: Date) {
            (self.id, self.station, self.key, self.length, self.intake, touched) = (
                id, station, key, length, intake, now
            )
        }
    }

    /// Most uploads one station may have open, and all stations together.
    package static let maxPerStation = 16
    package static let maxOpen = 256

    /// The checksum algorithms offered (sha1, as the checksum extension requires; sha256).
    package static let algorithms = "sha1,sha256"
    /// How long an upload may go untouched before it is dropped.
    package let expiry: TimeInterval
    private let receiver: Receiver
    private let uploads = Mutex<[String: Upload]>([:])

    package init(receiver: Receiver, expiry: TimeInterval = 3600) {
        self.receiver = receiver
        self.expiry = expiry
    }

    /// A tus answer: status, headers, body.
    package struct Answer: Sendable, Error {
        package var status: Int
        package var headers: [(String, String)] = []
        package var body: [UInt8] = []
        /// For the log.
        package var documents = 0
        package var bytes: UInt64 = 0
        package var sealed = false

        init(_ status: Int, _ headers: [(String, String)] = [], body: [UInt8] = []) {
            (self.status, self.headers, self.body) = (status, headers, body)
        }

        init(_ refusal: Refusal) {
            status = refusal.status
            body = refusal.body
            headers = [("Content-Type", "application/json")]
            if let after = refusal.retryAfter { headers.append(("Retry-After", String(after))) }
        }
    }

    /// `OPTIONS`: what this server offers.
    package func options() -> Answer {
        Answer(
            204,
            [
                ("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,checksum,termination,expiration"),
                ("Tus-Max-Size", String(receiver.limits.bytes)), ("Tus-Checksum-Algorithm", Self.algorithms)
            ])
    }

    private func expires(_ upload: Upload) -> (String, String) {
        ("Upload-Expires", UTCTime(upload.touched.addingTimeInterval(expiry)).httpDate)
    }

    /// Drops uploads untouched for ``expiry`` (and what they staged).
    package func expire(now: Date = Date()) {
        let old = uploads.withLock { all -> [Upload] in
            let gone = all.values.filter { u in u.lock.withLock { !u.busy && now.timeIntervalSince(u.touched) > expiry }
            }
            for u in gone { all[u.id] = nil }
            return gone
        }
        for u in old { u.lock.withLock { u.intake = nil } }
    }

    /// `POST /files/`: a new upload of `length` bytes, the batch `key` of `station`.
    package func create(
        station: String, key: String?, head: String?, length: String?, deferLength: Bool, now: Date = Date()
    ) async -> Answer {
        expire(now: now)
        guard !deferLength else {
            return Answer(Refusal(400, "length-needed", "Upload-Length is needed (Upload-Defer-Length is not offered)"))
        }
        guard let length, let n = UInt64(length), String(n) == length else {
            return Answer(Refusal(400, "length-malformed", "Upload-Length must be a decimal number of bytes"))
        }
        guard n <= receiver.limits.bytes else {
            return Answer(
                Refusal(
                    413, "too-large", "the batch is \(n) bytes; this receiver takes at most \(receiver.limits.bytes)"))
        }
        // Bounded per station and in all: open uploads are not counted with the requests in
        // flight, so one station's abandoned uploads never block the others' batches.
        let (mine, all) = uploads.withLock { u in (u.values.filter { $0.station == station }.count, u.count) }
        guard mine < Self.maxPerStation, all < Self.maxOpen else {
            return Answer(
                Refusal(
                    429, "too-many-uploads",
                    "at most \(Self.maxPerStation) uploads per station and \(Self.maxOpen) in all may be open",
                    retryAfter: 60))
        }
        let intake: BatchIntake
        do {
            intake = try await receiver.begin(
                station: station, key: key, head: head, contentType: "application/json", contentLength: n, paced: false,
                wire: "tus", now: now)
        } catch {
            return Answer(error)
        }
        let id = Hex.encode(SystemRandom().bytes(16))
        let upload = Upload(id: id, station: station, key: key ?? "", length: n, intake: intake, now: now)
        uploads.withLock { $0[id] = upload }
        return Answer(201, [("Location", "/files/\(id)"), expires(upload)])
    }

    /// The upload `id` if `station` made it: another station's is not found.
    private func upload(_ id: String, station: String) -> Upload? {
        uploads.withLock { $0[id] }.flatMap { $0.station == station ? $0 : nil }
    }

    /// `HEAD /files/ID`.
    package func head(_ id: String, station: String, now: Date = Date()) -> Answer {
        expire(now: now)
        guard let u = upload(id, station: station) else { return Answer(404) }
        return u.lock.withLock {
            var headers = [
                ("Upload-Offset", String(u.offset)), ("Upload-Length", String(u.length)), ("Cache-Control", "no-store")
            ]
            if u.answer == nil { headers.append(expires(u)) }
            return Answer(200, headers)
        }
    }

    /// `DELETE /files/ID`: the upload and what it staged are dropped.
    package func terminate(_ id: String, station: String) -> Answer {
        guard let u = upload(id, station: station) else { return Answer(404) }
        let dropped = u.lock.withLock { () -> Bool in
            guard !u.busy else { return false }
            u.intake = nil
            return true
        }
        guard dropped else { return Answer(Refusal(409, "upload-busy", "a PATCH of this upload is in progress")) }
        _ = uploads.withLock { $0.removeValue(forKey: id) }
        return Answer(204)
    }

    /// A PATCH being received: ``begin(_:station:offset:contentType:checksum:)`` checks its
    /// headers, ``take(_:)`` its bytes, ``end()`` answers.
    package final class Patch {
        fileprivate let upload: Upload
        fileprivate let tus: TusReceiver
        fileprivate var at: UInt64
        fileprivate var spool: SealedSpool?
        fileprivate var spooled: UInt64 = 0
        fileprivate var checksum: (algorithm: String, expected: [UInt8])?
        fileprivate var sha1 = Insecure.SHA1()
        fileprivate var sha256 = SHA256()
        fileprivate var failed: Refusal?

        fileprivate init(upload: Upload, tus: TusReceiver, at: UInt64) {
            (self.upload, self.tus, self.at) = (upload, tus, at)
        }

        /// True once the PATCH was refused: the rest of its body is not read.
        package var isRefused: Bool { failed != nil }

        deinit { upload.lock.withLock { upload.busy = false } }
    }

    /// Starts a `PATCH /files/ID` at `offset`, or answers it at once (wrong offset, unknown upload,
    /// another PATCH in progress, a checksum header that is not one).
    package func begin(
        _ id: String, station: String, offset: String?, contentType: String?, checksum: String?, now: Date = Date()
    ) -> Result<Patch, Answer> {
        expire(now: now)
        guard contentType?.lowercased() == "application/offset+octet-stream" else {
            return .failure(
                Answer(Refusal(415, "unsupported-media-type", "a PATCH is application/offset+octet-stream")))
        }
        guard let u = upload(id, station: station) else { return .failure(Answer(404)) }
        guard let offset, let o = UInt64(offset), String(o) == offset else {
            return .failure(Answer(Refusal(400, "offset-malformed", "Upload-Offset must be a decimal number")))
        }
        var parsed: (String, [UInt8])?
        if let checksum {
            let parts = checksum.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 2, ["sha1", "sha256"].contains(parts[0]),
                let digest = Data(base64Encoded: String(parts[1])).map(Array.init),
                digest.count == (parts[0] == "sha1" ? 20 : 32)
            else {
                return .failure(
                    Answer(Refusal(400, "checksum-malformed", "Upload-Checksum is '<sha1|sha256> <base64 digest>'")))
            }
            parsed = (String(parts[0]), digest)
        }
        let refusal = u.lock.withLock { () -> Answer? in
            guard !u.busy else {
                return Answer(Refusal(409, "upload-busy", "another PATCH of this upload is in progress"))
            }
            guard o == u.offset else {
                return Answer(
                    Refusal(409, "offset-mismatch", "the upload is at \(u.offset), not \(o)"),
                    extra: [("Upload-Offset", String(u.offset))])
            }
            guard u.answer == nil, u.intake != nil else {
                return Answer(
                    Refusal(409, "offset-mismatch", "the upload is complete"),
                    extra: [("Upload-Offset", String(u.offset))])
            }
            u.busy = true
            u.touched = now
            return nil
        }
        if let refusal { return .failure(refusal) }
        let patch = Patch(upload: u, tus: self, at: o)
        if let parsed {
            patch.checksum = parsed
            do {
                patch.spool = try receiver.vault.spoolFile()
            } catch {
                return .failure(
                    Answer(Refusal(500, "internal", "cannot spool the chunk: \(VaultError.from(error).message)")))
            }
        }
        return .success(patch)
    }

    /// The next bytes of a PATCH body.
    package func take(_ patch: Patch, _ bytes: UnsafeRawBufferPointer) {
        guard patch.failed == nil else { return }
        let u = patch.upload
        if patch.at + patch.spooled + UInt64(bytes.count) > u.length {
            patch.failed = Refusal(400, "past-the-end", "the chunk goes past Upload-Length \(u.length)")
            return
        }
        if let spool = patch.spool {
            do {
                try spool.write(bytes)
            } catch {
                patch.failed = Refusal(500, "internal", "cannot spool the chunk: \(VaultError.from(error).message)")
                return
            }
            if patch.checksum?.algorithm == "sha1" {
                patch.sha1.update(bufferPointer: bytes)
            } else {
                patch.sha256.update(bufferPointer: bytes)
            }
            patch.spooled += UInt64(bytes.count)
            return
        }
        feed(patch, bytes)
    }

    private func feed(_ patch: Patch, _ bytes: UnsafeRawBufferPointer) {
        let u = patch.upload
        do {
            guard let intake = u.intake else { throw Refusal(410, "upload-gone", "the upload was dropped") }
            try intake.read(bytes)
            u.lock.withLock {
                u.offset += UInt64(bytes.count)
                u.touched = Date()
            }
            patch.at += UInt64(bytes.count)
        } catch {
            patch.failed = Refusal.of(error, document: nil)
        }
    }

    /// Ends a PATCH: checks the chunk's checksum and feeds a spooled chunk, commits the batch
    /// when its last byte arrived; answers 204 (the receipt in `Vault-Receipt`, base64, when the
    /// batch was committed), 460 for a checksum mismatch, or the refusal (the upload is then
    /// dropped: a batch is all or nothing).
    package func end(_ patch: Patch) async -> Answer {
        let u = patch.upload
        if patch.failed == nil, let checksum = patch.checksum, let spool = patch.spool {
            let digest =
                checksum.algorithm == "sha1" ? Array(patch.sha1.finalize()) : Array(patch.sha256.finalize())
            guard digest == checksum.expected else {
                return Answer(460, [("Upload-Offset", String(u.lock.withLock { u.offset }))])
            }
            do {
                try spool.rewind()
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SealedSpool.recordSize, alignment: 16)
                defer { buffer.deallocate() }
                while patch.failed == nil {
                    let n = try spool.read(into: buffer)
                    if n == 0 { break }
                    feed(patch, UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                }
            } catch {
                patch.failed = Refusal(
                    500, "internal", "cannot read the spooled chunk: \(VaultError.from(error).message)")
            }
        }
        if let failed = patch.failed {
            drop(u)
            await receiver.refused(station: u.station, code: failed.code, status: failed.status)
            return Answer(failed)
        }
        let (offset, length) = u.lock.withLock { (u.offset, u.length) }
        guard offset == length, let intake = u.lock.withLock({ u.intake }) else {
            return Answer(204, [("Upload-Offset", String(offset)), expires(u)])
        }
        do {
            let answer = try await intake.finish()
            u.lock.withLock {
                u.answer = answer.body
                u.intake = nil
            }
            var done = Answer(
                204, [("Upload-Offset", String(offset)), ("Vault-Receipt", Data(answer.body).base64EncodedString())])
            (done.documents, done.bytes, done.sealed) = (answer.documents, answer.bytes, answer.sealed)
            return done
        } catch {
            drop(u)
            return Answer(Refusal.of(error, document: nil))
        }
    }

    private func drop(_ u: Upload) {
        u.lock.withLock { u.intake = nil }
        _ = uploads.withLock { $0.removeValue(forKey: u.id) }
    }
}

extension TusReceiver.Answer {
    init(_ error: any Error) { self.init(Refusal.of(error, document: nil)) }

    init(_ refusal: Refusal, extra: [(String, String)]) {
        self.init(refusal)
        headers += extra
    }
}
