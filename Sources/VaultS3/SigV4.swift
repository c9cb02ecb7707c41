import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// AWS credentials: an access key id, its secret, and a session token for temporary ones.
public struct S3Credentials: Sendable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }
}

/// A request to sign: method, URL parts and headers. The signer reads these and adds its own.
package struct S3Request: Sendable, Equatable {
    package var method: String
    /// `http` or `https`.
    package var scheme: String
    /// The host, with `:port` when it is not the scheme's default.
    package var host: String
    /// The decoded path (`/bucket/key with spaces`); the signer encodes it.
    package var path: String
    /// Decoded query items, in any order (a value-less item such as `uploads` has value "").
    package var query: [(String, String)]
    /// Headers, in any case; `host` is added from ``host``.
    package var headers: [(String, String)]

    package init(
        method: String, scheme: String = "https", host: String, path: String, query: [(String, String)] = [],
        headers: [(String, String)] = []
    ) {
        self.method = method
        self.scheme = scheme
        self.host = host
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// The URL, path and query encoded as they are signed.
    package var url: String {
        let q = SigV4.canonicalQuery(query)
        return "\(scheme)://\(host)\(SigV4.encodePath(path))" + (q.isEmpty ? "" : "?" + q)
    }

    package static func == (a: S3Request, b: S3Request) -> Bool {
        a.method == b.method && a.scheme == b.scheme && a.host == b.host && a.path == b.path
            && a.query.elementsEqual(b.query, by: ==) && a.headers.elementsEqual(b.headers, by: ==)
    }
}

/// AWS Signature Version 4 for S3: header signing (`Authorization`) and query presigning, the
/// canonical request, the string to sign and the HMAC-SHA256 key chain.
///
/// Written by hand on swift-crypto's HMAC: no Swift package available here implements SigV4
/// (research/upload.md, "SigV4: present in the mirror?"). Checked byte for byte against AWS's
/// published S3 examples and against botocore's signer (`S3SigV4Auth`, `S3SigV4QueryAuth`).
package struct SigV4: Sendable {
    /// What the payload is signed as: its SHA-256, or `UNSIGNED-PAYLOAD`.
    package enum Payload: Sendable {
        case sha256(hex: String)
        case unsigned

        /// The SHA-256 of `bytes`.
        package static func hashing(_ bytes: [UInt8]) -> Payload { .sha256(hex: SigV4.hex(SHA256.hash(data: bytes))) }
        package static func hashing(_ bytes: UnsafeRawBufferPointer) -> Payload {
            var h = SHA256()
            h.update(bufferPointer: bytes)
            return .sha256(hex: SigV4.hex(h.finalize()))
        }
        /// The SHA-256 of an empty body.
        package static let empty = Payload.hashing([])

        var value: String {
            switch self {
            case .sha256(let h): h
            case .unsigned: "UNSIGNED-PAYLOAD"
            }
        }
    }

    package static let algorithm = "AWS4-HMAC-SHA256"
    /// The longest a presigned URL may live (S3 refuses more): 7 days.
    package static let maxExpiry = 604_800

    package var credentials: S3Credentials
    package var region: String
    package var service: String

    package init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    // MARK: Signing

    /// Signs `request` with headers: adds `x-amz-date`, `x-amz-content-sha256`, the session
    /// token if any, and `Authorization`.
    package func sign(_ request: S3Request, payload: Payload, date: Date) -> S3Request {
        var r = request
        let (stamp, day) = Self.timestamps(date)
        r.headers.removeAll {
            ["authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"].contains($0.0.lowercased())
        }
        r.headers.append(("x-amz-date", stamp))
        r.headers.append(("x-amz-content-sha256", payload.value))
        if let token = credentials.sessionToken { r.headers.append(("x-amz-security-token", token)) }
        let (canonical, signed) = canonicalRequest(r, payload: payload.value)
        let signature = self.signature(canonical, stamp: stamp, day: day)
        // ", " between the parts, as botocore writes it (AWS accepts both).
        r.headers.append(
            (
                "Authorization",
                """
                    \(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(day)), SignedHeaders=\(signed), \
                    Signature=\(signature)
                    """
            ))
        return r
    }

    /// A presigned URL for `request` (query authentication, `UNSIGNED-PAYLOAD`), valid for
    /// `expires` seconds (at most 7 days). Headers in `request` are signed and must then be sent.
    package func presign(_ request: S3Request, expires: Int, date: Date) -> String {
        precondition(expires >= 1 && expires <= Self.maxExpiry, "internal error: presign expiry out of range")
        var r = request
        let (stamp, day) = Self.timestamps(date)
        let signedHeaders = Self.canonicalHeaders(r).names
        r.query += [
            ("X-Amz-Algorithm", Self.algorithm), ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(day))"),
            ("X-Amz-Date", stamp), ("X-Amz-Expires", String(expires)), ("X-Amz-SignedHeaders", signedHeaders)
        ]
        if let token = credentials.sessionToken { r.query.append(("X-Amz-Security-Token", token)) }
        let (canonical, _) = canonicalRequest(r, payload: Payload.unsigned.value)
        r.query.append(("X-Amz-Signature", signature(canonical, stamp: stamp, day: day)))
        // The request's own items first, then the authentication, the signature last (as botocore).
        return "\(r.scheme)://\(r.host)\(Self.encodePath(r.path))?"
            + r.query.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    // MARK: The parts (internal for the tests)

    func scope(_ day: String) -> String { "\(day)/\(region)/\(service)/aws4_request" }

    /// The canonical request and the signed header names.
    func canonicalRequest(_ r: S3Request, payload: String) -> (String, String) {
        let headers = Self.canonicalHeaders(r)
        return (
            [
                r.method.uppercased(), Self.encodePath(r.path), Self.canonicalQuery(r.query), headers.text,
                headers.names, payload
            ]
            .joined(separator: "\n"), headers.names
        )
    }

    func stringToSign(_ canonical: String, stamp: String, day: String) -> String {
        [Self.algorithm, stamp, scope(day), Self.hex(SHA256.hash(data: Array(canonical.utf8)))].joined(separator: "\n")
    }

    func signature(_ canonical: String, stamp: String, day: String) -> String {
        Self.hex(
            HMAC<SHA256>.authenticationCode(
                for: Array(stringToSign(canonical, stamp: stamp, day: day).utf8), using: signingKey(day)))
    }

    /// HMAC chain: "AWS4" + secret → date → region → service → "aws4_request".
    func signingKey(_ day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Array(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        return key
    }

    /// Lower-cased names, trimmed values with inner runs of spaces collapsed, sorted; `host`
    /// included. Repeated headers join their values with commas.
    static func canonicalHeaders(_ r: S3Request) -> (text: String, names: String) {
        var values: [String: [String]] = ["host": [r.host]]
        for (name, value) in r.headers where name.lowercased() != "host" {
            let trimmed = value.trimmingSpaces().split(
                separator: " ", omittingEmptySubsequences: true
            ).joined(separator: " ")
            values[name.lowercased(), default: []].append(trimmed)
        }
        let names = values.keys.sorted()
        return (names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined(), names.joined(separator: ";"))
    }

    /// Query items encoded (RFC 3986 unreserved kept), sorted by name then value.
    static func canonicalQuery(_ items: [(String, String)]) -> String {
        items.map { (encode($0.0), encode($0.1)) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The path encoded once, segment by segment (S3 does not double-encode), `/` kept.
    static func encodePath(_ path: String) -> String {
        let p = path.isEmpty ? "/" : path
        return p.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(
            separator: "/")
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~".utf8)

    /// Percent-encodes every byte but A–Z a–z 0–9 `-` `_` `.` `~` (upper-case hex), as SigV4 wants.
    static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "%" + Hex.digits(b, uppercase: true)
            }
        }
        return out
    }

    static func timestamps(_ date: Date) -> (stamp: String, day: String) {
        let stamp = UTCTime(date).compact
        return (stamp, String(stamp.prefix(8)))
    }

    static func hex<D: Sequence>(_ d: D) -> String where D.Element == UInt8 {
        Hex.encode(Array(d))
    }
}

/// Where a bucket's objects are addressed.
public enum S3Addressing: Sendable {
    /// `endpoint/bucket/key` (SeaweedFS, MinIO, most S3-compatible stores).
    case path
    /// `bucket.endpoint/key` (AWS's default).
    case virtualHost

    /// The request for `key` in `bucket` at `endpoint` (`scheme://host[:port]`).
    package func request(
        method: String, endpoint: URL, bucket: String, key: String, query: [(String, String)] = [],
        headers: [(String, String)] = []
    ) -> S3Request {
        let scheme = endpoint.scheme ?? "https"
        let port = endpoint.port.map { ":\($0)" } ?? ""
        let host = endpoint.host ?? ""
        switch self {
        case .path:
            return S3Request(
                method: method, scheme: scheme, host: host + port, path: "/\(bucket)" + (key.isEmpty ? "" : "/\(key)"),
                query: query, headers: headers)
        case .virtualHost:
            return S3Request(
                method: method, scheme: scheme, host: "\(bucket).\(host)\(port)", path: "/\(key)", query: query,
                headers: headers)
        }
    }
}
