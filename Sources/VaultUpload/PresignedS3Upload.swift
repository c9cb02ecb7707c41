#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3

/// One presigned part URL from the back office.
struct PresignedPart: Codable, Sendable {
    var number: Int
    var url: String
    var expires: String?

    /// True when the URL expires within `margin` seconds (or its expiry cannot be read).
    func expiresSoon(margin: Double = 60, now: Date = Date()) -> Bool {
        guard let e = expires,
              let date = UTCTime.parseISO8601(e) else { return false }
        return date.timeIntervalSince(now) < margin
    }
}

/// `s3` through presigned URLs: the back office (the upload's URL, docs/UPLOAD.md) creates the
/// multipart upload and hands out a URL per part; vault PUTs each part (with `Content-MD5`, its
/// ETag checked), asks again for URLs that expired or are about to, and has the back office
/// complete (or abort) the upload. Resuming asks it to list the parts.
final class PresignedS3Sender: BatchSender, @unchecked Sendable {
    // @unchecked: immutable after init; the transport is Sendable.
    private let endpoint: UploadTarget
    private let transport: any UploadTransport
    private let shape: PayloadShape
    private let options: PresignOptions

    init(endpoint: UploadTarget, transport: any UploadTransport, shape: PayloadShape, options: PresignOptions) {
        (self.endpoint, self.transport, self.shape, self.options) = (endpoint, transport, shape, options)
    }

    func format(batch: Int, of: Int) -> PayloadFormat { .json(shape) }

    private struct Created: Decodable { var uploadId: String; var key: String; var parts: [PresignedPart] }
    private struct Parts: Decodable { var parts: [PresignedPart] }
    // The calls' bodies, written with sorted keys.
    private struct CreateCall: Encodable {
        var key, contentType: String
        var metadata: [String: String]
        var parts: Int
    }
    private struct CompleteCall: Encodable {
        struct Part: Encodable {
            var number: Int
            var etag: String
        }
        var key, uploadId: String
        var parts: [Part]
    }
    private struct PartsCall: Encodable {
        var key, uploadId: String
        var numbers: [Int]
    }
    private static var json: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }
    private struct Listed: Decodable { struct P: Decodable { var number: Int; var etag: String }; var parts: [P] }
    private struct Head: Decodable { var size: UInt64 }

    func attempt(_ a: BatchAttempt) async throws -> AttemptOutcome {
        let geometry = MultipartBatch(
            length: a.length,
            partSize: a.wire.multipart?.partSize ?? S3Target.partSize(for: a.length, atLeast: options.partSize))
        do {
            try Destinations.checkRunID(a.runID)
            let requested = "\(a.runID)/" + a.fileName
            if let key = a.wire.multipart?.key { try Destinations.checkPresignedKey(key, requested: requested) }
            guard
                var done = try await geometry.resume(
                    a,
                    listed: { m in
                        let listed = try await self.call(
                            "list", ["key": m.key, "uploadId": m.uploadID], as: Listed.self)
                        return Dictionary(
                            listed.parts.map { ($0.number, S3Client.unquote($0.etag)) },
                            uniquingKeysWith: { _, last in last })
                    }, objectSize: { key in try? await self.call("head", ["key": key], as: Head.self).size })
            else {
                return .confirmed(status: 200, duplicate: true)
            }
            var urls: [Int: PresignedPart] = [:]
            let state: UploadJournal.MultipartState
            if let known = a.wire.multipart {
                state = known
            } else {
                let created = try await call(
                    "create",
                    CreateCall(
                        key: requested, contentType: "application/json",
                        metadata: [
                            "vault-batch": a.label, "vault-documents": String(a.docs.count), "vault-run": a.runID
                        ], parts: geometry.count), as: Created.self)
                try Destinations.checkPresignedKey(created.key, requested: requested)
                state = UploadJournal.MultipartState(
                    key: created.key, uploadID: created.uploadId, partSize: geometry.partSize, parts: [])
                try a.record(.multipart(state))
                for p in created.parts { urls[p.number] = p }
            }
            let chunks = a.chunks()
            var sent = geometry.bytes(of: done.keys)
            for number in 1...geometry.count where done[number] == nil {
                chunks.seek(to: geometry.offset(of: number))
                let body = try chunks.read(Int(geometry.size(of: number)))
                done[number] = try await put(part: number, body, of: a, state, urls: &urls)
                try a.record(.multipart(state.with(parts: done)))
                sent += UInt64(body.count)
                a.onSent(sent)
            }
            _ = try await call(
                "complete",
                CompleteCall(
                    key: state.key, uploadId: state.uploadID,
                    parts: done.keys.sorted().map { CompleteCall.Part(number: $0, etag: done[$0]!) }),
                as: [String: String].self)
            return .confirmed(status: 200, duplicate: false)
        } catch {
            // A part URL's host comes from the back office, not from the user's URL: say so.
            if let host = TransportError.unknownHost(error),
               host.host.lowercased() != URLComponents(string: endpoint.address)?.host?.lowercased() {
                await abandon(a.wire)
                try? a.record(.none)
                return .refused(
                    VaultError(
                        .uploadRejected,
                        """
                            the presign endpoint handed out part URLs on the host '\(host.host)', which cannot be \
                            found (\(host.reason)); nothing was sent
                            """,
                        hint: "the back office's storage address is wrong, or not one this machine can reach"))
            }
            let outcome = try AttemptOutcome.of(error, timeout: endpoint.idleTimeout)
            if case .refused = outcome {
                await abandon(a.wire)
                try? a.record(.none)
            }
            return outcome
        }
    }

    /// PUTs one part to its presigned URL; returns its ETag, checked against the part's MD5. An
    /// expired or refused URL is asked for again, once; a `BadDigest` is sent once more.
    private func put(
        part number: Int, _ body: [UInt8], of a: BatchAttempt, _ state: UploadJournal.MultipartState,
        urls: inout [Int: PresignedPart]
    ) async throws -> String {
        let md5 = S3Client.md5(body)
        var asked = false, resent = false
        while true {
            if urls[number] == nil || urls[number]!.expiresSoon() {
                let fresh = try await call(
                    "parts", PartsCall(key: state.key, uploadId: state.uploadID, numbers: [number]), as: Parts.self)
                for p in fresh.parts { urls[p.number] = p }
                asked = true
            }
            let url = try checkedURL(urls[number]?.url, part: number, state)
            let r = try await transport.request(
                .put, url: url, headers: [("Content-MD5", md5.base64)], body: .bytes(body))
            if (200..<300).contains(r.status) {
                let etag = S3Client.unquote(r.header("ETag") ?? "")
                guard etag == md5.hex else {
                    throw VaultError(
                        .uploadRejected, "part \(number) of batch \(a.label): the ETag \(etag) is not the part's MD5")
                }
                return etag
            }
            let error = S3XML.error(Array(r.body.utf8))
            if r.status == 403 && !asked { urls[number] = nil; continue }
            let what =
                """
                    part \(number) of batch \(a.label): \(r.status) \
                    \(error.map { "\($0.code): \($0.message)" } ?? r.reason)
                    """
            if r.status == 403 {
                throw VaultError(
                    .uploadUnauthorized, "the store refused the presigned URL for \(what)",
                    hint: "the URL expired or was altered")
            }
            if error?.code == "BadDigest" {
                if !resent { resent = true; continue }
                throw S3Sender.badDigestTwice(part: number, batch: a.label)
            }
            if RetryPolicy.decide(status: r.status) == .retry { throw TransientFailure(reason: what) }
            throw VaultError(.uploadRejected, what)
        }
    }

    /// A part URL that is for that part of that upload, and not cleartext over a network.
    private func checkedURL(_ url: String?, part number: Int, _ state: UploadJournal.MultipartState) throws -> String {
        guard let url,
              let parsed = URLComponents(string: url),
              let scheme = parsed.scheme?.lowercased(),
              ["http", "https"].contains(scheme) else {
            throw VaultError(.uploadRejected, "the presign endpoint gave no usable URL for part \(number)")
        }
        try Destinations.checkPresignedPart(parsed, number: number, uploadID: state.uploadID, key: state.key)
        if scheme == "http" && !UploadTarget.isLoopback(host: parsed.host ?? "") && !options.insecureHTTP {
            throw VaultError(
                .usage,
                "refusing to send documents unencrypted over http:// to \(parsed.host ?? "?") (a presigned part URL)",
                hint: "have the back office presign https:// URLs")
        }
        return url
    }

    /// POSTs `body` as JSON to the presign endpoint's `call` and decodes the answer. Credentials
    /// are the upload's (Bearer or Basic); the station has no S3 secret.
    private func call<T: Decodable>(_ call: String, _ body: some Encodable, as: T.Type) async throws -> T {
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let auth = endpoint.authorization { headers.append(("Authorization", auth)) }
        let base = endpoint.address
        let url = base.hasSuffix("/") ? base + call : base + "/" + call
        let r = try await transport.request(
            .post, url: url, headers: headers,
            body: .bytes(Array(try Self.json.encode(body))))
        switch r.status {
        case 200..<300:
            do { return try JSONDecoder().decode(T.self, from: Data(r.body.utf8)) } catch {
                throw VaultError(
                    .uploadRejected,
                    """
                        the presign endpoint's answer to \(call) is not what the presign protocol (UPLOAD.md) \
                        describes: \(String(r.body.prefix(200)))
                        """
                )
            }
        case 401, 403:
            throw VaultError(
                .uploadUnauthorized, "the presign endpoint refused the credentials (\(r.status) \(r.reason))")
        case 404 where ["NoSuchUpload", "NoSuchKey", "NotFound"].contains(r.jsonField("error", as: String.self) ?? ""):
            throw VaultError(.notFound, "presign \(call): \(r.body.trimmingSpacesAndNewlines())")
        default:
            if RetryPolicy.decide(status: r.status) == .retry {
                throw TransientFailure(reason: "presign \(call): \(r.status) \(r.reason)")
            }
            throw VaultError(
                .uploadRejected, "the presign endpoint rejected \(call): \(r.status) \(r.reason)\(r.serverSays)")
        }
    }

    /// Has the back office abort a batch's multipart upload that will not be continued (best effort).
    func abandon(_ state: UploadJournal.WireState) async {
        guard let m = state.multipart else { return }
        _ = try? await call("abort", ["key": m.key, "uploadId": m.uploadID], as: [String: String].self)
    }
}
