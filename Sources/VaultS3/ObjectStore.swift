#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// What replication and reading in place ask of an S3-compatible object store: listing,
/// whole and ranged reads, conditional writes, deletes and multipart uploads. ``S3Client`` is
/// the real one; anything else (an in-memory store in tests) can stand in for it, so the
/// replicator and the range cache are tested without a network.
///
/// Every request is tried once: retrying is the caller's, under its `RetryPolicy`. Failures
/// are `VaultError`s with the store's codes (`store-unavailable` when the store could not be
/// reached or answered 5xx, `store-unauthorized`, `store-rejected`, `not-found`).
public protocol ObjectStore: Sendable {
    /// Where the store is (it names a remote vault's cache folder).
    var endpoint: URL { get }

    /// True when `bucket` exists.
    func bucketExists(_ bucket: String) async throws -> Bool
    /// Every object whose key starts with `prefix`, every page; never a key outside `prefix`.
    func listObjects(bucket: String, prefix: String, pageSize: Int) async throws -> [S3Client.ListedObject]
    /// The object's size and ETag, or nil when there is none.
    func headObject(bucket: String, key: String) async throws -> ObjectHead?
    /// The object's bytes (or `range` of them); an answer longer than `limit` is an error.
    func getObject(bucket: String, key: String, range: ClosedRange<UInt64>?, limit: Int) async throws -> [UInt8]
    /// Streams the object (or `range` of it) to `receive`; more than `expected` bytes is a
    /// `trailing-data` error. Returns the bytes received.
    @discardableResult
    func getObject(
        bucket: String, key: String, range: ClosedRange<UInt64>?, expected: UInt64,
        receive: @escaping (ByteBuffer) throws -> Void
    ) async throws -> UInt64
    /// A ranged read into caller-owned memory, for synchronous readers that wait on the future
    /// from a thread that is not an event loop; more bytes than `target` holds is an error.
    func getRange(
        bucket: String, key: String, range: ClosedRange<UInt64>, into target: UnsafeMutableRawBufferPointer
    ) -> EventLoopFuture<Int>
    /// Writes the object; returns its ETag.
    @discardableResult
    func putObject(
        bucket: String, key: String, body: ByteBuffer, contentType: String, metadata: [String: String]
    ) async throws -> String
    /// Writes the object only when no object has the key; false when one was there.
    func putObjectIfAbsent(bucket: String, key: String, body: ByteBuffer, contentType: String) async throws -> Bool
    /// Deletes the object (none there is not an error).
    func deleteObject(bucket: String, key: String) async throws
    /// Starts a multipart upload; returns its id.
    func createMultipartUpload(
        bucket: String, key: String, contentType: String, metadata: [String: String]
    ) async throws -> String
    /// Sends part `number` (from 1); returns its ETag.
    func uploadPart(bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer) async throws -> String
    /// Joins the parts into the object; returns its ETag.
    @discardableResult
    func completeMultipartUpload(
        bucket: String, key: String, uploadID: String, parts: [UploadedPart]
    ) async throws -> String
    /// Drops an unfinished multipart upload and its parts.
    func abortMultipartUpload(bucket: String, key: String, uploadID: String) async throws
}

extension S3Client: ObjectStore {}
