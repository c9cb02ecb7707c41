#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What an HTTP answer means to an upload's retries: the policy's loop and budget are
/// VaultCore's (remote stores share them), the reading of HTTP statuses and `Retry-After` is
/// the upload protocols'.
extension RetryPolicy {
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
        /// 507: the server is out of space; sending more now would only be thrown away.
        case outOfSpace
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
        case 507: .outOfSpace
        default: .reject
        }
    }

    /// Parses `Retry-After`: delta-seconds (digits only: `inf`, `1e9` or `0x10` are not
    /// seconds; too many digits are a very long wait, which the caller caps) or an HTTP date
    /// (RFC 9110). Nil if neither.
    public static func parseRetryAfter(_ value: String?, now: Date = Date()) -> Double? {
        guard let v = value?.trimmingSpaces(),
              !v.isEmpty else { return nil }
        if v.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return Double(UInt64(v) ?? .max) }
        guard let date = UTCTime.parseHTTPDate(v) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
