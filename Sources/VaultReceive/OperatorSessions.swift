#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import VaultCore

/// The signed-in operators of the browser view, in memory only (a restart signs everybody
/// out). A session is known by a random 256-bit token in an `HttpOnly`, `SameSite=Strict`
/// cookie, and carries a second random token that every form of the session must send back
/// (the CSRF token). Sessions end at sign-out, after ``idle`` without a request, after
/// ``lifetime`` in all, or when the operator is removed; at most ``capacity`` live at once (the
/// oldest goes first).
package final class OperatorSessions: Sendable {
    /// A session ends after this long without a request.
    package static let idle: TimeInterval = 30 * 60
    /// And after this long in all.
    package static let lifetime: TimeInterval = 12 * 3600
    /// The most sessions kept.
    package static let capacity = 1000

    /// A signed-in operator.
    package struct Session: Sendable, Equatable {
        /// Who signed in.
        package var operatorName: String
        /// Which `add` of that name (``OperatorAccounts/isCurrent(_:generation:)``).
        package var generation: String
        /// The token the session's forms carry.
        package var csrf: String
        package var started: Date
        package var lastUsed: Date
    }

    private let sessions = Mutex([String: Session]())

    package init() {}

    /// A new session for `name`: its cookie token and the session.
    package func start(
        for name: String, generation: String = "", now: Date = Date()
    ) -> (
        token: String, session: Session
    ) {
        let token = Self.randomToken()
        let session = Session(
            operatorName: name, generation: generation, csrf: Self.randomToken(), started: now, lastUsed: now)
        sessions.withLock { all in
            all = all.filter { !Self.expired($0.value, now: now) }
            if all.count >= Self.capacity, let oldest = all.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                all[oldest.key] = nil
            }
            all[token] = session
        }
        return (token, session)
    }

    /// The live session of `token`, its use recorded; nil when there is none or it expired.
    package func session(_ token: String?, now: Date = Date()) -> Session? {
        guard let token, token.utf8.count == 64 else { return nil }
        return sessions.withLock { all in
            guard var s = all[token] else { return nil }
            if Self.expired(s, now: now) {
                all[token] = nil
                return nil
            }
            s.lastUsed = now
            all[token] = s
            return s
        }
    }

    /// Ends the session of `token`.
    package func end(_ token: String?) {
        guard let token else { return }
        _ = sessions.withLock { $0.removeValue(forKey: token) }
    }

    /// Ends every session of `name`.
    package func end(operator name: String) {
        sessions.withLock { $0 = $0.filter { $0.value.operatorName != name } }
    }

    private static func expired(_ s: Session, now: Date) -> Bool {
        now.timeIntervalSince(s.lastUsed) >= idle || now.timeIntervalSince(s.started) >= lifetime
    }

    /// 32 random bytes in hex.
    package static func randomToken() -> String { Hex.encode(SystemRandom().bytes(32)) }

    /// Whether two tokens are equal, in time that does not depend on where they differ.
    package static func same(_ a: String, _ b: String) -> Bool {
        Receiver.constantTimeEqual(Array(a.utf8), Array(b.utf8))
    }
}
