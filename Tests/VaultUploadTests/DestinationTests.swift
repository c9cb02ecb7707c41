import Foundation
import Testing
import VaultCore
import VaultS3
@testable import VaultUpload

/// A transport that records every request and answers OPTIONS as a tus server would, anything
/// else 404: what reached the network, and where.
final class RecordingTransport: UploadTransport, @unchecked Sendable {
    // @unchecked: the uploader makes one request at a time.
    private(set) var requests: [(method: String, url: String?)] = []

    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse {
        let method = method.rawValue
        requests.append((method, url))
        if method == "OPTIONS" {
            return UploadResponse(
                status: 204, reason: "No Content", retryAfter: nil, body: "",
                headers: ["Tus-Resumable": "1.0.0", "Tus-Version": "1.0.0", "Tus-Extension": "creation,termination"])
        }
        return UploadResponse(status: 404, reason: "Not Found", retryAfter: nil, body: "")
    }

    func shutdown() async {}
}

/// Destinations taken from a journal or a server stay within what the command line named,
/// whatever the journal's seal says (issue 21): a journal sealed by a password holder, or a
/// hostile server, cannot redirect data or credentials.
@Suite struct DestinationTests {
    /// A sealed journal for `records` under `options`, its one batch as `batch` makes it.
    static func plant(
        _ vault: Vault, _ records: [DocumentRecord], _ options: UploadOptions,
        runID: String = UUID().uuidString.lowercased(),
        _ batch: (inout UploadJournal.Batch) -> Void
    ) throws {
        let job = try UploadJournal.jobID(
            vault: vault, target: options.target.address, method: options.target.method.rawValue,
            wire: options.wireDescription, limits: options.limits, records: records)
        var b = UploadJournal.Batch(documents: records.map(\.id), bytes: 0, status: .pending, attempts: 1, key: "k")
        batch(&b)
        var journal = UploadJournal(job: job, runId: runID, target: "planted", created: "", updated: "", batches: [b])
        try journal.save(to: vault)
    }

    @Test func aJournaledTusURLOnAnotherOriginIsNeverContacted() async throws {
        let (vault, records, dir) = try FakeTransportTests.vault(1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = FakeTransportTests.options()
        o.wire = .tus(TusOptions())
        o.target.authorization = "Bearer secret-token"
        for other in [
            "http://127.0.0.2:9/files/1", "https://127.0.0.1:9/files/1", "http://127.0.0.1:10/files/1",
            "http://localhost:9/files/1"
        ] {
            try Self.plant(vault, records, o) { $0.wire = .tus(url: other, offset: 0) }
            let t = RecordingTransport()
            await #expect {
                try await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
            } throws: { e in
                (e as? VaultError)?.code == .vaultDamaged
                    && (e as? VaultError)?.message.contains("another origin") == true
            }
            #expect(
                t.requests.allSatisfy { $0.url == nil },
                "\(other): only the --url itself was asked (OPTIONS): \(t.requests)")
        }
        // The same origin, spelled with its default port, is the same origin.
        #expect(Destinations.sameOrigin(URL(string: "http://127.0.0.1:80/files/1")!, as: "http://127.0.0.1/files"))
        #expect(Destinations.sameOrigin(URL(string: "HTTPS://Example.ORG/x")!, as: "https://example.org:443/files"))
    }

    /// A sealed batch is never continued from an earlier attempt (its file keys were new and are
    /// stored nowhere): the journaled tus upload is left alone and a new one is created; a plain
    /// batch continues the journaled one (HEAD first).
    @Test func aSealedBatchStartsANewTusUploadWhereAPlainOneContinues() async throws {
        let (vault, records, dir) = try FakeTransportTests.vault(1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = FakeTransportTests.options()
        o.wire = .tus(TusOptions())
        let journaled = o.target.address + "/journaled-upload"
        for sealed in [false, true] {
            o.recipients = sealed ? [try AgeIdentity.generate(postQuantum: false).recipient] : []
            try Self.plant(vault, records, o) { $0.wire = .tus(url: journaled, offset: 7) }
            let t = RecordingTransport()
            _ = try? await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
            let touched = t.requests.filter { $0.url == journaled }.map(\.method)
            if sealed {
                #expect(touched.isEmpty, "the earlier attempt's upload is not continued: \(t.requests)")
                #expect(t.requests.contains { $0.method == "POST" }, "a new upload is created: \(t.requests)")
            } else {
                #expect(touched.first == "HEAD", "a plain batch continues its upload: \(t.requests)")
            }
        }
    }

    @Test func aJournaledS3KeyOutsideThePrefixIsRefusedBeforeAnyRequest() async throws {
        let (vault, records, dir) = try FakeTransportTests.vault(1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = FakeTransportTests.options()
        o.wire = .s3(
            S3Target(
                endpoint: URL(string: "http://127.0.0.1:9")!, region: "us-east-1",
                credentials: S3Credentials(accessKeyID: "k", secretAccessKey: "s"), addressing: .path, bucket: "b",
                prefix: "office"))
        try Self.plant(vault, records, o) {
            $0.wire = .multipart(.init(key: "public/website/index.html", uploadID: "u", parts: []))
        }
        let t = RecordingTransport()
        await #expect {
            try await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
        } throws: { e in
            (e as? VaultError)?.code == .vaultDamaged
                && (e as? VaultError)?.message.contains("public/website/index.html") == true
        }
        // A run id that is not one vault makes cannot steer the key either.
        try Self.plant(vault, records, o, runID: "../../public") { _ in }
        await #expect {
            try await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
        } throws: { e in (e as? VaultError)?.code == .vaultDamaged }
        #expect(t.requests.isEmpty)
    }

    @Test func presignedKeysAndPartURLsFollowTheDocumentedRules() throws {
        let requested = "0f9e2c1a-1111-2222-3333-444455556666/batch-0001.json"
        try Destinations.checkPresignedKey(requested, requested: requested)
        try Destinations.checkPresignedKey("incoming/station-7/" + requested, requested: requested)
        for bad in [
            "public/website/index.html", "x/../" + requested, "/" + requested, "a//" + requested, requested + "x"
        ] {
            expectError(.uploadRejected) { try Destinations.checkPresignedKey(bad, requested: requested) }
        }
        let key = "incoming/" + requested
        let good = URLComponents(
            string: "https://store.example/bucket/\(key)?partNumber=2&uploadId=U1&X-Amz-Signature=abc")!
        try Destinations.checkPresignedPart(good, number: 2, uploadID: "U1", key: key)
        for bad in [
            "https://store.example/bucket/\(key)?partNumber=3&uploadId=U1",
            "https://store.example/bucket/\(key)?partNumber=2&uploadId=U2",
            "https://store.example/bucket/public/index.html?partNumber=2&uploadId=U1"
        ] {
            expectError(.uploadRejected) {
                try Destinations.checkPresignedPart(URLComponents(string: bad)!, number: 2, uploadID: "U1", key: key)
            }
        }
    }

    @Test func aFormBoundaryIsRandomForEachRequest() async throws {
        let (vault, records, dir) = try FakeTransportTests.vault(2)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = FakeTransportTests.options()
        o.wire = .form(FormOptions())
        let t = ScriptedTransport([.status(503), .status(503)])
        _ = try await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
        let boundaries = t.headers.map { h in
            String(h.first { $0.0 == "Content-Type" }!.1.dropFirst("multipart/form-data; boundary=".count))
        }
        #expect(boundaries.count == 3 && Set(boundaries).count == 3, "\(boundaries)")
        #expect(Set(t.bodies.map(\.count)).count == 1, "the length does not depend on the boundary")
        for (body, boundary) in zip(t.bodies, boundaries) {
            #expect(boundary.count == 46 && boundary.hasPrefix("vault-"))
            #expect(String(decoding: body, as: UTF8.self).hasSuffix("\r\n--\(boundary)--\r\n"))
        }
    }
}
