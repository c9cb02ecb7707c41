import Foundation
import Testing
import VaultCore

/// The one retry loop: one budget per operation, only transient failures retried, the clock and
/// the randomness injected (nothing here waits).
@Suite struct RetryLoopTests {
    /// Records the waits the policy asks for instead of waiting.
    final class RecordingClock: @unchecked Sendable {
        // @unchecked: the lock guards `waits`.
        private let lock = NSLock()
        private var recorded: [Double] = []
        var waits: [Double] { lock.withLock { recorded } }
        var clock: RetryPolicy.Clock {
            RetryPolicy.Clock(
                sleep: { s in self.lock.withLock { self.recorded.append(s) } },
                sleepBlocking: { s in self.lock.withLock { self.recorded.append(s) } })
        }
    }

    static func policy(_ clock: RecordingClock, retries: Int = 3) -> RetryPolicy {
        var p = RetryPolicy(retries: retries, baseDelay: 0.5, maxDelay: 2)
        p.clock = clock.clock
        p.random = { 0.5 }
        return p
    }

    @Test func transientFailuresAreRetriedUntilTheBudgetIsSpentThenTheLastErrorIsThrown() async {
        let clock = RecordingClock()
        var calls = 0
        await #expect {
            try await Self.policy(clock).run(isTransient: VaultError.isTransientStoreFailure) {
                () async throws -> Int in
                calls += 1
                throw VaultError(.storeUnavailable, "attempt \(calls)")
            }
        } throws: { e in (e as? VaultError)?.code == .storeUnavailable && (e as? VaultError)?.message == "attempt 4" }
        #expect(calls == 4)
        // Full jitter at one half of ceilings 0.5, 1, 2.
        #expect(clock.waits == [0.25, 0.5, 1])
    }

    @Test func aFailureThatIsNotTransientIsThrownAtOnce() async {
        let clock = RecordingClock()
        var calls = 0
        await #expect {
            try await Self.policy(clock).run(isTransient: VaultError.isTransientStoreFailure) {
                () async throws -> Int in
                calls += 1
                throw VaultError(.storeUnauthorized, "refused")
            }
        } throws: { e in (e as? VaultError)?.code == .storeUnauthorized }
        #expect(calls == 1)
        #expect(clock.waits.isEmpty)
    }

    @Test func successAfterARetryReturnsTheValueAndReportsTheRetry() async throws {
        let clock = RecordingClock()
        var calls = 0
        var reported: [Int] = []
        let value = try await Self.policy(clock).run(
            isTransient: VaultError.isTransientStoreFailure,
            onRetry: { attempt, _, _ in reported.append(attempt) }
        ) { () async throws -> String in
            calls += 1
            if calls < 3 { throw VaultError(.storeUnavailable, "dropped") }
            return "ok"
        }
        #expect(value == "ok")
        #expect(calls == 3)
        #expect(reported == [1, 2])
        #expect(clock.waits.count == 2)
    }

    @Test func theBlockingLoopSpendsTheSameBudget() {
        let clock = RecordingClock()
        var calls = 0
        #expect {
            try Self.policy(clock, retries: 2).runBlocking(isTransient: VaultError.isTransientStoreFailure) {
                () throws -> Int in
                calls += 1
                throw VaultError(.storeUnavailable, "dropped")
            }
        } throws: { e in (e as? VaultError)?.code == .storeUnavailable }
        #expect(calls == 3)
        #expect(clock.waits == [0.25, 0.5])
    }
}
