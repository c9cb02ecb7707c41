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
        for s in [300, 307, 400, 404, 409, 411, 422, 501, 505] { #expect(RetryPolicy.decide(status: s) == .reject, "\(s)") }
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
        let now = Date(timeIntervalSince1970: 1_767_225_600)        // Thu, 01 Jan 2026 00:00:00 GMT
        #expect(RetryPolicy.parseRetryAfter("Thu, 01 Jan 2026 00:00:42 GMT", now: now) == 42)
        #expect(RetryPolicy.parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now: now) == 0)
    }

    @Test func idempotencyKeysDependOnRunIndexAndDocuments() throws {
        let a = DocumentRecord(id: DocumentID(bytes: [UInt8](repeating: 1, count: 16)),
                               metadata: DocumentMetadata(name: "a", contentType: "a/b", size: 1, sha256: [UInt8](repeating: 1, count: 32), addedAtMillis: 0, tags: []))
        var b = a
        b.metadata.sha256 = [UInt8](repeating: 2, count: 32)
        let k = UploadJournal.idempotencyKey(runID: "run", index: 1, records: [a])
        #expect(k.count == 64)
        #expect(k == UploadJournal.idempotencyKey(runID: "run", index: 1, records: [a]))
        #expect(k != UploadJournal.idempotencyKey(runID: "run2", index: 1, records: [a]))
        #expect(k != UploadJournal.idempotencyKey(runID: "run", index: 2, records: [a]))
        #expect(k != UploadJournal.idempotencyKey(runID: "run", index: 1, records: [b]))
        #expect(UploadTarget(url: "https://h.example:8443/in/box?token=abc").redacted == "https://h.example:8443/in/box")
    }
}
