import AsyncHTTPClient
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import VaultCore

/// The S3 calls vault needs, signed with SigV4 and nothing more: objects (PUT with
/// `Content-MD5`, HEAD, ranged GET), buckets (create), multipart uploads (create, upload part,
/// complete, abort, list parts over every page). No upload policy: callers decide what to retry.
///
/// Errors are ``VaultError``s of the store codes, decided from the parsed S3 error code (never
/// from text), which the error keeps as its cause (``S3ServiceError``, ``VaultError/s3Code``):
/// `store-unauthorized` for a refused signature or key (403 SignatureDoesNotMatch,
/// InvalidAccessKeyId, AccessDenied), `not-found` for NoSuchBucket/NoSuchKey/NoSuchUpload,
/// `store-unavailable` for what may pass (5xx, SlowDown, a dropped connection, a passed
/// deadline), `store-rejected` otherwise (BadDigest included). The client never retries: its
/// callers do, through ``RetryPolicy``, once per operation.
public final class S3Client: Sendable {
    public let endpoint: URL
    public let addressing: S3Addressing
    let signer: SigV4
    private let http: HTTPClient
    /// Seconds without progress before a request fails, and the fixed part of every request's
    /// deadline (``deadline(forBytes:)``).
    public let timeout: Double

    /// The slowest average rate a request may move its bytes at: a whole request must finish
    /// within `timeout` plus its bytes at this rate, so a store that trickles an answer (one
    /// byte every few seconds) fails in bounded time, not only one that stops.
    public static let minimumRate: Double = 262_144
    /// The largest answer read into memory when no other bound is given (a listing page, an
    /// error, a part list, a multipart answer): S3 sends far less.
    public static let answerLimit = 4 << 20
    /// Listing pages followed at most (10 million keys at 1,000 a page).
    public static let maxPages = 10_000

    public init(
        endpoint: URL, region: String, credentials: S3Credentials, addressing: S3Addressing = .path,
        timeout: Double = 60
    ) {
        self.endpoint = endpoint
        self.addressing = addressing
        self.timeout = timeout
        signer = SigV4(credentials: credentials, region: region)
        var config = HTTPClient.Configuration()
        let t = TimeAmount.milliseconds(Int64(timeout * 1000))
        config.timeout = .init(connect: t, read: t, write: t)
        config.connectionPool.retryConnectionEstablishment = false
        config.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    public func shutdown() async { try? await http.shutdown() }

    /// When a request moving `bytes` (sent and received) must be finished.
    func deadline(forBytes bytes: UInt64) -> NIODeadline {
        .now() + .milliseconds(Int64((timeout + Double(bytes) / Self.minimumRate) * 1000))
    }

    /// An S3 answer: status, headers and body.
    package struct Response: Sendable {
        package var status: Int
        package var headers: HTTPHeaders
        package var body: [UInt8]
        package func header(_ name: String) -> String? { headers.first(name: name) }
    }

    /// Sends a signed request and returns the answer, whatever its status. The body's SHA-256
    /// is signed unless `unsignedBody`: a body sent with a `Content-MD5` header (which is signed,
    /// and which the store checks) need not be hashed twice.
    package func send(
        _ method: RequestMethod, bucket: String, key: String = "", query: [(String, String)] = [],
        headers: HTTPHeaders = [:], body: [UInt8] = [], unsignedBody: Bool = false, date: Date = Date(),
        limit: Int = S3Client.answerLimit
    ) async throws -> Response {
        try await send(
            method, bucket: bucket, key: key, query: query, headers: headers, body: ByteBuffer(bytes: body),
            unsignedBody: unsignedBody, date: date, limit: limit)
    }

    /// The same, with the body in a `ByteBuffer`, which the HTTP client sends without a copy
    /// (large parts are produced straight into one).
    package func send(
        _ method: RequestMethod, bucket: String, key: String = "", query: [(String, String)] = [],
        headers: HTTPHeaders = [:], body: ByteBuffer, unsignedBody: Bool = false, date: Date = Date(),
        limit: Int = S3Client.answerLimit, expected: UInt64? = nil,
        receive: ((ByteBuffer) throws -> Void)? = nil
    ) async throws -> Response {
        let unsigned = addressing.request(
            method: method.rawValue, endpoint: endpoint, bucket: bucket, key: key, query: query,
            headers: headers.map { ($0.name, $0.value) })
        precondition(
            !unsignedBody || headers.contains(name: "Content-MD5"), "an unsigned body needs a signed Content-MD5")
        let signed = signer.sign(
            unsigned, payload: unsignedBody ? .unsigned : body.withUnsafeReadableBytes { .hashing($0) }, date: date)
        var request = HTTPClientRequest(url: signed.url)
        request.method = HTTPMethod(rawValue: method.rawValue)
        for (k, v) in signed.headers { request.headers.add(name: k, value: v) }
        request.headers.replaceOrAdd(name: "Host", value: signed.host)
        if body.readableBytes > 0 || [.put, .post].contains(method) { request.body = .bytes(body) }
        let response: HTTPClientResponse
        let deadline = deadline(forBytes: UInt64(body.readableBytes) + (expected ?? UInt64(limit)))
        do {
            response = try await http.execute(request, deadline: deadline)
        } catch {
            throw Self.transportFailure(error, "S3 \(method) \(bucket)/\(key)", timeout: timeout)
        }
        var collected = ByteBuffer()
        do {
            if let receive, (200..<300).contains(response.status.code) {
                // A successful body goes to the caller piece by piece (a download to a file),
                // never more than the listing said the object holds.
                var received: UInt64 = 0
                for try await part in response.body {
                    try Self.check(deadline, method, bucket, key)
                    received += UInt64(part.readableBytes)
                    if let expected, received > expected {
                        throw VaultError(
                            .trailingData,
                            "S3 \(method) \(bucket)/\(key): the store sent more than the \(expected) bytes it listed")
                    }
                    try receive(part)
                }
            } else {
                for try await var part in response.body {
                    try Self.check(deadline, method, bucket, key)
                    guard collected.readableBytes + part.readableBytes <= limit else {
                        throw VaultError(
                            .vaultDamaged,
                            """
                                S3 \(method) \(bucket)/\(key): the store's answer is longer than \(limit) bytes, more \
                                than such an answer can be
                                """
                        )
                    }
                    collected.writeBuffer(&part)
                }
            }
        } catch let e as VaultError {
            throw e
        } catch {
            // The connection dropped in the middle of the answer: as transient as one that failed before it.
            throw Self.transportFailure(error, "S3 \(method) \(bucket)/\(key)", timeout: timeout)
        }
        return Response(
            status: Int(response.status.code), headers: response.headers,
            body: collected.readBytes(length: collected.readableBytes) ?? [])
    }

    /// Fails once `deadline` has passed: the HTTP client's deadline covers the wait for an
    /// answer's head, and this the body, piece by piece (a silent store meets the idle timeout).
    static func check(_ deadline: NIODeadline, _ method: RequestMethod, _ bucket: String, _ key: String) throws {
        if NIODeadline.now() > deadline {
            throw VaultError(
                .storeUnavailable, "S3 \(method) \(bucket)/\(key): \(deadlinePassed)")
        }
    }

    /// A transport error in words; a passed deadline names the bound.
    static func describe(_ error: any Error, timeout: Double) -> String {
        if let h = error as? HTTPClientError, h == .deadlineExceeded { return deadlinePassed }
        return TransportError.describe(error, timeout: timeout)
    }

    static let deadlinePassed = """
        the request took longer than its deadline (the timeout plus its bytes at \
        \(Int(minimumRate) >> 10) KiB/s)
        """

    /// A transport failure as the store's error: a host that does not resolve will not on a
    /// retry (`store-rejected`, with the endpoint to check); anything else may pass.
    static func transportFailure(_ error: any Error, _ what: String, timeout: Double) -> VaultError {
        if let host = TransportError.unknownHost(error) {
            return VaultError(
                .storeRejected, "\(what): cannot find the host '\(host.host)' (\(host.reason))",
                remedy: .checkStoreEndpoint)
        }
        return VaultError(
            .storeUnavailable, "\(what): \(describe(error, timeout: timeout))", cause: StatedTransportFailure(error))
    }

    /// Fails with the S3 error unless the status is 2xx, or the body holds an error although
    /// the status said 200 (CompleteMultipartUpload can).
    @discardableResult
    func check(_ r: Response, _ what: String) throws -> Response {
        let error = S3XML.error(r.body)
        guard !(200..<300).contains(r.status) || error != nil else { return r }
        let service = S3ServiceError(status: r.status, code: error?.code, message: error?.message ?? "")
        throw VaultError(service.vaultCode, "\(what): \(service)", cause: service)
    }

    /// Base64 of the MD5 of `bytes`, for `Content-MD5`; and its hex, which is the part's ETag.
    package static func md5(_ bytes: [UInt8]) -> (base64: String, hex: String) {
        bytes.withUnsafeBytes { md5($0) }
    }

    package static func md5(_ bytes: UnsafeRawBufferPointer) -> (base64: String, hex: String) {
        var h = Insecure.MD5()
        h.update(bufferPointer: bytes)
        let d = Array(h.finalize())
        return (Data(d).base64EncodedString(), SigV4.hex(d))
    }

    package static func md5(_ bytes: ByteBuffer) -> (base64: String, hex: String) {
        bytes.withUnsafeReadableBytes { md5($0) }
    }

    // MARK: Buckets and objects

    public func createBucket(_ bucket: String) async throws {
        try check(try await send(.put, bucket: bucket), "CreateBucket \(bucket)")
    }

    /// PUT of a whole object with `Content-MD5` (S3 checks it: BadDigest). Returns the ETag,
    /// after checking it is the MD5 the client computed.
    @discardableResult
    public func putObject(
        bucket: String, key: String, body: [UInt8], contentType: String,
        metadata: [String: String] = [:]
    ) async throws -> String {
        try await putObject(
            bucket: bucket, key: key, body: ByteBuffer(bytes: body), contentType: contentType, metadata: metadata)
    }

    @discardableResult
    public func putObject(
        bucket: String, key: String, body: ByteBuffer, contentType: String,
        metadata: [String: String] = [:]
    ) async throws -> String {
        let md5 = Self.md5(body)
        var headers: HTTPHeaders = ["Content-Type": contentType, "Content-MD5": md5.base64]
        headers.add(contentsOf: Self.metadataHeaders(metadata))
        let r = try check(
            try await send(.put, bucket: bucket, key: key, headers: headers, body: body, unsignedBody: true),
            "PutObject \(bucket)/\(key)")
        return try Self.etag(of: r, matching: md5.hex, "PutObject \(bucket)/\(key)", body: "body")
    }

    /// The answer's ETag, which for a single PUT or a part is the MD5 of the bytes the store kept.
    static func etag(of r: Response, matching md5: String, _ what: String, body: String) throws -> String {
        let etag = unquote(r.header("ETag") ?? "")
        guard etag == md5 else {
            throw VaultError(.storeRejected, "\(what): the ETag \(etag) is not the \(body)'s MD5 \(md5)")
        }
        return etag
    }

    /// Writes the object only if no object has the key (`If-None-Match: *`, which AWS S3 and
    /// recent S3-compatible stores honour with 412). Returns false when one was already there.
    /// Stores that ignore the header would overwrite: callers that must never overwrite HEAD
    /// first as well, which leaves a race between the HEAD and the PUT on such stores.
    public func putObjectIfAbsent(bucket: String, key: String, body: [UInt8], contentType: String) async throws -> Bool
    {
        try await putObjectIfAbsent(bucket: bucket, key: key, body: ByteBuffer(bytes: body), contentType: contentType)
    }

    /// The same, with the body in a `ByteBuffer`.
    public func putObjectIfAbsent(
        bucket: String, key: String, body: ByteBuffer, contentType: String
    ) async throws -> Bool {
        let md5 = Self.md5(body)
        let headers: HTTPHeaders = ["Content-Type": contentType, "Content-MD5": md5.base64, "If-None-Match": "*"]
        let r = try await send(.put, bucket: bucket, key: key, headers: headers, body: body, unsignedBody: true)
        if r.status == 412 || S3XML.error(r.body)?.code == "PreconditionFailed" { return false }
        try check(r, "PutObject \(bucket)/\(key)")
        return true
    }

    public func deleteObject(bucket: String, key: String) async throws {
        let r = try await send(.delete, bucket: bucket, key: key)
        if r.status == 404 { return }
        try check(r, "DeleteObject \(bucket)/\(key)")
    }

    /// One object of a listing.
    public struct ListedObject: Sendable, Equatable {
        public var key: String
        public var size: UInt64
        public var etag: String
        public var lastModified: String

        public init(key: String, size: UInt64, etag: String, lastModified: String) {
            self.key = key
            self.size = size
            self.etag = etag
            self.lastModified = lastModified
        }
    }

    /// Every object whose key starts with `prefix` (ListObjectsV2, every page through its
    /// continuation token), in the store's order (UTF-8 binary order of keys). Only completed
    /// objects are listed: a multipart upload in progress is not an object yet.
    public func listObjects(bucket: String, prefix: String = "", pageSize: Int = 1000) async throws -> [ListedObject] {
        var listing = S3XML.ObjectListing(
            prefix: prefix, what: "ListObjectsV2 \(bucket)/\(prefix)", pageSize: pageSize)
        var all: [ListedObject] = []
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix), ("max-keys", String(pageSize))]
            if let t = listing.token { query.append(("continuation-token", t)) }
            let r = try check(try await send(.get, bucket: bucket, query: query), listing.what)
            all += try listing.read(r.body)
        } while !listing.done
        return all
    }

    /// True when `bucket` exists, by listing at most one key (a GET, so that a refusal comes
    /// with its S3 error code, which a HEAD would not carry).
    public func bucketExists(_ bucket: String) async throws -> Bool {
        let r = try await send(.get, bucket: bucket, query: [("list-type", "2"), ("max-keys", "1")])
        if r.status == 404 || S3XML.error(r.body)?.code == "NoSuchBucket" { return false }
        try check(r, "ListObjectsV2 \(bucket)")
        return true
    }

    /// HEAD: the object's size and ETag, or nil when there is none.
    public func headObject(bucket: String, key: String) async throws -> ObjectHead? {
        let r = try await send(.head, bucket: bucket, key: key)
        if r.status == 404 { return nil }
        try check(r, "HeadObject \(bucket)/\(key)")
        return ObjectHead(
            size: Self.decimal(r.header("Content-Length")) ?? 0, etag: Self.unquote(r.header("ETag") ?? ""))
    }

    /// Streams the object (or `range` of it) to `receive`, piece by piece as it arrives, and
    /// returns how many bytes came; nothing is held in memory beyond the piece.
    @discardableResult
    /// - Parameter expected: the object's size as listed: more bytes than that are an error,
    ///   and the request's deadline is reckoned from it.
    public func getObject(
        bucket: String, key: String, range: ClosedRange<UInt64>? = nil, expected: UInt64,
        receive: @escaping (ByteBuffer) throws -> Void
    ) async throws -> UInt64 {
        let headers: HTTPHeaders = range.map { ["Range": "bytes=\($0.lowerBound)-\($0.upperBound)"] } ?? [:]
        // nonisolated(unsafe): the delegate calls `receive` on one event loop, in order, and
        // `count` is read only after the request has completed.
        nonisolated(unsafe) var count: UInt64 = 0
        try check(
            try await send(
                .get, bucket: bucket, key: key, headers: headers, body: ByteBuffer(), expected: expected,
                receive: { part in
                    count += UInt64(part.readableBytes)
                    try receive(part)
                }), "GetObject \(bucket)/\(key)")
        return count
    }

    /// A ranged GET (`range` inclusive) whose body is written straight into `target` (memory the
    /// caller owns, keeps valid until the future completes, and reuses: a fresh buffer per block
    /// would cost a page fault per 4 KiB, which was most of a direct export's system time). The
    /// future gives the number of bytes written; a body longer than `target` fails.
    ///
    /// For synchronous readers (an envelope read through ``VaultCore/EnvelopeInput`` by the
    /// core's threads): the request runs on the HTTP client's event loop, and the future is
    /// waited for on the caller's thread, which must not be an event loop (the core's readers and
    /// the commands' threads are not).
    public func getRange(
        bucket: String, key: String, range: ClosedRange<UInt64>, into target: UnsafeMutableRawBufferPointer
    ) -> EventLoopFuture<Int> {
        let headers = [("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")]
        let unsigned = addressing.request(
            method: RequestMethod.get.rawValue, endpoint: endpoint, bucket: bucket, key: key, query: [],
            headers: headers)
        let signed = signer.sign(
            unsigned, payload: .hashing(UnsafeRawBufferPointer(start: nil, count: 0)), date: Date())
        let loop = http.eventLoopGroup.any()
        var request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: signed.url, method: .GET)
        } catch {
            return loop.makeFailedFuture(VaultError(.usage, "S3 GET \(bucket)/\(key): \(error)"))
        }
        for (k, v) in signed.headers { request.headers.add(name: k, value: v) }
        request.headers.replaceOrAdd(name: "Host", value: signed.host)
        let what = "GetObject \(bucket)/\(key)"
        let delegate = IntoMemory(target: target, deadline: deadline(forBytes: UInt64(target.count))) {
            status, headers, body in
            try self.check(Response(status: status, headers: headers, body: body), what)
        }
        return http.execute(
            request: request, delegate: delegate, eventLoop: .delegate(on: loop),
            deadline: deadline(forBytes: UInt64(target.count))
        ).futureResult
            .flatMapErrorThrowing { error in
                if error is VaultError { throw error }
                throw Self.transportFailure(error, "S3 GET \(bucket)/\(key)", timeout: self.timeout)
            }
    }

    /// Receives a response body into caller-owned memory (a successful one), or collects it (an
    /// error's XML) for the check.
    final class IntoMemory: HTTPClientResponseDelegate, @unchecked Sendable {
        // @unchecked: AsyncHTTPClient calls a delegate on one event loop, one call at a time.
        typealias Response = Int
        let target: UnsafeMutableRawBufferPointer
        let deadline: NIODeadline
        let check: (Int, HTTPHeaders, [UInt8]) throws -> Void
        var status = 0
        var headers: HTTPHeaders = [:]
        var filled = 0
        var errorBody: [UInt8] = []

        init(
            target: UnsafeMutableRawBufferPointer, deadline: NIODeadline,
            check: @escaping (Int, HTTPHeaders, [UInt8]) throws -> Void
        ) {
            self.target = target
            self.deadline = deadline
            self.check = check
        }

        func didReceiveHead(task: HTTPClient.Task<Int>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            status = Int(head.status.code)
            headers = head.headers
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            if NIODeadline.now() > deadline {
                return task.eventLoop.makeFailedFuture(
                    VaultError(.storeUnavailable, "S3 GET: \(S3Client.deadlinePassed)"))
            }
            guard (200..<300).contains(status) else {
                errorBody += buffer.readableBytesView.prefix(1 << 20 - errorBody.count)
                return task.eventLoop.makeSucceededVoidFuture()
            }
            let n = buffer.readableBytes
            guard filled + n <= target.count else {
                return task.eventLoop.makeFailedFuture(
                    VaultError(.trailingData, "the store sent more bytes than the range asked for"))
            }
            buffer.withUnsafeReadableBytes {
                UnsafeMutableRawBufferPointer(rebasing: target[filled..<filled + n]).copyMemory(from: $0)
            }
            filled += n
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int {
            try check(status, headers, errorBody)
            return filled
        }
    }

    /// The object's bytes, or those of `range` (inclusive, as in HTTP).
    /// - Parameter limit: the most bytes such an object can hold (`vault.json`, a tombstone):
    ///   a longer answer is an error, not a memory bomb.
    public func getObject(
        bucket: String, key: String, range: ClosedRange<UInt64>? = nil, limit: Int
    ) async throws -> [UInt8] {
        let headers: HTTPHeaders = range.map { ["Range": "bytes=\($0.lowerBound)-\($0.upperBound)"] } ?? [:]
        return try check(
            try await send(.get, bucket: bucket, key: key, headers: headers, limit: limit), "GetObject \(bucket)/\(key)"
        ).body
    }

    // MARK: Multipart uploads

    public func createMultipartUpload(
        bucket: String, key: String, contentType: String,
        metadata: [String: String] = [:]
    ) async throws -> String {
        var headers: HTTPHeaders = ["Content-Type": contentType]
        headers.add(contentsOf: Self.metadataHeaders(metadata))
        let r = try check(
            try await send(.post, bucket: bucket, key: key, query: [("uploads", "")], headers: headers),
            "CreateMultipartUpload \(bucket)/\(key)")
        guard let id = S3XML.values("UploadId", in: r.body).first,
              !id.isEmpty else {
            throw VaultError(.storeRejected, "CreateMultipartUpload \(bucket)/\(key): no UploadId in the answer")
        }
        return id
    }

    /// Uploads part `number` with `Content-MD5`; returns its ETag after checking it is the MD5.
    public func uploadPart(
        bucket: String, key: String, uploadID: String, number: Int, body: [UInt8]
    ) async throws -> String {
        try await uploadPart(
            bucket: bucket, key: key, uploadID: uploadID, number: number, body: ByteBuffer(bytes: body))
    }

    public func uploadPart(
        bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer
    ) async throws -> String {
        let md5 = Self.md5(body)
        let r = try check(
            try await send(
                .put, bucket: bucket, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                headers: ["Content-MD5": md5.base64], body: body, unsignedBody: true),
            "UploadPart \(number) of \(bucket)/\(key)")
        return try Self.etag(of: r, matching: md5.hex, "UploadPart \(number) of \(bucket)/\(key)", body: "part")
    }

    /// Completes with the parts in ascending order; an error inside a 200 is an error.
    @discardableResult
    public func completeMultipartUpload(
        bucket: String, key: String, uploadID: String,
        parts: [UploadedPart]
    ) async throws -> String {
        var xml = "<CompleteMultipartUpload>"
        for p in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(p.number)</PartNumber><ETag>\"\(p.etag)\"</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let r = try check(
            try await send(
                .post, bucket: bucket, key: key, query: [("uploadId", uploadID)],
                headers: ["Content-Type": "application/xml"], body: Array(xml.utf8)),
            "CompleteMultipartUpload \(bucket)/\(key)")
        // A 200 whose body cannot be read, or names no ETag, did not say the object was made
        // (found by a review: a 200 with an unreadable error in it read as a completed push).
        guard S3XML.root(r.body) == "CompleteMultipartUploadResult",
              let etag = S3XML.values("ETag", in: r.body).first.map(Self.unquote), !etag.isEmpty else {
            throw VaultError(
                .storeUnavailable,
                "CompleteMultipartUpload \(bucket)/\(key): the store answered \(r.status) without a readable result")
        }
        return etag
    }

    public func abortMultipartUpload(bucket: String, key: String, uploadID: String) async throws {
        try check(
            try await send(.delete, bucket: bucket, key: key, query: [("uploadId", uploadID)]),
            "AbortMultipartUpload \(bucket)/\(key)")
    }

    /// Every part the store holds (all pages), one per part number (the last listed wins: a
    /// store may list a re-uploaded part twice).
    public func listParts(bucket: String, key: String, uploadID: String) async throws -> [UploadedPart] {
        var list = S3XML.PartListing(what: "ListParts \(bucket)/\(key)")
        repeat {
            let r = try check(
                try await send(
                    .get, bucket: bucket, key: key,
                    query: [("uploadId", uploadID), ("part-number-marker", String(list.marker))]),
                list.what)
            try list.read(r.body)
        } while !list.done
        return list.parts
    }

    /// S3 user metadata as `x-amz-meta-` headers, in the order of their names.
    static func metadataHeaders(_ metadata: [String: String]) -> [(String, String)] {
        metadata.sorted { $0.key < $1.key }.map { ("x-amz-meta-\($0.key)", $0.value) }
    }

    /// An ETag without its quotes.
    public static func unquote(_ s: String) -> String { s.trimming("\"") }

    /// A number in an answer: ASCII digits only, at most 19 of them (Swift's `UInt64(_:)` also
    /// takes a sign, so a store's `+460` read as 460). Nil for anything else, or none.
    static func decimal(_ s: String?) -> UInt64? {
        guard let s, !s.isEmpty, s.utf8.count <= 19, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return UInt64(s)
    }
}

/// The few XML reads S3 answers need, with ``S3XMLReader``.
package enum S3XML {
    /// The text of every element named `name`.
    package static func values(_ name: String, in body: [UInt8]) -> [String] {
        let c = Collector(names: [name])
        c.parse(body)
        return c.found.compactMap { $0[name] }
    }

    /// For every element named `container`, its children's texts by name.
    package static func elements(_ container: String, in body: [UInt8]) -> [[String: String]] {
        let c = Collector(names: [], container: container)
        c.parse(body)
        return c.found
    }

    /// The pages of a ListObjectsV2 listing, read one after another: each page's objects under
    /// the prefix asked for (a key outside it is not part of the answer), and the token of the
    /// next page. A token given before, or more than ``S3Client/maxPages`` pages, would page
    /// forever: an error. So is a page of more keys than were asked for, or a key not after the
    /// one before it (ListObjectsV2 lists each key once, in order): the same page again and again
    /// under new tokens would otherwise grow the listing by 4 MiB a page (found by a review).
    package struct ObjectListing {
        package let prefix: String
        package let what: String
        /// The most keys a page may hold (the `max-keys` asked for).
        package let pageSize: Int
        private var lastKey: String?
        /// The continuation token of the next page (nil for the first).
        package private(set) var token: String?
        /// True once a page said it was the last.
        package private(set) var done = false
        private var seen: Set<String> = []
        private var pages = 0

        package init(prefix: String, what: String, pageSize: Int = 1000) {
            self.prefix = prefix
            self.what = what
            self.pageSize = pageSize
        }

        /// The objects of the next page.
        /// - Throws: ``VaultError/Code/vaultDamaged`` for a listing that would never end, or a
        ///   page that is not a ListObjectsV2 answer (read as empty, it would hide every object).
        package mutating func read(_ body: [UInt8]) throws -> [S3Client.ListedObject] {
            precondition(!done, "the listing has ended")
            guard S3XML.root(body) == "ListBucketResult" else {
                throw VaultError(.vaultDamaged, "\(what): the store's answer is not a listing that can be read")
            }
            pages += 1
            guard pages <= S3Client.maxPages else {
                throw VaultError(.vaultDamaged, "\(what): the store's listing goes on past \(S3Client.maxPages) pages")
            }
            let contents = elements("Contents", in: body)
            guard contents.count <= pageSize else {
                throw VaultError(
                    .vaultDamaged, "\(what): the store listed \(contents.count) keys in a page of at most \(pageSize)")
            }
            let truncated = values("IsTruncated", in: body).first == "true"
            let given = truncated ? values("NextContinuationToken", in: body).first : nil
            let next = given?.isEmpty == false ? given : nil
            if let next, !seen.insert(next).inserted {
                throw VaultError(
                    .vaultDamaged,
                    "\(what): the store gave a continuation token it gave before: its listing would never end")
            }
            for key in contents.compactMap({ $0["Key"] }) {
                if let lastKey, !lastKey.utf8.lexicographicallyPrecedes(key.utf8) {
                    throw VaultError(
                        .vaultDamaged,
                        "\(what): the store listed '\(key.prefix(80))' after '\(lastKey.prefix(80))', out of order")
                }
                lastKey = key
            }
            token = next
            done = next == nil
            return try contents.compactMap { o -> S3Client.ListedObject? in
                guard let key = o["Key"],
                      key.hasPrefix(prefix) else { return nil }
                guard let size = S3Client.decimal(o["Size"]) else {
                    throw VaultError(
                        .vaultDamaged,
                        "\(what): the store listed '\(key.prefix(80))' with a size that is not a number: "
                            + "'\((o["Size"] ?? "").prefix(24))'")
                }
                return S3Client.ListedObject(
                    key: key, size: size, etag: S3Client.unquote(o["ETag"] ?? ""),
                    lastModified: o["LastModified"] ?? "")
            }
        }
    }

    /// The pages of a ListParts answer: one entry per part number (the last listed wins: a
    /// store may list a re-uploaded part twice). Part numbers only go up, so a next marker that
    /// does not would page forever: an error.
    package struct PartListing {
        package let what: String
        /// The part-number marker of the next page (0 for the first).
        package private(set) var marker = 0
        package private(set) var done = false
        private var byNumber: [Int: (String, UInt64)] = [:]
        private var pages = 0

        package init(what: String) { self.what = what }

        /// The parts read so far, by part number.
        package var parts: [UploadedPart] {
            byNumber.keys.sorted().map { UploadedPart(number: $0, etag: byNumber[$0]!.0, size: byNumber[$0]!.1) }
        }

        /// Reads the next page.
        /// - Throws: ``VaultError/Code/vaultDamaged`` for a list that would never end, or a page
        ///   that is not a ListParts answer.
        package mutating func read(_ body: [UInt8]) throws {
            precondition(!done, "the part list has ended")
            guard S3XML.root(body) == "ListPartsResult" else {
                throw VaultError(.vaultDamaged, "\(what): the store's answer is not a part list that can be read")
            }
            pages += 1
            guard pages <= S3Client.maxPages else {
                throw VaultError(
                    .vaultDamaged, "\(what): the store's part list goes on past \(S3Client.maxPages) pages")
            }
            for p in elements("Part", in: body) {
                guard let n = S3Client.decimal(p["PartNumber"]).flatMap({ Int(exactly: $0) }),
                      let size = S3Client.decimal(p["Size"]) else {
                    throw VaultError(
                        .vaultDamaged,
                        "\(what): the store listed a part whose number or size is not a number: "
                            + "'\((p["PartNumber"] ?? "").prefix(24))', '\((p["Size"] ?? "").prefix(24))'")
                }
                byNumber[n] = (S3Client.unquote(p["ETag"] ?? ""), size)
            }
            guard values("IsTruncated", in: body).first == "true",
                  let next = values("NextPartNumberMarker", in: body).first else {
                done = true
                return
            }
            guard let n = S3Client.decimal(next).flatMap({ Int(exactly: $0) }),
                  n > marker else {
                throw VaultError(
                    .vaultDamaged,
                    "\(what): the store's next part marker '\(next.prefix(20))' does not follow '\(marker)'")
            }
            marker = n
        }
    }

    /// True for a body ``S3XMLReader`` is given: what every S3 answer is — UTF-8
    /// elements, attributes and text, after an optional XML declaration. No NUL, no `<!`
    /// (document type, entities, comments, CDATA) and no `<?` after the declaration, whose
    /// encoding, if it names one, is UTF-8. Anything else reads as empty (its callers report
    /// the fields missing).
    ///
    /// A whitelist, first written for swift-corelibs-foundation's XMLParser, which vault used
    /// before ``S3XMLReader`` and which is not safe on hostile bytes (found by `make fuzz`, now
    /// seeds of the reader's fuzzing): it force-unwraps the UTF-8 decoding of names, comments
    /// and declarations that libxml2 in recovery mode hands on undecoded, reads a processing
    /// instruction's missing data as a C string (a NULL `strlen`), and substitutes entities, so
    /// a DTD could grow an answer far past its bytes. The reader refuses all of these itself;
    /// the whitelist keeps what S3 answers vault accepts exactly as it was.
    package static func isPlainUTF8XML(_ body: [UInt8]) -> Bool {
        guard !body.isEmpty,
              !body.contains(0),
              let whole = String(validating: body, as: UTF8.self) else {
            return false
        }
        var text = whole[...]
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        if text.hasPrefix("<?") {
            guard let end = text.firstRange(of: "?>") else { return false }
            let declaration = text[..<end.lowerBound].lowercased()
            // Its own characters only (pseudo-attributes): a "?>" found further on, past a `<`,
            // would make the whole head a "declaration" that libxml2 reads otherwise.
            guard declaration.hasPrefix("<?xml"),
                let after = declaration.dropFirst(5).first,
                after.isWhitespace,
                declaration.contains("version"),
                declaration.dropFirst(5).allSatisfy({
                    $0.isASCII && ($0.isLetter || $0.isNumber || $0.isWhitespace || "=\"'.-_".contains($0))
                })
            else { return false }
            if let e = declaration.firstRange(of: "encoding") {
                let value = declaration[e.upperBound...].drop { " =\t\r\n\"'".contains($0) }.prefix {
                    !" \t\r\n\"'".contains($0)
                }
                guard value == "utf-8" || value == "utf8" else { return false }
            }
            text = text[end.upperBound...]
        }
        return !text.contains("<!") && !text.contains("<?")
    }

    /// The name of the root element of a readable answer (one ``isPlainUTF8XML(_:)`` lets
    /// through and ``S3XMLReader`` reads); nil for anything else.
    package static func root(_ body: [UInt8]) -> String? {
        guard isPlainUTF8XML(body), case .start(let name)? = S3XMLReader.events(body)?.first else { return nil }
        return name
    }

    /// An `<Error><Code>…</Code><Message>…</Message></Error>` body, if it is one.
    package static func error(_ body: [UInt8]) -> (code: String, message: String)? {
        guard let e = elements("Error", in: body).first,
              let code = e["Code"] else { return nil }
        return (code, e["Message"] ?? "")
    }

    /// Collects the texts its callers ask for from ``S3XMLReader``'s events.
    private final class Collector {
        let names: Set<String>
        let container: String?
        var found: [[String: String]] = []
        private var current: [String: String]?
        private var text = ""

        init(names: Set<String>, container: String? = nil) {
            self.names = names
            self.container = container
        }

        /// A malformed answer reads as empty: its callers report the fields they need missing.
        func parse(_ body: [UInt8]) {
            guard S3XML.isPlainUTF8XML(body), let events = S3XMLReader.events(body) else { return }
            for event in events {
                switch event {
                case .start(let name):
                    if name == container { current = [:] }
                    text = ""
                case .text(let t): text += t
                case .end(let name):
                    if name == container, let c = current {
                        found.append(c)
                        current = nil
                    } else if current != nil {
                        current![name] = text
                    } else if names.contains(name) {
                        found.append([name: text])
                    }
                    text = ""
                }
            }
        }
    }
}
