/// An HTTP request method, as vault's clients send them (S3 requests, upload requests).
public enum RequestMethod: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `GET`.
    case get = "GET"
    /// `HEAD`.
    case head = "HEAD"
    /// `PUT`.
    case put = "PUT"
    /// `POST`.
    case post = "POST"
    /// `PATCH` (tus).
    case patch = "PATCH"
    /// `DELETE`.
    case delete = "DELETE"
    /// `OPTIONS` (tus: what the server supports).
    case options = "OPTIONS"

    /// The method as it goes on the wire (`POST`).
    public var description: String { rawValue }

    /// The method named `name`, in any case (`post`, `POST`).
    public init?(name: String) { self.init(rawValue: name.uppercased()) }
}

/// What a `HEAD` of an object tells: its size and ETag.
public struct ObjectHead: Sendable, Equatable {
    /// The object's size in bytes.
    public var size: UInt64
    /// Its ETag, without quotes (a single PUT's is the MD5 of its bytes).
    public var etag: String

    /// A head of `size` bytes with `etag`.
    public init(size: UInt64, etag: String) {
        self.size = size
        self.etag = etag
    }
}

/// A part of a multipart upload the store holds: its number (from 1), its ETag (without
/// quotes) and its size (0 where the caller does not know it, as when completing).
public struct UploadedPart: Sendable, Equatable {
    /// The part number, from 1.
    public var number: Int
    /// The part's ETag, without quotes.
    public var etag: String
    /// The part's size in bytes, as the store listed it.
    public var size: UInt64

    /// A part `number` with `etag` and `size`.
    public init(number: Int, etag: String, size: UInt64 = 0) {
        self.number = number
        self.etag = etag
        self.size = size
    }
}
