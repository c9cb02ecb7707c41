import AsyncHTTPClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import VaultS3

/// Where and how batches are sent.
public struct UploadTarget: Sendable {
    /// The URL every batch is sent to (for S3, `s3://BUCKET/PREFIX`; presigned, the presign
    /// endpoint).
    public var url: URL { URL(string: address)! }
    /// The URL as it was given: what journals, job ids and the delivery ledger name (a URL
    /// that Foundation would write with escapes, such as an S3 prefix with a space, keeps its
    /// spelling).
    package let address: String
    /// `POST` or `PUT`.
    public var method: RequestMethod
    /// Extra headers, sent with every request.
    public var headers: HTTPHeaders
    /// The `Authorization` header value (from the environment), if any.
    public var authorization: String?
    /// Seconds without progress (connecting, writing or reading) before an attempt fails.
    public var idleTimeout: Double
    /// A PEM file of certificate authorities to trust for `https://` instead of the system's
    /// (a back office with a private certificate authority).
    public var trustedCertificates: URL?

    /// A target.
    public init(
        url: URL, method: RequestMethod = .post, headers: HTTPHeaders = [:], authorization: String? = nil,
        idleTimeout: Double = 60
    ) {
        self.init(
            checked: url.absoluteString, method: method, headers: headers, authorization: authorization,
            idleTimeout: idleTimeout)
    }

    /// A target at `address` as it was typed; nil when it is not a URL.
    package init?(
        address: String, method: RequestMethod = .post, headers: HTTPHeaders = [:], authorization: String? = nil,
        idleTimeout: Double = 60
    ) {
        guard URL(string: address) != nil else { return nil }
        self.init(
            checked: address, method: method, headers: headers, authorization: authorization, idleTimeout: idleTimeout)
    }

    private init(
        checked address: String, method: RequestMethod, headers: HTTPHeaders, authorization: String?,
        idleTimeout: Double
    ) {
        self.address = address
        self.method = method
        self.headers = headers
        self.authorization = authorization
        self.idleTimeout = idleTimeout
    }

    /// `scheme://host[:port]/path`: no credentials, no query (which may carry a token).
    public var redacted: String {
        guard let c = URLComponents(string: address),
              let scheme = c.scheme,
              let host = c.host else {
            return "(invalid URL)"
        }
        return "\(scheme)://\(host)\(c.port.map { ":\($0)" } ?? "")\(c.path.isEmpty ? "/" : c.path)"
    }
}

extension UploadTarget {
    /// True when `host` (as a URL gives it, IPv6 with or without brackets) is literally a
    /// loopback address: `localhost`, an IPv4 address in 127.0.0.0/8 in dotted-quad form, or
    /// `::1`. Decided by parsing the address, never by a prefix: `127.attacker.example` is a
    /// name that anyone can point anywhere, and is not loopback.
    public static func isLoopback(host: String) -> Bool {
        var h = host.lowercased()
        if h.hasPrefix("[") && h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        if h == "localhost" { return true }
        if let address = InternetAddress.bytes(h) {
            return address.count == 4 ? address[0] == 127 : address == [UInt8](repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// True for `http://` to a host that is not a loopback literal: documents (and any
    /// credentials) would cross a network in the clear.
    public var isCleartextOverNetwork: Bool {
        guard let c = URLComponents(string: address),
              c.scheme?.lowercased() == "http" else { return false }
        return !Self.isLoopback(host: c.host ?? "")
    }
}

/// The server's answer to one request.
public struct UploadResponse: Sendable {
    /// HTTP status.
    public var status: Int
    /// Reason phrase.
    public var reason: String
    /// `Retry-After`, if given.
    public var retryAfter: String?
    /// The body (its first MiB), as text.
    public var body: String
    /// The response headers.
    public var headers: HTTPHeaders = [:]

    package init(status: Int, reason: String, retryAfter: String?, body: String, headers: HTTPHeaders = [:]) {
        (self.status, self.reason, self.retryAfter, self.body, self.headers) = (
            status, reason, retryAfter, body, headers
        )
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers.first(name: name) }

    /// The value of `field` when the body is a JSON object (the receiver's `duplicate`, the
    /// presign endpoint's `error`): answers are read as data, never searched as text.
    func jsonField<T: Decodable>(_ field: String, as type: T.Type) -> T? {
        let decoder = JSONDecoder()
        decoder.userInfo[JSONField<T>.name] = field
        return (try? decoder.decode(JSONField<T>.self, from: Data(body.utf8)))?.value
    }

    /// The code of a refusal as vault's receiver answers one (`{"error":{"code":…}}`), when the
    /// body is one and the code a short string.
    var refusalCode: String? {
        struct Answer: Decodable {
            struct Refusal: Decodable { var code: String }
            var error: Refusal
        }
        guard let code = (try? JSONDecoder().decode(Answer.self, from: Data(body.utf8)))?.error.code,
            code.utf8.count <= 64
        else { return nil }
        return code
    }

    /// The document (from 1) a refusal names, as vault's receiver answers one:
    /// `{"error":{"code":…,"document":N,"message":…}}`, and what the server says of it
    /// (`: message (code)`, cut, or nothing); nil when it names no document.
    var refusedDocument: (place: Int, says: String, code: String?)? {
        struct Answer: Decodable {
            struct Refusal: Decodable {
                var document: Int
                var code: String?
                var message: String?

                enum Key: String, CodingKey { case document, code, message }

                // The place must be a number; words of another type are left out, not a reason
                // to read the refusal as one of the whole batch.
                init(from decoder: any Decoder) throws {
                    let c = try decoder.container(keyedBy: Key.self)
                    document = try c.decode(Int.self, forKey: .document)
                    code = try? c.decode(String.self, forKey: .code)
                    message = try? c.decode(String.self, forKey: .message)
                }
            }
            var error: Refusal?
        }
        guard let error = (try? JSONDecoder().decode(Answer.self, from: Data(body.utf8)))?.error else { return nil }
        let words = [error.message, error.code.map { "(\($0))" }].compactMap { $0 }.joined(separator: " ")
        return (error.document, words.isEmpty ? "" : ": " + Self.cut(words), error.code)
    }

    /// `text` cut to 300 Unicode scalars: a server's words in a message are bounded by what is
    /// printed, not by characters (one character can carry any number of combining marks).
    static func cut(_ text: String) -> String {
        let scalars = text.unicodeScalars
        return scalars.count <= 300 ? text : String(String.UnicodeScalarView(scalars.prefix(300))) + "…"
    }
}

/// One field of a JSON object, named in the decoder's user info: nil when the body is an object
/// without it, or with a value of another type; decoding fails when the body is not an object.
private struct JSONField<T: Decodable>: Decodable {
    struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
    static var name: CodingUserInfoKey { CodingUserInfoKey(rawValue: "field")! }
    let value: T?
    init(from decoder: any Decoder) throws {
        let object = try decoder.container(keyedBy: Key.self)
        value = try? object.decode(T.self, forKey: Key(stringValue: decoder.userInfo[Self.name] as? String ?? ""))
    }
}

/// A request body: a batch payload produced while it is sent, or a few bytes in memory.
package enum RequestBody {
    case stream(PayloadBody)
    case bytes([UInt8])
}

/// Sends requests and returns the answers; a transport error is thrown.
package protocol UploadTransport: Sendable {
    /// `method` to `url` (nil: the target's URL) with `headers` and `body`.
    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse
    func shutdown() async
}

extension UploadTransport {
    /// One batch payload to the target, with the target's method.
    func send(_ body: PayloadBody, method: RequestMethod, headers: [(String, String)]) async throws -> UploadResponse {
        try await request(method, url: nil, headers: headers, body: .stream(body))
    }
}

/// The payload of one batch as an async sequence of buffers for async-http-client: each
/// block from the ``PayloadProducer`` is copied into a `ByteBuffer` and handed back, so at
/// most the producer's ring plus the client's in-flight buffers are in memory. The client
/// pulls with back-pressure, so the sent count is real progress (within a socket buffer).
package final class PayloadBody: AsyncSequence, @unchecked Sendable {
    // @unchecked: the client pulls the iterator from one task at a time; `failure` and `sent`
    // are read by the uploader only after the request has finished.
    package typealias Element = ByteBuffer
    private let producer: PayloadProducer
    package let length: UInt64
    private let onSent: @Sendable (UInt64) -> Void
    private(set) var failure: DocumentFailure?
    private(set) var sent: UInt64 = 0

    init(producer: PayloadProducer, length: UInt64, onSent: @escaping @Sendable (UInt64) -> Void) {
        self.producer = producer
        self.length = length
        self.onSent = onSent
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        let body: PayloadBody
        /// Checks for cancellation before each chunk group, so a cancelled upload stops within one.
        package mutating func next() async throws -> ByteBuffer? {
            try Task.checkCancellation()
            return try body.nextBuffer()
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }

    private func nextBuffer() throws -> ByteBuffer? {
        do {
            guard let block = try producer.next() else { return nil }
            defer { block.release() }
            let buffer = ByteBuffer(bytes: block.bytes)
            sent += UInt64(block.bytes.count)
            onSent(sent)
            return buffer
        } catch let f as DocumentFailure {
            // Stop the body here: the request is aborted, so the server never receives a
            // complete payload holding the failed document.
            failure = f
            throw f
        }
    }
}

/// ``UploadTransport`` over swift-server/async-http-client.
final class HTTPTransport: UploadTransport {
    private let configuration: HTTPClient.Configuration
    /// Made by the first request: an uploader that is made and never run leaves no client
    /// behind (AsyncHTTPClient traps on a client released without its shutdown).
    private let made = Mutex<HTTPClient?>(nil)
    private let target: UploadTarget

    private var client: HTTPClient {
        made.withLock { client in
            if let client { return client }
            let new = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            client = new
            return new
        }
    }

    init(target: UploadTarget) {
        var config = HTTPClient.Configuration()
        let idle = TimeAmount.milliseconds(Int64(target.idleTimeout * 1000))
        // The same bound for connecting, and no retrying inside the client: a refused
        // connection fails at once and a silent address within the timeout, and the uploader's
        // own policy (backoff, jitter, bounded attempts) decides about trying again.
        config.timeout = .init(connect: idle, read: idle, write: idle)
        config.connectionPool.retryConnectionEstablishment = false
        // A streamed body cannot be sent twice, so redirects are not followed.
        config.redirectConfiguration = .disallow
        if let roots = target.trustedCertificates {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(roots.path)
            config.tlsConfiguration = tls
        }
        configuration = config
        self.target = target
    }

    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse {
        var request = HTTPClientRequest(url: url ?? target.address)
        request.method = HTTPMethod(rawValue: method.rawValue)
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        switch body {
        case .stream(let b): request.body = .stream(b, length: .known(Int64(b.length)))
        case .bytes(let b): request.body = .bytes(b)
        case nil: break
        }
        let response = try await client.execute(request, deadline: .distantFuture)
        var text = ""
        do {
            // An answer is read up to 1 MiB and for at most the timeout and 4 s more: what a
            // server sends past that (an endless body, or one trickled to stay under the idle
            // timeout) is not read, and the connection is dropped. The status is the answer.
            let deadline = NIODeadline.now() + .milliseconds(Int64((target.idleTimeout + 4) * 1000))
            var collected = ByteBuffer()
            for try await var part in response.body {
                collected.writeBuffer(&part)
                if collected.readableBytes >= 1 << 20 || NIODeadline.now() > deadline { break }
            }
            text = collected.getString(at: collected.readerIndex, length: min(1 << 20, collected.readableBytes)) ?? ""
        } catch {
            // The status is what matters; an unreadable error body is not.
        }
        return UploadResponse(
            status: Int(response.status.code), reason: response.status.reasonPhrase,
            retryAfter: response.headers.first(name: "Retry-After"), body: text,
            headers: response.headers)
    }

    func shutdown() async {
        if let client = made.withLock({ $0 }) { try? await client.shutdown() }
    }
}

extension UploadTarget {
    /// Checks that the file at `path` holds at least one PEM certificate, as
    /// ``trustedCertificates`` is read: a file of something else is refused before anything is
    /// sent, in words, rather than at the handshake in the TLS library's.
    /// - Parameter what: how the file was named, for the message.
    package static func checkCertificates(atPEM path: String, named what: String) throws {
        let certificates = (try? NIOSSLCertificate.fromPEMFile(path)) ?? []
        guard !certificates.isEmpty else {
            throw VaultError(
                .usage, "\(what) holds no PEM certificate",
                hint: "give the PEM file of the certificate authority that signed the server's certificate")
        }
    }
}
