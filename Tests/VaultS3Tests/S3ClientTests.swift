import AsyncHTTPClient
import Crypto
import Foundation
import VaultTestSupport
import Testing
import VaultCore
@testable import VaultS3

/// The S3 client against SeaweedFS, which checks SigV4 signatures and Content-MD5 strictly.
@Suite struct S3ClientTests {
    static func client(secret: String = SeaweedFS.secretKey) throws -> S3Client {
        let sw = try SeaweedFS.shared.get()
        return S3Client(
            endpoint: sw.endpoint, region: "us-east-1",
            credentials: S3Credentials(accessKeyID: SeaweedFS.accessKey, secretAccessKey: secret),
            timeout: 300)  // the shared store serves every test at once on two cores
    }

    static func bytes(_ n: Int, seed: UInt8) -> [UInt8] {
        (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    @Test func objectsRoundTripWithTheirMD5AndRanges() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = "objects-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let body = Self.bytes(100_000, seed: 1)
        let etag = try await s3.putObject(
            bucket: bucket, key: "runs/a b/batch-0001.json", body: body, contentType: "application/json",
            metadata: ["batch": "1/2"])
        #expect(etag == S3Client.md5(body).hex)
        let head = try #require(try await s3.headObject(bucket: bucket, key: "runs/a b/batch-0001.json"))
        #expect(head.size == 100_000 && head.etag == etag)
        #expect(try await s3.getObject(bucket: bucket, key: "runs/a b/batch-0001.json", limit: 1 << 30) == body)
        #expect(
            try await s3.getObject(bucket: bucket, key: "runs/a b/batch-0001.json", range: 10...19, limit: 1 << 30)
                == Array(body[10...19]))
        #expect(try await s3.headObject(bucket: bucket, key: "missing") == nil)
    }

    /// ListObjectsV2 over several pages, keys with spaces and non-ASCII letters, a prefix that
    /// excludes neighbours; conditional creation and deletion.
    @Test func listingsFollowEveryPageAndConditionalPutsDoNotOverwrite() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = "listing-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let keys = (0..<23).map { String(format: "vault/objects/%02d é %@.vlt", $0, String($0 * 7919, radix: 36)) }
        for (i, k) in keys.enumerated() {
            _ = try await s3.putObject(
                bucket: bucket, key: k, body: Self.bytes(100 + i, seed: 9), contentType: "application/octet-stream")
        }
        _ = try await s3.putObject(
            bucket: bucket, key: "vault/vault.json", body: [1, 2, 3], contentType: "application/json")
        _ = try await s3.putObject(
            bucket: bucket, key: "vaultother/objects/x.vlt", body: [4], contentType: "application/octet-stream")
        let listed = try await s3.listObjects(bucket: bucket, prefix: "vault/objects/", pageSize: 5)
        #expect(listed.map(\.key) == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(listed.map(\.size) == (0..<23).map { UInt64(100 + $0) })
        #expect(listed.allSatisfy { !$0.lastModified.isEmpty })
        #expect(listed.first?.etag == S3Client.md5(Self.bytes(100, seed: 9)).hex)
        #expect(try await s3.listObjects(bucket: bucket, prefix: "vault/").count == 24)

        #expect(
            try await s3.putObjectIfAbsent(
                bucket: bucket, key: "vault/new", body: [7], contentType: "application/octet-stream"))
        #expect(
            try await s3.putObjectIfAbsent(
                bucket: bucket, key: "vault/new", body: [8], contentType: "application/octet-stream") == false)
        #expect(
            try await s3.getObject(bucket: bucket, key: "vault/new", limit: 1 << 30) == [7], "the first write stays")
        try await s3.deleteObject(bucket: bucket, key: "vault/new")
        #expect(try await s3.headObject(bucket: bucket, key: "vault/new") == nil)
        try await s3.deleteObject(bucket: bucket, key: "vault/new")  // deleting what is gone is not an error
    }

    @Test func multipartUploadsCompleteListAndAbort() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = "multipart-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let parts = [Self.bytes(5 << 20, seed: 2), Self.bytes(5 << 20, seed: 3), Self.bytes(1 << 20, seed: 4)]
        let id = try await s3.createMultipartUpload(bucket: bucket, key: "big.json", contentType: "application/json")
        var etags: [UploadedPart] = []
        for (i, p) in parts.enumerated() {
            etags.append(
                UploadedPart(
                    number: i + 1,
                    etag: try await s3.uploadPart(bucket: bucket, key: "big.json", uploadID: id, number: i + 1, body: p)
                ))
        }
        // A part sent again replaces the earlier one; the listing has one entry per number.
        _ = try await s3.uploadPart(bucket: bucket, key: "big.json", uploadID: id, number: 2, body: parts[1])
        let listed = try await s3.listParts(bucket: bucket, key: "big.json", uploadID: id)
        #expect(listed.map(\.number) == [1, 2, 3])
        #expect(listed.map(\.etag) == parts.map { S3Client.md5($0).hex })
        let final = try await s3.completeMultipartUpload(bucket: bucket, key: "big.json", uploadID: id, parts: etags)
        let md5s = parts.flatMap { Array(Insecure.MD5.hash(data: $0)) }
        #expect(
            final == SigV4.hex(Insecure.MD5.hash(data: md5s)) + "-3",
            "the ETag of a multipart object is the MD5 of the parts' MD5s")
        #expect(try await s3.getObject(bucket: bucket, key: "big.json", limit: 1 << 30) == parts.flatMap { $0 })

        let aborted = try await s3.createMultipartUpload(
            bucket: bucket, key: "gone.json", contentType: "application/json")
        try await s3.abortMultipartUpload(bucket: bucket, key: "gone.json", uploadID: aborted)
        await #expect { try await s3.listParts(bucket: bucket, key: "gone.json", uploadID: aborted) } throws: { e in
            (e as? VaultError)?.code == .notFound && (e as? VaultError)?.message.contains("NoSuchUpload") == true
        }
    }

    @Test func aWrongSecretAndABadDigestAreDistinctErrors() async throws {
        let wrong = try Self.client(secret: "not-the-secret")
        defer { Task { await wrong.shutdown() } }
        // Retried when the store did not answer in time: under the whole suite's load on two
        // cores, one CI run saw this first request pass its deadline.
        await #expect {
            try await RetryPolicy.store.run(isTransient: VaultError.isTransientStoreFailure) {
                try await wrong.createBucket("never-\(UUID().uuidString.prefix(8).lowercased())")
            }
        } throws: { e in
            (e as? VaultError)?.code == .storeUnauthorized && (e as? VaultError)?.s3Code == "SignatureDoesNotMatch"
        }
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = "digest-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let r = try await s3.send(
            .put, bucket: bucket, key: "x", headers: ["Content-MD5": S3Client.md5([1, 2, 3]).base64], body: [1, 2, 4])
        // The code is parsed from the answer and kept as the error's cause: callers decide on it.
        #expect { try s3.check(r, "PutObject") } throws: { e in
            (e as? VaultError)?.code == .storeRejected && (e as? VaultError)?.s3Code == "BadDigest"
                && ((e as? VaultError)?.cause as? S3ServiceError)?.status == 400
        }
        #expect(S3XML.error(r.body)?.code == "BadDigest")
        await #expect {
            try await s3.getObject(
                bucket: "no-such-bucket-\(UUID().uuidString.prefix(6).lowercased())", key: "k", limit: 1024)
        } throws: { e in (e as? VaultError)?.code == .notFound }
    }

    @Test func presignedURLsWorkWithoutCredentialsAndNotWhenTampered() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = "presign-\(UUID().uuidString.prefix(8).lowercased())"
        try await s3.createBucket(bucket)
        let body = Self.bytes(4096, seed: 5)
        let md5 = S3Client.md5(body)
        let request = S3Addressing.path.request(
            method: "PUT", endpoint: s3.endpoint, bucket: bucket, key: "p.json",
            headers: [("Content-MD5", md5.base64)])
        let url = s3.signer.presign(request, expires: 600, date: Date())
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { Task { try? await http.shutdown() } }
        func put(_ url: String) async throws -> Int {
            var r = HTTPClientRequest(url: url)
            r.method = .PUT
            r.headers.add(name: "Content-MD5", value: md5.base64)
            r.body = .bytes(body)
            return Int(try await http.execute(r, timeout: .seconds(30)).status.code)
        }
        #expect(try await put(url) == 200)
        #expect(try await s3.getObject(bucket: bucket, key: "p.json", limit: 1 << 30) == body)
        let tampered = url.replacingOccurrences(of: "p.json", with: "q.json")
        #expect(try await put(tampered) == 403)
    }
}
