import Foundation
import NIOCore
import NIOPosix
import VaultCore
import VaultS3

/// An S3-compatible store in memory that keeps ``ObjectStore``'s contract as ``S3Client``
/// keeps it against a real store: keys in binary order, `If-None-Match: *`, multipart uploads
/// whose parts become an object only when completed, ranged reads clamped to the object, more
/// bytes than a listing or a limit said an error. It logs every request, and can plant
/// failures (a 5xx, a refusal) and a listing that lies about sizes, as a hostile or failing
/// store would.
final class MemoryObjectStore: ObjectStore, @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`.

    /// The kinds of request, as the log names them.
    enum Request: String, Sendable {
        case bucketExists, list, head, get, getRange, put, putIfAbsent, delete, createMultipart, uploadPart, complete,
            abort
    }

    let endpoint = URL(string: "http://127.0.0.1:9/")!
    private let lock = NSLock()
    private var buckets: [String: [String: [UInt8]]] = [:]
    private var uploads: [String: (bucket: String, key: String, parts: [Int: [UInt8]])] = [:]
    private var nextUpload = 0
    private var requests: [(Request, String)] = []
    private var planted: [(request: Request, key: String?, error: VaultError, remaining: Int)] = []
    private var listedSizes: [String: UInt64] = [:]
    private var servedRangeBytes: UInt64 = 0
    private let loop = MultiThreadedEventLoopGroup.singleton.any()

    init(buckets names: [String] = ["vaults"]) {
        for name in names { buckets[name] = [:] }
    }

    // MARK: What tests look at and plant

    /// The requests made so far, in order, with their keys.
    var log: [(Request, String)] { lock.withLock { requests } }

    /// How many requests of `kind` were made (on keys starting with `prefix`).
    func count(_ kind: Request, prefix: String = "") -> Int {
        lock.withLock { requests.filter { $0.0 == kind && $0.1.hasPrefix(prefix) }.count }
    }

    /// Bytes served by ranged reads.
    var rangeBytes: UInt64 { lock.withLock { servedRangeBytes } }

    /// Forgets the log.
    func clearLog() {
        lock.withLock {
            requests.removeAll(); servedRangeBytes = 0
        }
    }

    /// The next `times` requests of `kind` (on `key`, when given) fail with `error`.
    func fail(_ kind: Request, key: String? = nil, times: Int = 1, with error: VaultError) {
        lock.withLock { planted.append((kind, key, error, times)) }
    }

    /// Listings give `size` for `key` whatever the object holds.
    func listSize(of key: String, as size: UInt64) { lock.withLock { listedSizes[key] = size } }

    func object(_ bucket: String, _ key: String) -> [UInt8]? { lock.withLock { buckets[bucket]?[key] } }

    func keys(_ bucket: String, prefix: String = "") -> [String] {
        lock.withLock { (buckets[bucket] ?? [:]).keys.filter { $0.hasPrefix(prefix) }.sorted() }
    }

    func set(_ bucket: String, _ key: String, _ bytes: [UInt8]?) { lock.withLock { buckets[bucket]?[key] = bytes } }

    /// Multipart uploads started and neither completed nor aborted.
    var openUploads: Int { lock.withLock { uploads.count } }

    // MARK: Requests

    /// Logs a request and throws the failure planted for it, if any (lock held by the caller).
    private func enter(_ kind: Request, _ key: String) throws {
        requests.append((kind, key))
        if let i = planted.firstIndex(where: {
            $0.request == kind && ($0.key == nil || $0.key == key) && $0.remaining > 0
        }) {
            planted[i].remaining -= 1
            throw planted[i].error
        }
    }

    private func bucket(_ name: String) throws -> [String: [UInt8]] {
        guard let b = buckets[name] else { throw VaultError(.notFound, "NoSuchBucket: \(name)") }
        return b
    }

    private func stored(_ bucket: String, _ key: String) throws -> [UInt8] {
        guard let bytes = try self.bucket(bucket)[key] else {
            throw VaultError(.notFound, "NoSuchKey: \(bucket)/\(key)")
        }
        return bytes
    }

    private static func slice(_ bytes: [UInt8], _ range: ClosedRange<UInt64>?) -> ArraySlice<UInt8> {
        guard let range else { return bytes[...] }
        let start = Int(min(range.lowerBound, UInt64(bytes.count)))
        let end = Int(min(range.upperBound + 1, UInt64(bytes.count)))
        return bytes[start..<end]
    }

    func bucketExists(_ bucket: String) async throws -> Bool {
        try lock.withLock {
            try enter(.bucketExists, "")
            return buckets[bucket] != nil
        }
    }

    func listObjects(bucket: String, prefix: String, pageSize: Int) async throws -> [S3Client.ListedObject] {
        try lock.withLock {
            try enter(.list, prefix)
            return try self.bucket(bucket).filter { $0.key.hasPrefix(prefix) }.sorted {
                Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8))
            }
            .map {
                S3Client.ListedObject(
                    key: $0.key, size: listedSizes[$0.key] ?? UInt64($0.value.count), etag: "", lastModified: "")
            }
        }
    }

    func headObject(bucket: String, key: String) async throws -> ObjectHead? {
        try lock.withLock {
            try enter(.head, key)
            return try self.bucket(bucket)[key].map { ObjectHead(size: UInt64($0.count), etag: "") }
        }
    }

    func getObject(bucket: String, key: String, range: ClosedRange<UInt64>?, limit: Int) async throws -> [UInt8] {
        try lock.withLock {
            try enter(.get, key)
            let bytes = Self.slice(try stored(bucket, key), range)
            guard bytes.count <= limit else {
                throw VaultError(.vaultDamaged, "GetObject \(key): the answer is longer than \(limit) bytes")
            }
            return Array(bytes)
        }
    }

    func getObject(
        bucket: String, key: String, range: ClosedRange<UInt64>?, expected: UInt64,
        receive: @escaping (ByteBuffer) throws -> Void
    ) async throws -> UInt64 {
        let bytes = try lock.withLock {
            try enter(.get, key)
            return Self.slice(try stored(bucket, key), range)
        }
        // In pieces, as a body arrives; past `expected` the answer is cut off with an error.
        var received: UInt64 = 0
        for start in stride(from: bytes.startIndex, to: bytes.endIndex, by: 64 << 10) {
            let piece = bytes[start..<min(start + (64 << 10), bytes.endIndex)]
            received += UInt64(piece.count)
            if received > expected {
                throw VaultError(.trailingData, "GetObject \(key): more than the \(expected) bytes listed")
            }
            try receive(ByteBuffer(bytes: piece))
        }
        return received
    }

    func getRange(
        bucket: String, key: String, range: ClosedRange<UInt64>, into target: UnsafeMutableRawBufferPointer
    ) -> EventLoopFuture<Int> {
        // Answered on an event loop, as the HTTP client answers. The caller keeps `target` valid
        // and untouched until the future completes (the contract), as S3Client's delegate relies on.
        nonisolated(unsafe) let target = target
        return loop.submit { [self] in
            let bytes = try lock.withLock {
                try enter(.getRange, key)
                return Self.slice(try stored(bucket, key), range)
            }
            guard bytes.count <= target.count else {
                throw VaultError(.trailingData, "GetObject \(key): more bytes than the range asked for")
            }
            bytes.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: target[0..<bytes.count]).copyMemory(from: $0)
            }
            lock.withLock { servedRangeBytes += UInt64(bytes.count) }
            return bytes.count
        }
    }

    func putObject(
        bucket: String, key: String, body: ByteBuffer, contentType: String, metadata: [String: String]
    ) async throws -> String {
        try lock.withLock {
            try enter(.put, key)
            _ = try self.bucket(bucket)
            buckets[bucket]![key] = Array(body.readableBytesView)
            return ""
        }
    }

    func putObjectIfAbsent(bucket: String, key: String, body: ByteBuffer, contentType: String) async throws -> Bool {
        try lock.withLock {
            try enter(.putIfAbsent, key)
            guard try self.bucket(bucket)[key] == nil else { return false }
            buckets[bucket]![key] = Array(body.readableBytesView)
            return true
        }
    }

    func deleteObject(bucket: String, key: String) async throws {
        try lock.withLock {
            try enter(.delete, key)
            _ = try self.bucket(bucket)
            buckets[bucket]![key] = nil
        }
    }

    func createMultipartUpload(
        bucket: String, key: String, contentType: String, metadata: [String: String]
    ) async throws -> String {
        try lock.withLock {
            try enter(.createMultipart, key)
            _ = try self.bucket(bucket)
            nextUpload += 1
            uploads["upload-\(nextUpload)"] = (bucket, key, [:])
            return "upload-\(nextUpload)"
        }
    }

    func uploadPart(bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer) async throws -> String
    {
        try lock.withLock {
            try enter(.uploadPart, key)
            guard uploads[uploadID] != nil else { throw VaultError(.notFound, "NoSuchUpload: \(uploadID)") }
            uploads[uploadID]!.parts[number] = Array(body.readableBytesView)
            return "etag-\(number)"
        }
    }

    func completeMultipartUpload(
        bucket: String, key: String, uploadID: String, parts: [UploadedPart]
    ) async throws -> String {
        try lock.withLock {
            try enter(.complete, key)
            guard let upload = uploads.removeValue(forKey: uploadID) else {
                throw VaultError(.notFound, "NoSuchUpload: \(uploadID)")
            }
            var bytes: [UInt8] = []
            for part in parts {
                guard let body = upload.parts[part.number],
                      part.etag == "etag-\(part.number)" else {
                    throw VaultError(.storeRejected, "InvalidPart: \(part.number)")
                }
                bytes += body
            }
            buckets[upload.bucket]![upload.key] = bytes
            return ""
        }
    }

    func abortMultipartUpload(bucket: String, key: String, uploadID: String) async throws {
        try lock.withLock {
            try enter(.abort, key)
            uploads[uploadID] = nil
        }
    }
}
