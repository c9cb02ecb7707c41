#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one retry policy of every network operation in vault (uploads, remote stores): which
/// answers are retried, how long to wait, and when to give up. Each operation has one budget
/// (``maxAttempts``), spent by one loop: a retried operation never retries inside itself, so a
/// request is tried at most ``maxAttempts`` times. The clock and the randomness are injected
/// (``Clock``, ``random``), so tests run the whole policy without waiting.
public struct RetryPolicy: Sendable {
    /// Most attempts per operation (first try included).
    public var maxAttempts: Int
    /// First backoff ceiling in seconds; it doubles with each attempt.
    public var baseDelay: Double
    /// Largest backoff ceiling in seconds.
    public var maxDelay: Double
    /// Largest `Retry-After` honoured, in seconds.
    public var maxRetryAfter: Double
    /// How waiting is done.
    public var clock = Clock.system
    /// A uniform random number in [0, 1) for the jitter.
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

    /// A policy with `retries` retries after the first attempt.
    public init(retries: Int = 5, baseDelay: Double = 0.5, maxDelay: Double = 30, maxRetryAfter: Double = 120) {
        maxAttempts = retries + 1
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The policy of a remote store's requests (push, pull, clone, a remote vault's reads):
    /// three retries, ceilings 0.5, 1 and 2 s.
    public static let store = RetryPolicy(retries: 3, baseDelay: 0.5, maxDelay: 2)

    /// Waiting, as the policy sees it.
    public struct Clock: Sendable {
        /// Waits `seconds` in a task (throws when the task is cancelled).
        public var sleep: @Sendable (Double) async throws -> Void
        /// Waits `seconds` on a thread that is not in a task (a blocking read of a remote vault).
        public var sleepBlocking: @Sendable (Double) -> Void

        /// A clock that waits with `sleep` in tasks and `sleepBlocking` on other threads (a test's
        /// clock records the delays instead of waiting).
        public init(
            sleep: @escaping @Sendable (Double) async throws -> Void,
            sleepBlocking: @escaping @Sendable (Double) -> Void
        ) {
            self.sleep = sleep
            self.sleepBlocking = sleepBlocking
        }

        /// The system's clock.
        public static let system = Clock(
            sleep: { try await Task.sleep(nanoseconds: UInt64(max(0, $0) * 1e9)) },
            sleepBlocking: { Platform.sleep(seconds: $0) })
    }

    /// Seconds to wait before attempt `attempt + 1` (attempts count from 1): the server's
    /// `Retry-After` when given (capped), else "full jitter" — uniform in [0, min(max, base·2^(attempt−1))].
    /// - Parameters:
    ///   - attempt: the attempt that failed (the first is 1).
    ///   - retryAfter: the server's `Retry-After`, in seconds, if it sent one.
    ///   - unit: a uniform random number in [0, 1).
    public func delay(afterAttempt attempt: Int, retryAfter: Double?, unit: Double) -> Double {
        if let retryAfter { return min(max(0, retryAfter), maxRetryAfter) }
        let ceiling = min(maxDelay, baseDelay * Double(sign: .plus, exponent: max(0, attempt - 1), significand: 1))
        return unit * ceiling
    }

    /// The delay before attempt `attempt + 1`, with the policy's own randomness.
    public func delay(afterAttempt attempt: Int, retryAfter: Double? = nil) -> Double {
        delay(afterAttempt: attempt, retryAfter: retryAfter, unit: random())
    }

    /// Runs `operation` until it succeeds, fails with an error `isTransient` does not accept,
    /// or has been tried ``maxAttempts`` times (then the last error is thrown).
    public func run<T>(
        isTransient: (any Error) -> Bool,
        onRetry: (_ attempt: Int, _ delay: Double, _ error: any Error) -> Void = { _, _, _ in },
        _ operation: () async throws -> T
    ) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await operation()
            } catch  where attempt < maxAttempts && isTransient(error) && !(error is CancellationError) {
                let wait = delay(afterAttempt: attempt)
                onRetry(attempt, wait, error)
                try await clock.sleep(wait)
                attempt += 1
            }
        }
    }

    /// ``run(isTransient:onRetry:_:)`` for an operation that blocks its thread.
    public func runBlocking<T>(isTransient: (any Error) -> Bool, _ operation: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try operation()
            } catch  where attempt < maxAttempts && isTransient(error) {
                clock.sleepBlocking(delay(afterAttempt: attempt))
                attempt += 1
            }
        }
    }
}
