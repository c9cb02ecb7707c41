import Synchronization

/// What vault tells its user without failing: the index did not verify and was rebuilt, the
/// history has findings a writer went on past. The command line prints each as one
/// `vault: warning:` line. An app gets none (there is no public handler, and no public doc
/// promises one): a notice only tells of what vault already repaired or went on past, and
/// an audit reports the same conditions on the vault.
///
/// Process-wide rather than per `Vault`, because several `Vault` values stand for one vault in
/// a process (an upgrade and a password change each make a new one) and the user is told once.
package enum VaultNotices {
    private static let state = Mutex<(handler: (@Sendable (String) -> Void)?, said: Set<String>)>((nil, []))

    /// Sends every notice to `handler` from now on.
    package static func install(_ handler: @escaping @Sendable (String) -> Void) {
        state.withLock { $0.handler = handler }
    }

    /// Tells the user `message`, once per process.
    package static func post(_ message: String) {
        let handler: ((String) -> Void)? = state.withLock { s in
            guard s.said.insert(message).inserted else { return nil }
            return s.handler
        }
        handler?(message)
    }
}
