import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

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
            (r.header(name) ?? "").split(separator: ",").map { $0.trimmingSpaces().lowercased() }
                .filter { !$0.isEmpty }
        }
        extensions = Set(list("Tus-Extension"))
        maxSize = r.header("Tus-Max-Size").flatMap { UInt64($0.trimmingSpaces()) }
        let algorithms = list("Tus-Checksum-Algorithm")
        checksum = extensions.contains("checksum") ? ["sha256", "sha1"].first { algorithms.contains($0) } : nil
    }
}

/// `tus`: tus 1.0 (core, creation, checksum, termination). Each attempt creates the batch's
/// upload (or HEADs the journaled one for the server's offset), then PATCHes chunks from that
/// offset, each produced from the seekable payload and checksummed, journaling every offset
/// the server acknowledges. A dropped connection or 5xx ends the attempt; the next one HEADs
/// and continues from the server's offset, so acknowledged bytes are never sent again.
final class TusSender: BatchSender, @unchecked Sendable {
    // @unchecked: the uploader calls one attempt at a time; `server` and `chunkSize` change
    // only inside an attempt.
    private let target: UploadTarget
    private let transport: any UploadTransport
    private let shape: PayloadShape
    /// Bytes per PATCH (halved on 413), and what the server offers (asked once per run).
    private var chunkSize: Int
    private var server: TusCapabilities?

    init(target: UploadTarget, transport: any UploadTransport, shape: PayloadShape, options: TusOptions) {
        (self.target, self.transport, self.shape, chunkSize) = (target, transport, shape, options.chunkSize)
    }

    func format(batch: Int, of: Int) -> PayloadFormat { .json(shape) }

    /// `Tus-Resumable`, the credentials and the target's extra headers: on every request.
    private var base: [(String, String)] {
        [("Tus-Resumable", "1.0.0")] + (target.authorization.map { [("Authorization", $0)] } ?? [])
            + target.headers.map { ($0.name, $0.value) }
    }

    func attempt(_ a: BatchAttempt) async throws -> AttemptOutcome {
        let startedAt = a.wire.tusOffset
        do {
            let caps = try await capabilities()
            if let max = caps.maxSize, a.length > max { return .split(reason: "Tus-Max-Size \(max)", serverSays: "") }
            switch try await locate(a) {
            case .outcome(let outcome):
                return outcome
            case .at(let url, let offset):
                a.onSent(offset)
                return try await patch(a, url: url, from: offset, startedAt: startedAt, checksum: caps.checksum)
            }
        } catch {
            let outcome = try AttemptOutcome.of(error, timeout: target.idleTimeout)
            if case .retry(let reason, _, _) = outcome, a.wire.tusOffset > startedAt {
                return .resume(at: a.wire.tusOffset, reason: reason)
            }
            return outcome
        }
    }

    /// Where the batch's upload stands: the journaled one at the server's offset, or a new one.
    private enum Located { case at(url: String, offset: UInt64), outcome(AttemptOutcome) }

    private func locate(_ a: BatchAttempt) async throws -> Located {
        guard case .tus(let known, _) = a.wire else { return try await create(a) }
        let url = try Destinations.checkTusJournalURL(known, target: target.address, batch: a.index + 1)
        let head = try await transport.request(.head, url: url, headers: base, body: nil)
        if let outcome = try failure(head, a) { return .outcome(outcome) }
        guard let offset = head.header("Upload-Offset").flatMap({ UInt64($0) }),
              offset <= a.length else {
            return .outcome(.retry(reason: "HEAD \(head.status) without a valid Upload-Offset", retryAfter: nil))
        }
        if offset > 0 && offset < a.length { a.resumed(at: offset) }
        return .at(url: url, offset: offset)
    }

    /// Creates the batch's upload; its URL must be on the upload URL's origin.
    private func create(_ a: BatchAttempt) async throws -> Located {
        // filename and filetype as tus-js-client and Uppy send them (some servers want them on a
        // resume), name and type as Uppy's own, then vault's run and batch.
        let metadata = [
            ("filename", a.fileName), ("filetype", "application/json"), ("name", a.fileName),
            ("type", "application/json"),
            ("run", a.runID), ("batch", a.label)
        ]
        .map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
        let created = try await transport.request(
            .post, url: nil,
            headers: base + [
                ("Upload-Length", String(a.length)), ("Upload-Metadata", metadata),
                ("Idempotency-Key", a.key), ("X-Vault-Batch", a.label)
            ] + a.logHead, body: .bytes([]))
        if created.status == 413 {
            return .outcome(.split(reason: "413 \(created.reason)", serverSays: created.serverSays))
        }
        if let outcome = try failure(created, a) { return .outcome(outcome) }
        guard created.status == 201,
              let location = created.header("Location"),
              let resolved = URL(string: location, relativeTo: URL(string: target.address))?.absoluteURL else {
            return .outcome(
                .refused(
                    VaultError(
                        .uploadRejected,
                        "the tus server answered the creation with \(created.status) \(created.reason) and no Location")
                ))
        }
        guard Destinations.sameOrigin(resolved, as: target.address) else {
            return .outcome(
                .refused(
                    VaultError(
                        .uploadRejected,
                        """
                            the tus server's upload URL points to another host (\(resolved.host ?? "?")); vault sends \
                            nothing there
                            """,
                        hint: "configure the server's Location base URL to its own address")))
        }
        try a.record(.tus(url: resolved.absoluteString, offset: 0))
        return .at(url: resolved.absoluteString, offset: 0)
    }

    /// PATCHes the payload from `offset` to its end.
    private func patch(
        _ a: BatchAttempt, url: String, from start: UInt64, startedAt: UInt64, checksum: String?
    ) async throws -> AttemptOutcome {
        var offset = start
        let chunks = a.chunks()
        chunks.seek(to: offset)
        var pending: [UInt8]?
        var mismatches = 0
        while offset < a.length {
            let chunk = try pending ?? chunks.read(min(chunkSize, Int(a.length - offset)))
            pending = nil
            var headers =
                base + [("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream")]
            if let checksum { headers.append(("Upload-Checksum", Self.checksum(chunk, checksum))) }
            let r = try await transport.request(.patch, url: url, headers: headers, body: .bytes(chunk))
            switch r.status {
            case 200, 204:
                guard let acknowledged = r.header("Upload-Offset").flatMap({ UInt64($0) }),
                      acknowledged > offset,
                      acknowledged <= a.length else {
                    return .retry(reason: "PATCH \(r.status) without a valid Upload-Offset", retryAfter: nil)
                }
                offset = acknowledged
                if chunks.position != offset { chunks.seek(to: offset) }
                try a.record(.tus(url: url, offset: offset))
                a.onSent(offset)
            case 460:  // the server's checksum of the chunk differs: send it again
                mismatches += 1
                guard mismatches < 3 else {
                    return .retry(reason: "460 checksum mismatch, \(mismatches) times in a row", retryAfter: nil)
                }
                pending = chunk
            case 413 where chunk.count > TusOptions.minimumChunkSize:  // a proxy's or the server's chunk limit
                chunkSize = max(TusOptions.minimumChunkSize, chunk.count / 2)
                pending = Array(chunk[..<chunkSize])
                chunks.seek(to: offset + UInt64(chunkSize))
                a.onEvent(.chunkSize(bytes: chunkSize, reason: "413 \(r.reason)"))
            case 409:  // offsets disagree: the server's is the truth
                let head = try await transport.request(.head, url: url, headers: base, body: nil)
                guard let o = head.header("Upload-Offset").flatMap({ UInt64($0) }),
                      o <= a.length else {
                    return .retry(reason: "409 and HEAD \(head.status) without a valid Upload-Offset", retryAfter: nil)
                }
                offset = o
                chunks.seek(to: offset)
            default:
                guard let outcome = try failure(r, a) else {
                    return .retry(reason: "PATCH \(r.status) \(r.reason)", retryAfter: nil)
                }
                if case .retry(let reason, _, _) = outcome, offset > startedAt, r.status >= 500 {
                    return .resume(at: offset, reason: reason)
                }
                return outcome
            }
        }
        a.answered(204)
        return .confirmed(status: 204, duplicate: false)
    }

    /// `Upload-Checksum`: the algorithm and the chunk's digest in base64.
    static func checksum(_ chunk: [UInt8], _ algorithm: String) -> String {
        let digest = algorithm == "sha256" ? Data(SHA256.hash(data: chunk)) : Data(Insecure.SHA1.hash(data: chunk))
        return "\(algorithm) \(digest.base64EncodedString())"
    }

    /// The outcome of a tus answer that is not progress, or nil for 2xx. 404 and 410: the server
    /// no longer has the upload, so the batch starts again with a new one.
    private func failure(_ r: UploadResponse, _ a: BatchAttempt) throws -> AttemptOutcome? {
        a.answered(r.status)
        switch r.status {
        case 200..<300:
            return nil
        case 404, 410:
            try a.record(.none)
            return .retry(
                reason: "the server no longer has the upload (\(r.status) \(r.reason)); starting the batch again",
                retryAfter: 0)
        default:
            let outcome = AttemptOutcome.of(r, rejected: "the tus server rejected batch \(a.label)")
            if case .confirmed = outcome { return nil }
            return outcome
        }
    }

    /// `OPTIONS` once per run.
    private func capabilities() async throws -> TusCapabilities {
        if let known = server { return known }
        let r = try await transport.request(.options, url: nil, headers: base, body: nil)
        guard (200..<300).contains(r.status) else {
            if RetryPolicy.decide(status: r.status) == .retry {
                throw TransientFailure(reason: "OPTIONS: \(r.status) \(r.reason)")
            }
            throw VaultError(
                r.status == 401 || r.status == 403 ? .uploadUnauthorized : .uploadRejected,
                "the server does not answer tus OPTIONS (\(r.status) \(r.reason)); is it a tus endpoint?")
        }
        let caps = TusCapabilities(r)
        guard caps.extensions.contains("creation") else {
            throw VaultError(
                .uploadRejected,
                """
                    the tus server does not offer the creation extension (Tus-Extension: \
                    \(r.header("Tus-Extension") ?? "none"))
                    """
            )
        }
        server = caps
        return caps
    }

    /// Ends an abandoned upload (a batch split or changed): DELETE, best effort.
    func abandon(_ state: UploadJournal.WireState) async {
        guard case .tus(let url, _) = state,
              server?.extensions.contains("termination") == true else { return }
        _ = try? await transport.request(.delete, url: url, headers: base, body: nil)
    }
}

extension UploadJournal.WireState {
    /// The offset a tus server acknowledged, 0 for any other state.
    var tusOffset: UInt64 {
        if case .tus(_, let offset) = self { return offset }
        return 0
    }
}
