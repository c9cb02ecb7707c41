import Crypto
import Foundation
import NIOCore
import VaultCore

/// A transient failure before any batch state changed (the next attempt asks again).
struct TusRetry: Error, CustomStringConvertible { let description: String }

/// What a tus server said about itself (`OPTIONS`).
struct TusCapabilities: Sendable {
    /// `Tus-Extension`.
    var extensions: Set<String>
    /// `Tus-Max-Size`, if given.
    var maxSize: UInt64?
    /// The `Upload-Checksum` algorithm to use: sha256 or sha1 when the server lists it, else none.
    var checksum: String?

    init(_ r: UploadResponse) {
        func list(_ name: String) -> [String] {
            (r.header(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        }
        extensions = Set(list("Tus-Extension"))
        maxSize = r.header("Tus-Max-Size").flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
        let algorithms = list("Tus-Checksum-Algorithm")
        checksum = extensions.contains("checksum") ? ["sha256", "sha1"].first { algorithms.contains($0) } : nil
    }
}

/// The payload of one batch read in chunks of any size from any offset: a ``PayloadProducer``
/// started at the offset (it decrypts from the chunk group that covers it, never from a
/// document's start), with the part of its last block that the previous chunk did not take.
final class PayloadChunks {
    private let make: (UInt64) -> PayloadProducer
    private var producer: PayloadProducer?
    private var block: PayloadBlock?
    private var blockAt = 0
    /// The payload offset of the next byte ``read(_:)`` returns.
    private(set) var position: UInt64 = 0

    init(make: @escaping (UInt64) -> PayloadProducer) { self.make = make }

    deinit { block?.release() }

    /// Continues from `offset` (a new producer there, unless it is where reading stands).
    func seek(to offset: UInt64) {
        guard offset != position || producer == nil else { return }
        block?.release()
        block = nil
        producer = make(offset)
        position = offset
    }

    /// The next `count` bytes (fewer only at the end), in a `ByteBuffer` the HTTP client sends
    /// as it is (no second copy of a part in memory).
    func readBuffer(_ count: Int) throws -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: count)
        try out.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
            var filled = 0
            while filled < count, let piece = try next(max: count - filled) {
                UnsafeMutableRawBufferPointer(rebasing: space[filled..<filled + piece.count]).copyMemory(from: piece)
                filled += piece.count
            }
            return filled
        }
        position += UInt64(out.readableBytes)
        return out
    }

    /// The next piece of at most `max` bytes of the current block (nil at the end).
    private func next(max: Int) throws -> UnsafeRawBufferPointer? {
        if producer == nil { seek(to: position) }
        if block == nil || blockAt == block!.bytes.count {
            block?.release()
            block = nil
            guard let next = try producer!.next() else { return nil }
            block = next
            blockAt = 0
        }
        let b = block!.bytes
        let n = min(max, b.count - blockAt)
        defer { blockAt += n }
        return UnsafeRawBufferPointer(rebasing: b[blockAt..<blockAt + n])
    }

    /// The next `count` bytes (fewer only at the end).
    /// - Throws: ``DocumentFailure`` when a document fails authentication.
    func read(_ count: Int) throws -> [UInt8] {
        if producer == nil { seek(to: position) }
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            if block == nil || blockAt == block!.bytes.count {
                block?.release()
                block = nil
                guard let next = try producer!.next() else { break }
                block = next
                blockAt = 0
            }
            let b = block!.bytes
            let n = min(count - out.count, b.count - blockAt)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[blockAt..<blockAt + n]))
            blockAt += n
        }
        position += UInt64(out.count)
        return out
    }
}

extension Uploader {
    /// The smallest PATCH a 413 halves the chunk size down to.
    static let minimumTusChunk = 256 << 10

    /// One attempt at batch `i` over tus 1.0 (core, creation, checksum, termination): create the
    /// upload (or HEAD the journaled one for the server's offset), then PATCH chunks from that
    /// offset, each produced from the seekable payload and checksummed, journaling every offset
    /// the server acknowledges. A dropped connection or 5xx ends the attempt; the next one HEADs
    /// and continues from the server's offset, so acknowledged bytes are never sent again.
    func tusAttempt(index i: Int, journal: inout UploadJournal, attempt: Int) async throws -> AttemptOutcome {
        let b = beginAttempt(index: i, journal: &journal, attempt: attempt)
        let (n, length, before, total) = (b.n, b.length, b.before, b.total)
        let startedAt = journal.batches[i].tusOffset ?? 0
        var base: [(String, String)] = [("Tus-Resumable", "1.0.0")]
        if let auth = options.target.authorization { base.append(("Authorization", auth)) }
        base += options.target.headers
        do {
            let caps = try await tusCapabilities(headers: base)
            if let max = caps.maxSize, length > max {
                return .split(reason: "Tus-Max-Size \(max)", serverSays: "")
            }
            // The upload: the journaled one, at the server's offset, or a new one.
            var offset: UInt64 = 0
            var url: String
            if let known = journal.batches[i].tusURL {
                url = try Destinations.checkTusJournalURL(known, target: options.target.url, batch: i + 1)
                let head = try await transport.request("HEAD", url: url, headers: base, body: nil)
                if let outcome = tusFailure(head, batch: i, of: n, journal: &journal) { return outcome }
                guard let o = head.header("Upload-Offset").flatMap({ UInt64($0) }), o <= length else {
                    return .retry(reason: "HEAD \(head.status) without a valid Upload-Offset", retryAfter: nil)
                }
                offset = o
                if offset > 0 && offset < length { onEvent(.resumed(batch: i + 1, at: offset)); resumedBytes += offset }
            } else {
                let metadata = [("filename", String(format: "batch-%04d.json", i + 1)), ("run", journal.runId), ("batch", "\(i + 1)/\(n)")]
                    .map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
                let created = try await transport.request("POST", url: nil, headers: base + [
                    ("Upload-Length", String(length)), ("Upload-Metadata", metadata),
                    ("Idempotency-Key", journal.batches[i].key), ("X-Vault-Batch", "\(i + 1)/\(n)"),
                ] + logHeadHeader, body: .bytes([]))
                if created.status == 413 { return .split(reason: "413 \(created.reason)", serverSays: Self.serverSays(created)) }
                if let outcome = tusFailure(created, batch: i, of: n, journal: &journal) { return outcome }
                guard created.status == 201, let location = created.header("Location"),
                      let resolved = URL(string: location, relativeTo: URL(string: options.target.url))?.absoluteURL else {
                    return .refused(VaultError(.uploadRejected, "the tus server answered the creation with \(created.status) \(created.reason) and no Location"))
                }
                guard Destinations.sameOrigin(resolved, as: options.target.url) else {
                    return .refused(VaultError(.uploadRejected, "the tus server's upload URL points to another host (\(resolved.host ?? "?")); vault sends nothing there",
                                               hint: "configure the server's Location base URL to its own address"))
                }
                url = resolved.absoluteString
                journal.batches[i].tusURL = url
                journal.batches[i].tusOffset = 0
                try journal.save(to: vault)
            }
            onEvent(.sent(done: before + offset, total: total))
            let chunks = payloadChunks(b, index: i, journal: journal)
            chunks.seek(to: offset)
            var pending: [UInt8]?
            var mismatches = 0
            while offset < length {
                let chunk = try pending ?? chunks.read(min(tusChunkSize, Int(length - offset)))
                pending = nil
                var headers = base + [("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream")]
                if let algorithm = caps.checksum {
                    let digest = algorithm == "sha256" ? Data(SHA256.hash(data: chunk)) : Data(Insecure.SHA1.hash(data: chunk))
                    headers.append(("Upload-Checksum", "\(algorithm) \(digest.base64EncodedString())"))
                }
                let r = try await transport.request("PATCH", url: url, headers: headers, body: .bytes(chunk))
                switch r.status {
                case 200, 204:
                    guard let acknowledged = r.header("Upload-Offset").flatMap({ UInt64($0) }), acknowledged > offset,
                          acknowledged <= length else {
                        return .retry(reason: "PATCH \(r.status) without a valid Upload-Offset", retryAfter: nil)
                    }
                    offset = acknowledged
                    if chunks.position != offset { chunks.seek(to: offset) }
                    journal.batches[i].tusOffset = offset
                    try journal.save(to: vault)
                    onEvent(.sent(done: before + offset, total: total))
                case 460:   // the server's checksum of the chunk differs: send it again
                    mismatches += 1
                    guard mismatches < 3 else { return .retry(reason: "460 checksum mismatch, \(mismatches) times in a row", retryAfter: nil) }
                    pending = chunk
                case 413 where chunk.count > Self.minimumTusChunk:   // a proxy's or the server's chunk limit
                    tusChunkSize = max(Self.minimumTusChunk, chunk.count / 2)
                    pending = Array(chunk[..<tusChunkSize])
                    chunks.seek(to: offset + UInt64(tusChunkSize))
                    onEvent(.chunkSize(bytes: tusChunkSize, reason: "413 \(r.reason)"))
                case 409:   // offsets disagree: the server's is the truth
                    let head = try await transport.request("HEAD", url: url, headers: base, body: nil)
                    guard let o = head.header("Upload-Offset").flatMap({ UInt64($0) }), o <= length else {
                        return .retry(reason: "409 and HEAD \(head.status) without a valid Upload-Offset", retryAfter: nil)
                    }
                    offset = o
                    chunks.seek(to: offset)
                default:
                    if let outcome = tusFailure(r, batch: i, of: n, journal: &journal) {
                        if case .retry(let reason, _) = outcome, offset > startedAt, r.status >= 500 { return .resume(at: offset, reason: reason) }
                        return outcome
                    }
                    return .retry(reason: "PATCH \(r.status) \(r.reason)", retryAfter: nil)
                }
            }
            journal.batches[i].httpStatus = 204
            return .confirmed(status: 204, duplicate: false)
        } catch let f as DocumentFailure {
            return .skip(f)
        } catch let e as VaultError {
            return .refused(e)
        } catch {
            if error is CancellationError { throw error }
            let reason = Self.describe(error, timeout: options.target.idleTimeout)
            let acknowledged = journal.batches[i].tusOffset ?? 0
            return acknowledged > startedAt ? .resume(at: acknowledged, reason: reason) : .retry(reason: reason, retryAfter: nil)
        }
    }

    /// The outcome of a tus answer that is not progress, or nil for 2xx. 404 and 410: the server
    /// no longer has the upload, so the batch starts again with a new one.
    private func tusFailure(_ r: UploadResponse, batch i: Int, of n: Int, journal: inout UploadJournal) -> AttemptOutcome? {
        journal.batches[i].httpStatus = r.status
        switch r.status {
        case 200..<300: return nil
        case 404, 410:
            journal.batches[i].tusURL = nil
            journal.batches[i].tusOffset = nil
            return .retry(reason: "the server no longer has the upload (\(r.status) \(r.reason)); starting the batch again", retryAfter: 0)
        default:
            switch RetryPolicy.decide(status: r.status) {
            case .confirmed: return nil
            case .authentication:
                return .refused(VaultError(.uploadUnauthorized, "the server refused the credentials (\(r.status) \(r.reason))",
                                           hint: "check VAULT_UPLOAD_TOKEN, or VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD"))
            case .retry: return .retry(reason: "\(r.status) \(r.reason)", retryAfter: RetryPolicy.parseRetryAfter(r.retryAfter))
            case .tooLarge: return .split(reason: "\(r.status) \(r.reason)", serverSays: Self.serverSays(r))
            case .reject:
                return .refused(VaultError(.uploadRejected, "the tus server rejected batch \(i + 1)/\(n): \(r.status) \(r.reason)\(Self.serverSays(r))"))
            }
        }
    }

    /// `OPTIONS` once per run.
    private func tusCapabilities(headers: [(String, String)]) async throws -> TusCapabilities {
        if let known = tusServer { return known }
        let r = try await transport.request("OPTIONS", url: nil, headers: headers, body: nil)
        guard (200..<300).contains(r.status) else {
            if RetryPolicy.decide(status: r.status) == .retry { throw TusRetry(description: "OPTIONS: \(r.status) \(r.reason)") }
            throw VaultError(r.status == 401 || r.status == 403 ? .uploadUnauthorized : .uploadRejected,
                             "the server does not answer tus OPTIONS (\(r.status) \(r.reason)); is it a tus endpoint?")
        }
        let caps = TusCapabilities(r)
        guard caps.extensions.contains("creation") else {
            throw VaultError(.uploadRejected, "the tus server does not offer the creation extension (Tus-Extension: \(r.header("Tus-Extension") ?? "none"))")
        }
        tusServer = caps
        return caps
    }

    /// Ends an abandoned tus upload (a batch split or changed): DELETE, best effort.
    func terminate(_ url: String?) async {
        guard let url, tusServer?.extensions.contains("termination") == true else { return }
        var headers: [(String, String)] = [("Tus-Resumable", "1.0.0")]
        if let auth = options.target.authorization { headers.append(("Authorization", auth)) }
        _ = try? await transport.request("DELETE", url: url, headers: headers + options.target.headers, body: nil)
    }
}
