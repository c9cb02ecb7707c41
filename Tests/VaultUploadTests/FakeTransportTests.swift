import Foundation
import Synchronization
import NIOCore
import Testing
import VaultCore
import VaultS3
@testable import VaultUpload

/// The uploader's handling of each attempt's outcome, through a transport that answers from a
/// script: every body is pulled whole (as a server would read it) and kept for the checks.
final class ScriptedTransport: UploadTransport, @unchecked Sendable {
    // @unchecked: the uploader makes one request at a time.
    enum Answer { case status(Int, retryAfter: String? = nil), drop }
    private var script: [Answer]
    private(set) var bodies: [[UInt8]] = []
    private(set) var headers: [[(String, String)]] = []

    init(_ script: [Answer]) { self.script = script }

    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse {
        var bytes: [UInt8] = []
        if case .stream(let b) = body {
            for try await var buffer in b { bytes += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        }
        bodies.append(bytes)
        self.headers.append(headers)
        let answer = script.isEmpty ? .status(200) : script.removeFirst()
        switch answer {
        case .drop: throw ScriptedDrop()
        case .status(let code, let retryAfter):
            return UploadResponse(
                status: code, reason: "scripted", retryAfter: retryAfter, body: code == 413 ? "{\"limit\": 1}" : "")
        }
    }

    func shutdown() async {}
}

/// A transport that reads the first buffer of a body, says so, and reads on only when the test
/// lets it: the test cancels the upload in between.
final class HeldTransport: UploadTransport, @unchecked Sendable {
    // @unchecked: one request at a time; `received` and `complete` are read after the run ended.
    let (firstRead, firstReadSignal) = AsyncStream.makeStream(of: Void.self)
    let (goOn, goOnSignal) = AsyncStream.makeStream(of: Void.self)
    private(set) var received = 0
    private(set) var complete = 0

    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse {
        guard case .stream(let b) = body else {
            return UploadResponse(status: 200, reason: "OK", retryAfter: nil, body: "")
        }
        var bytes = 0
        for try await buffer in b {
            bytes += buffer.readableBytes
            received += buffer.readableBytes
            if bytes == buffer.readableBytes {
                firstReadSignal.yield()
                for await _ in goOn { break }
            }
        }
        if UInt64(bytes) == b.length { complete += 1 }
        return UploadResponse(status: 200, reason: "OK", retryAfter: nil, body: "")
    }

    func shutdown() async {}
}

struct ScriptedDrop: Error, CustomStringConvertible { var description: String { "connection reset by peer" } }

@Suite struct FakeTransportTests {
    /// A vault in a temporary folder with `count` small documents.
    static func vault(_ count: Int) throws -> (Vault, [DocumentRecord], String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vault-fake-\(UUID().uuidString)").path
        let vault = try VaultStore(root: dir).create(password: try SecretBytes(password: "pw"), kdf: .minimum)
        for i in 0..<count {
            let file = dir + "-in-\(i)"
            _ = FileManager.default.createFile(
                atPath: file, contents: Data((0..<(1000 + i)).map { UInt8(truncatingIfNeeded: $0 &* (i + 3)) }))
            _ = try vault.add(from: try OpenFile.openForReading(file), name: "doc \(i)")
            try? FileManager.default.removeItem(atPath: file)
        }
        return (vault, try vault.records().records, dir)
    }

    static func options(retries: Int = 3) -> UploadOptions {
        var o = UploadOptions(target: UploadTarget(address: "http://127.0.0.1:9/in")!)
        o.policy = RetryPolicy(retries: retries, baseDelay: 0, maxDelay: 0)
        return o
    }

    /// The library itself keeps documents off plain http:// to other hosts, and credentials
    /// always (an app calling it gets the rule the command-line tool has). Nothing is sent: the
    /// refusal comes when the uploader is made.
    @Test func plainHTTPOffLoopbackIsRefusedUnlessAllowedAndNeverWithCredentials() throws {
        let (vault, records, dir) = try Self.vault(1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = UploadOptions(target: UploadTarget(address: "http://192.0.2.7/in")!)
        let e = #expect(throws: VaultError.self) { try Uploader(vault: vault, records: records, options: o) }
        #expect(e?.code == .usage && e?.message == "refusing to send documents unencrypted over http:// to 192.0.2.7")
        o.allowsCleartext = true
        _ = try Uploader(vault: vault, records: records, options: o)
        o.target.authorization = "Bearer secret"
        let c = #expect(throws: VaultError.self) { try Uploader(vault: vault, records: records, options: o) }
        #expect(c?.message == "refusing to send credentials unencrypted over http:// to 192.0.2.7")
        #expect(c.map { !$0.description.contains("secret") } == true)
        // Loopback and https are fine as they are.
        for url in ["http://127.0.0.1:9/in", "http://[::1]:9/in", "https://192.0.2.7/in"] {
            var t = UploadTarget(address: url)!
            t.authorization = "Bearer secret"
            _ = try Uploader(vault: vault, records: records, options: UploadOptions(target: t))
        }
    }

    @Test func progressIsAnAsyncSequenceThatEndsWithTheRun() async throws {
        let (vault, records, dir) = try Self.vault(5)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = Self.options()
        o.limits = BatchLimits(documents: 2)
        let uploader = try Uploader(
            vault: vault, records: records, options: o,
            transport: ScriptedTransport([.status(503, retryAfter: "0")]), onEvent: { _ in })
        let watcher = Task {
            var last: UploadProgress?; for await p in uploader.progress { last = p }; return last
        }
        let summary = try await uploader.run()
        let last = try #require(await watcher.value)
        let total: UInt64 = records.reduce(0) { $0 + $1.metadata.size }
        #expect(summary.batches == 3)
        #expect([last.completedBytes, last.totalBytes] == [total, total])
        #expect(last.confirmedBatches == 3 && last.batches == 3 && last.retries == 1)
        #expect(last.fractionCompleted == 1)
    }

    /// Cancelling the task that runs an upload stops the body before its next chunk group: the
    /// server never has a whole payload, the batch stays unconfirmed, and `run()` throws
    /// `CancellationError`. A later run sends the batch again, whole.
    @Test func aCancelledUploadStopsMidBodyAndIsSentWholeLater() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vault-fake-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let vault = try VaultStore(root: dir).create(password: try SecretBytes(password: "pw"), kdf: .minimum)
        let big = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        _ = try vault.add(from: BytesSource(big), name: "scan.tiff")
        let records = try vault.records().records
        let held = HeldTransport()
        let uploader = try Uploader(
            vault: vault, records: records, options: Self.options(), transport: held, onEvent: { _ in })
        let run = Task { try await uploader.run() }
        for await _ in held.firstRead { break }
        run.cancel()
        held.goOnSignal.yield()
        await #expect(throws: CancellationError.self) { try await run.value }
        #expect(held.complete == 0)
        #expect(
            held.received > 0 && held.received <= 2 * ChunkBatching.reading.plaintextBytes * 4 / 3 + 4096,
            "sent \(held.received) bytes after the cancel")
        // The sequence has ended: a loop over it gets at most the value it held, and returns.
        var after = 0
        for await _ in uploader.progress { after += 1 }
        #expect(after <= 1)

        let again = ScriptedTransport([])
        let summary = try await Uploader(
            vault: vault, records: records, options: Self.options(), transport: again, onEvent: { _ in }
        ).run()
        #expect(summary.alreadyConfirmed == 0 && summary.batches == 1)
        #expect(again.bodies.count == 1 && UInt64(again.bodies[0].count) == summary.payloadBytes)
    }

    /// A day of scheduled uploads left its finished journals for good: a finished one now goes
    /// a week after its last update, an unfinished one never by this (the journal's dates are
    /// sealed, so the check is made with a `now` a week on).
    @Test func finishedJournalsGoAfterAWeekAndUnfinishedOnesStay() async throws {
        let (vault, records, dir) = try Self.vault(2)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await Uploader(
            vault: vault, records: [records[0]], options: Self.options(), transport: ScriptedTransport([]),
            onEvent: { _ in }
        ).run()
        let failing = ScriptedTransport([.status(503, retryAfter: "0")])
        await #expect(throws: VaultError.self) {
            try await Uploader(
                vault: vault, records: [records[1]], options: Self.options(retries: 0), transport: failing,
                onEvent: { _ in }
            ).run()
        }
        let states = { try UploadJournals.list(in: vault).map(\.state.rawValue).sorted() }
        #expect(try states() == ["complete", "interrupted"])
        #expect(try UploadJournals.pruneFinished(in: vault).isEmpty, "a journal finished now is kept")
        let inSixDays = Date().addingTimeInterval(6 * 86_400)
        #expect(try UploadJournals.pruneFinished(in: vault, now: inSixDays).isEmpty)
        let inEightDays = Date().addingTimeInterval(8 * 86_400)
        #expect(try UploadJournals.pruneFinished(in: vault, now: inEightDays).map(\.state) == [.complete])
        #expect(try states() == ["interrupted"])
        let inAYear = Date().addingTimeInterval(365 * 86_400)
        #expect(try UploadJournals.pruneFinished(in: vault, now: inAYear).isEmpty, "an unfinished one stays")
    }

    @Test func transientAnswersAreRetriedWithTheSameBodyAndKey() async throws {
        let (vault, records, dir) = try Self.vault(3)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t = ScriptedTransport([.status(503, retryAfter: "0"), .drop, .status(429, retryAfter: "0")])
        let summary = try await Uploader(
            vault: vault, records: records, options: Self.options(), transport: t, onEvent: { _ in }
        ).run()
        #expect(summary.retries == 3)
        #expect(t.bodies.count == 4)
        #expect(Set(t.bodies).count == 1, "every attempt sends the same payload")
        let keys = t.headers.map { h in h.first { $0.0 == "Idempotency-Key" }!.1 }
        #expect(Set(keys).count == 1, "and the same Idempotency-Key")
        let files = try JSONSerialization.jsonObject(with: Data(t.bodies[0])) as! [String: [[String: Any]]]
        #expect(files["Files"]?.map { $0["Id"] as! String } == records.map(\.id.hex))
    }

    @Test func retriesRunOutWithTheLastReason() async throws {
        let (vault, records, dir) = try Self.vault(1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t = ScriptedTransport([.drop, .drop, .drop])
        await #expect {
            try await Uploader(
                vault: vault, records: records, options: Self.options(retries: 2), transport: t, onEvent: { _ in }
            ).run()
        } throws: { e in
            (e as? VaultError)?.code == .uploadFailed
                && (e as? VaultError)?.message == "batch 1/1 failed 3 times, last: connection reset by peer"
        }
        #expect(t.bodies.count == 3)
    }

    @Test func tooLargeSplitsUntilOneDocumentThenStops() async throws {
        let (vault, records, dir) = try Self.vault(4)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 413 for the 4-document batch and for the first 2-document half; then all is accepted.
        let t = ScriptedTransport([.status(413), .status(413)])
        let summary = try await Uploader(
            vault: vault, records: records, options: Self.options(), transport: t, onEvent: { _ in }
        ).run()
        #expect(summary.batches == 3)
        let counts = t.bodies.map {
            ((try? JSONSerialization.jsonObject(with: Data($0))) as? [String: [Any]])?["Files"]?.count ?? -1
        }
        #expect(counts == [4, 2, 1, 1, 2])
        // A single document the server refuses leaves the run, named; the others still go.
        let (v3, r3, d3) = try Self.vault(3)
        defer { try? FileManager.default.removeItem(atPath: d3) }
        let one = ScriptedTransport([.status(200), .status(413)])
        var o = Self.options()
        o.limits = BatchLimits(documents: 1)
        let skipped = Mutex<[String]>([])
        let left = try await Uploader(
            vault: v3, records: r3, options: o, transport: one,
            onEvent: { e in
                if case .skipped(let id, _, let error) = e {
                    skipped.withLock { $0.append("\(id.hex) \(error.code.rawValue)") }
                }
            }
        ).run()
        #expect(one.bodies.count == 3, "batch 3 is still sent after batch 2's refusal")
        #expect(left.tooLarge == [r3[1].id] && left.skipped == 1 && left.batches == 2 && left.sentDocuments == 2)
        #expect(skipped.withLock { $0 } == ["\(r3[1].id.hex) upload-rejected"])
        #expect(
            try v3.delivery(of: r3[1].id, to: "http://127.0.0.1:9/in") == nil
                && v3.delivery(of: r3[0].id, to: "http://127.0.0.1:9/in") != nil,
            "the refused document is not delivered")
    }

    @Test func refusedCredentialsStopAtOnce() async throws {
        let (vault, records, dir) = try Self.vault(2)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for code in [401, 403, 400, 422] {
            let t = ScriptedTransport([.status(code)])
            await #expect {
                try await Uploader(
                    vault: vault, records: records, options: Self.options(), transport: t, onEvent: { _ in }
                ).run()
            } throws: { e in
                (e as? VaultError)?.code == (code < 404 && code != 400 ? .uploadUnauthorized : .uploadRejected)
            }
            #expect(t.bodies.count == 1, "\(code) is not retried")
        }
    }

    @Test func formBodiesCarryRawBytesAndTheirManifest() async throws {
        let (vault, records, dir) = try Self.vault(2)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = Self.options()
        o.wire = .form(FormOptions())
        let t = ScriptedTransport([])
        _ = try await Uploader(vault: vault, records: records, options: o, transport: t, onEvent: { _ in }).run()
        let body = String(decoding: t.bodies[0], as: UTF8.self)
        let type = t.headers[0].first { $0.0 == "Content-Type" }!.1
        #expect(type.hasPrefix("multipart/form-data; boundary=vault-"))
        let boundary = String(type.dropFirst("multipart/form-data; boundary=".count))
        #expect(
            body.hasPrefix(
                """
                    --\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"\r\nContent-Type: \
                    application/json\r\n\r\n{\"batch\":1,\"documents\":[
                    """
            ))
        #expect(body.hasSuffix("\r\n--\(boundary)--\r\n"))
        #expect(
            body.contains(
                """
                    Content-Disposition: form-data; name=\"files[]\"; filename=\"doc 0\"\r\nContent-Type: \
                    application/octet-stream\r\n\r\n
                    """
            ))
        // The exact Content-Length promised is what was sent.
        #expect(
            UInt64(t.bodies[0].count)
                == PayloadFormat.raw(FormBody(boundary: boundary, batch: 1, of: 1)).length(of: records))
    }
}
