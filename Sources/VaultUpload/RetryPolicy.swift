import Foundation
import VaultCore

/// How an upload reacts to each outcome: which answers are retried, how long to wait, and
/// when to give up. Pure: the caller supplies the randomness and the clock.
public struct RetryPolicy: Sendable {
    /// Most attempts per batch (first try included).
    public var maxAttempts: Int
    /// First backoff ceiling in seconds; it doubles with each attempt.
    public var baseDelay: Double
    /// Largest backoff ceiling in seconds.
    public var maxDelay: Double
    /// Largest `Retry-After` honoured, in seconds.
    public var maxRetryAfter: Double

    /// A policy with `retries` retries after the first attempt.
    public init(retries: Int = 5, baseDelay: Double = 0.5, maxDelay: Double = 30, maxRetryAfter: Double = 120) {
        maxAttempts = retries + 1
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// What to do about an HTTP status.
    public enum Decision: Equatable, Sendable {
        /// 2xx: the batch is confirmed.
        case confirmed
        /// 408, 429, 500, 502, 503, 504: try again after a delay.
        case retry
        /// 401, 403: stop; the credentials are wrong.
        case authentication
        /// 413: the payload is too large for the server.
        case tooLarge
        /// Any other status: stop with the server's message.
        case reject
    }

    /// The decision for `status`.
    public static func decide(status: Int) -> Decision {
        switch status {
        case 200..<300: .confirmed
        case 408, 429, 500, 502, 503, 504: .retry
        case 401, 403: .authentication
        case 413: .tooLarge
        default: .reject
        }
    }

    /// Seconds to wait before attempt `attempt + 1` (attempts count from 1): the server's
    /// `Retry-After` when given (capped), else "full jitter" — uniform in [0, min(max, base·2^(attempt−1))].
    /// - Parameter unit: a uniform random number in [0, 1).
    public func delay(afterAttempt attempt: Int, retryAfter: Double?, unit: Double) -> Double {
        if let retryAfter { return min(max(0, retryAfter), maxRetryAfter) }
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(max(0, attempt - 1))))
        return unit * ceiling
    }

    /// Parses `Retry-After`: delta-seconds or an HTTP date (RFC 9110). Nil if neither.
    public static func parseRetryAfter(_ value: String?, now: Date = Date()) -> Double? {
        guard let v = value?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
        if let seconds = Double(v), seconds >= 0 { return seconds }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = f.date(from: v) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
