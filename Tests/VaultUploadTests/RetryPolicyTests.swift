import Foundation
import Testing
import VaultCore
@testable import VaultUpload

@Suite struct RetryPolicyTests {
    @Test func classification() {
        for s in [200, 201, 202, 204, 299] { #expect(RetryPolicy.decide(status: s) == .confirmed) }
        for s in [408, 429, 500, 502, 503, 504] { #expect(RetryPolicy.decide(status: s) == .retry, "\(s)") }
        for s in [401, 403] { #expect(RetryPolicy.decide(status: s) == .authentication) }
        #expect(RetryPolicy.decide(status: 413) == .tooLarge)
        #expect(RetryPolicy.decide(status: 507) == .outOfSpace)
        for s in [300, 307, 400, 404, 409, 411, 422, 501, 505] {
            #expect(RetryPolicy.decide(status: s) == .reject, "\(s)")
        }
    }

    @Test func fullJitterStaysUnderADoublingCappedCeiling() {
        let p = RetryPolicy(retries: 10, baseDelay: 0.5, maxDelay: 30)
        for attempt in 1...10 {
            let ceiling = min(30, 0.5 * pow(2, Double(attempt - 1)))
            #expect(p.delay(afterAttempt: attempt, retryAfter: nil, unit: 0) == 0)
            #expect(abs(p.delay(afterAttempt: attempt, retryAfter: nil, unit: 0.999_999) - ceiling) < 0.001)
            #expect(p.delay(afterAttempt: attempt, retryAfter: nil, unit: 0.5) == ceiling / 2)
        }
        #expect(p.maxAttempts == 11)
    }

    @Test func retryAfterWinsAndIsCapped() {
        let p = RetryPolicy()
        #expect(p.delay(afterAttempt: 1, retryAfter: 7, unit: 0.9) == 7)
        #expect(p.delay(afterAttempt: 1, retryAfter: 10_000, unit: 0.9) == 120)
        #expect(RetryPolicy.parseRetryAfter("3") == 3)
        #expect(RetryPolicy.parseRetryAfter(" 0 ") == 0)
        #expect(RetryPolicy.parseRetryAfter("soon") == nil)
        #expect(RetryPolicy.parseRetryAfter(nil) == nil)
        // Found by `make fuzz` (Fuzz/regressions/upload/): Double's spellings are not seconds.
        for notSeconds in ["inf", "nan", "1e9", "0x10", "+5", "-1", ".5", "5.0"] {
            #expect(RetryPolicy.parseRetryAfter(notSeconds) == nil, "\(notSeconds)")
        }
        #expect(RetryPolicy.parseRetryAfter(String(repeating: "9", count: 400)) == Double(UInt64.max))
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // Thu, 01 Jan 2026 00:00:00 GMT
        #expect(RetryPolicy.parseRetryAfter("Thu, 01 Jan 2026 00:00:42 GMT", now: now) == 42)
        #expect(RetryPolicy.parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now: now) == 0)
    }

    /// A throwaway vault (the smallest Argon2id parameters: this test is about the keyed digest).
    static func vault() throws -> Vault {
        let dir = NSTemporaryDirectory() + "/vault-upload-test-" + UUID().uuidString
        let password = try Array("pw".utf8).withUnsafeBytes { try SecretBytes(copying: $0) }
        return try VaultStore(root: dir).create(password: password, kdf: KDFParameters(opsLimit: 1, memLimitKiB: 8))
    }

    @Test func idempotencyKeysDependOnTheVaultKeyRunIndexAndDocuments() throws {
        let a = DocumentRecord(
            id: DocumentID(bytes: [UInt8](repeating: 1, count: 16)),
            metadata: DocumentMetadata(
                name: "a", contentType: "a/b", size: 1, sha256: [UInt8](repeating: 1, count: 32), addedAtMillis: 0,
                tags: []))
        var b = a
        b.metadata.sha256 = [UInt8](repeating: 2, count: 32)
        let v = try Self.vault(), other = try Self.vault()
        defer {
            try? FileManager.default.removeItem(atPath: v.store.root);
            try? FileManager.default.removeItem(atPath: other.store.root)
        }
        let k = try UploadJournal.idempotencyKey(vault: v, runID: "run", index: 1, records: [a])
        #expect(k.count == 64)
        #expect(k == (try UploadJournal.idempotencyKey(vault: v, runID: "run", index: 1, records: [a])))
        #expect(k != (try UploadJournal.idempotencyKey(vault: v, runID: "run2", index: 1, records: [a])))
        #expect(k != (try UploadJournal.idempotencyKey(vault: v, runID: "run", index: 2, records: [a])))
        #expect(k != (try UploadJournal.idempotencyKey(vault: v, runID: "run", index: 1, records: [b])))
        #expect(
            k != (try UploadJournal.idempotencyKey(vault: other, runID: "run", index: 1, records: [a])),
            "another vault key, another key")
        #expect(
            UploadTarget(address: "https://h.example:8443/in/box?token=abc")!.redacted
                == "https://h.example:8443/in/box")
    }

    @Test func loopbackIsDecidedByParsingTheAddress() {
        for host in [
            "localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "[::1]", "0:0:0:0:0:0:0:1"
        ] {
            #expect(UploadTarget.isLoopback(host: host), "\(host)")
        }
        for host in [
            "127.attacker.example", "127.0.0.1.nip.io", "localhost.example", "128.0.0.1", "10.0.0.1", "::2",
            "[::ffff:127.0.0.1]x",
            "2130706433", "0x7f.1", "127.1", "", "example.com", "::"
        ] {
            #expect(!UploadTarget.isLoopback(host: host), "\(host)")
        }
        #expect(UploadTarget(address: "http://127.attacker.example/x")!.isCleartextOverNetwork)
        #expect(UploadTarget(address: "http://192.168.1.1/x")!.isCleartextOverNetwork)
        #expect(!UploadTarget(address: "https://example.com/x")!.isCleartextOverNetwork)
        #expect(!UploadTarget(address: "http://[::1]:8080/x")!.isCleartextOverNetwork)
        #expect(!UploadTarget(address: "http://127.0.0.1:8080/x")!.isCleartextOverNetwork)
    }

    /// vault's receiver refusing the station for its history: said in words with what to do,
    /// never as the answer's JSON; another 409 is still shown as the server said it.
    @Test func aStationRefusedForItsHistoryIsToldWhatToDo() {
        func outcome(_ code: String) -> VaultError? {
            let body = #"{"error":{"code":"\#(code)","message":"the station's history 9-ab forks from 7-cd"}}"#
            let r = UploadResponse(status: 409, reason: "Conflict", retryAfter: nil, body: body)
            guard case .refused(let e) = AttemptOutcome.of(r, rejected: "the server rejected batch 2/3") else {
                return nil
            }
            return e
        }
        let forked = outcome("station-forked")
        #expect(
            forked?.message == """
                the server rejected batch 2/3: the back office knows another history for this station (409 \
                Conflict): this vault is not the one its token was given to (it was made again, or replaced)
                """)
        #expect(forked?.hint == "ask the office to remove and add this station again, then use the new token")
        let behind = outcome("station-rolled-back")
        #expect(behind?.message.hasSuffix("the vault folder was put back to an older copy") == true)
        #expect(behind?.hint?.hasPrefix("put the vault's newest copy back") == true)
        let slowed = UploadResponse(
            status: 429, reason: "Too Many Requests", retryAfter: "60",
            body: #"{"error":{"code":"too-many-failures","message":"too many failed authentications; wait a minute"}}"#)
        guard case .refused(let e) = AttemptOutcome.of(slowed, rejected: "the server rejected batch 1/1") else {
            Issue.record("a receiver refusing the address is not retried for minutes")
            return
        }
        #expect(e.code == .uploadUnauthorized && e.hint == "check the upload token, then send again in a minute")
        #expect(e.message.hasPrefix("the back office refuses this address for a minute") && !e.message.contains("{"))
        let busy = UploadResponse(status: 429, reason: "Too Many Requests", retryAfter: "1", body: "slow down")
        guard case .retry = AttemptOutcome.of(busy, rejected: "the server rejected batch 1/1") else {
            Issue.record("another 429 is retried")
            return
        }
        let other = outcome("batch-in-progress")
        // Said in words (its message and code), never as the answer's JSON.
        #expect(
            other?.message
                == "the server rejected batch 2/3: 409 Conflict: the station's history 9-ab forks from 7-cd "
                + "(batch-in-progress)", "\(String(describing: other))")
        #expect(other?.hint == nil)
    }
}
