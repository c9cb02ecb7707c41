#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import VaultCore

/// The operators who may sign in to the receiver's browser view (docs/RECEIVE.md, "The
/// operator's view"): a projection of the office's `operator` records (``OperatorChange``), the
/// only place they are kept, in either home (``OfficeHome``: the vault's history, or a store's
/// receivers' log), read again whenever they change. Each password
/// is kept as an Argon2id hash (``PasswordHash``).
///
/// Signing in is bounded like a station's token: at most ``failuresPerMinute`` failed attempts
/// a minute per address (an IPv6 address by its /64) and per operator name, and
/// ``allFailuresPerMinute`` in all, whatever the address (a review rotating source addresses got
/// every guess checked, and found an eight-character password in 21 s), and at most
/// ``concurrentVerifications`` hashes computed at once (each
/// takes 64 MiB), so a flood of attempts costs neither unbounded memory nor all the cores. An
/// unknown name costs the same hash as a known one, so names cannot be told apart by time.
package final class OperatorAccounts: Sendable {
    /// Failed sign-ins one address, or one operator's name, may take in a minute.
    package static let failuresPerMinute = 10
    /// Failed sign-ins in a minute, from anywhere, before every sign-in waits.
    package static let allFailuresPerMinute = 60
    /// The fewest characters an operator's password has: an operator sees every document.
    package static let minimumPasswordLength = 12
    /// Passwords checked at once.
    package static let concurrentVerifications = 2

    private struct State {
        var head: HistoryHead?
        var loaded = false
        /// The last read of the records failed: nobody signs in until one succeeds.
        var unreadable = false
        var hashes: [String: String] = [:]
        var problems: [String] = []
        var failures: [String: (count: Int, since: Date)] = [:]
        var verifying = 0
        var decoy: String?
    }

    private let home: any OfficeHome
    private let state = Mutex(State())

    /// The operators of the office kept in `home`.
    package init(home: any OfficeHome) async throws {
        self.home = home
        try await refresh()
    }

    /// The operators of the office in the vault folder `vault`.
    package convenience init(vault: Vault) async throws {
        try await self.init(home: FolderHome(vault: vault))
    }

    /// Reads the operators again when the records changed since they were read.
    package func refresh() async throws {
        let (head, loaded) = state.withLock { ($0.head, $0.loaded) }
        let change: OfficeChange?
        do {
            change = try await home.changes(since: loaded ? head : nil)
        } catch {
            state.withLock { $0.unreadable = true }
            throw error
        }
        state.withLock { s in
            s.unreadable = false
            s.loaded = true
            guard let change else { return }
            let records: [OfficeRecord]
            switch change {
            case .appended(let new, let head):
                (records, s.head) = (new, head)
            case .reread(let all, let head, let problems):
                (records, s.head, s.problems, s.hashes) = (all, head, problems, [:])
            }
            for record in records {
                guard let change = record.payload(OperatorChange.self) else { continue }
                switch change.action {
                case .add: s.hashes[change.name] = change.passwordHash
                case .remove: s.hashes[change.name] = nil
                }
            }
        }
    }

    /// The operators' names, sorted.
    package var names: [String] {
        get async throws {
            try await refresh()
            return state.withLock { $0.hashes.keys.sorted() }
        }
    }

    /// Whether `name` is still the operator a session was started for: the same `add` record
    /// (its hash, which a new salt makes unique), in a history that verifies. A removed
    /// operator's sessions end at their next request, and so do they when the operator is
    /// removed and added again (a new password, or a new person under the name).
    package func isCurrent(_ name: String, generation: String) async -> Bool {
        guard (try? await refresh()) != nil else { return false }
        return state.withLock { s in
            s.problems.isEmpty && s.hashes[name].map { OperatorSessions.same($0, generation) } == true
        }
    }

    /// Makes the hash an unknown name is checked against now, so that the first sign-in with
    /// an unknown name does not take longer than the others (a server calls this at start).
    package func prepare() { _ = decoy() }

    /// Whether `name` may name an operator: 1–64 letters, digits, `.`, `_` or `-` (a station's rule).
    package static func isName(_ name: String) -> Bool { Receiver.isStationName(name) }

    /// Adds an operator: records the Argon2id hash of `password` in the history.
    /// - Throws: `usage` for a bad name or an empty password, `already-exists` for a name taken.
    package func add(_ name: String, password: SecretBytes) async throws {
        guard Self.isName(name) else {
            throw VaultError(
                .usage,
                "an operator's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        }
        if let why = Self.passwordProblem(password) { throw VaultError(.usage, why) }
        let change = OperatorChange(action: .add, name: name, passwordHash: try PasswordHash.make(password))
        try await record(change) { names in
            guard !names.contains(name) else {
                throw VaultError(.alreadyExists, "there is already an operator named '\(name)'")
            }
        }
    }

    /// Why `password` is too weak for an operator (who sees every document the office holds), or
    /// nil: at least ``minimumPasswordLength`` characters, not one repeated or a run of a few.
    package static func passwordProblem(_ password: SecretBytes) -> String? {
        password.withUnsafeBytes { bytes -> String? in
            let text = String(decoding: bytes, as: UTF8.self)
            guard !text.isEmpty else { return "an operator's password cannot be empty" }
            guard text.count >= minimumPasswordLength, Set(text).count >= 5 else {
                return """
                    an operator's password needs at least \(minimumPasswordLength) characters, not a few repeated \
                    (an operator sees every document the office holds)
                    """
            }
            return nil
        }
    }

    /// Removes an operator: they cannot sign in from now on, and their sessions end.
    package func remove(_ name: String) async throws {
        try await record(OperatorChange(action: .remove, name: name)) { names in
            guard names.contains(name) else { throw VaultError(.notFound, "there is no operator named '\(name)'") }
        }
    }

    /// Records `change` when `check` passes on the operators' names (read again, and checked
    /// again when another receiver of a store appended first).
    private func record(_ change: OperatorChange, check: ([String]) throws -> Void) async throws {
        while true {
            try check(try await names)
            if try await home.append(OperatorChange.operation, detail: change.detail) { break }
        }
        try await refresh()
    }

    /// The result of a sign-in.
    package enum SignIn: Equatable, Sendable {
        /// The name and password match: the name, and the generation of the operator (what
        /// ``isCurrent(_:generation:)`` checks).
        case signedIn(String, generation: String)
        /// They do not.
        case refused
        /// The history does not verify: nobody signs in until a password holder has audited it.
        case untrusted
        /// This address failed too often in the last minute.
        case tooManyFailures
        /// Too many passwords are being checked at once.
        case busy
    }

    /// The failure budgets a sign-in counts against: its address (an IPv6 address by its /64,
    /// which one client holds whole), the operator's name, and all sign-ins; each with its limit.
    static func budgets(name: String, address: String) -> [(key: String, limit: Int)] {
        let source = address.contains(":") ? address.split(separator: ":").prefix(4).joined(separator: ":") : address
        return [
            ("address " + source, failuresPerMinute), ("name " + String(name.prefix(64)), failuresPerMinute),
            ("all", allFailuresPerMinute)
        ]
    }

    /// Checks `name` and `password` against the operators as last read (``refresh()`` first),
    /// counting failures against the address, the name and all sign-ins
    /// (``budgets(name:address:)``).
    package func signIn(name: String, password: SecretBytes, from address: String, now: Date = Date()) -> SignIn {
        let budgets = Self.budgets(name: name, address: address)
        let gate = state.withLock { s -> SignIn? in
            for (key, limit) in budgets {
                guard let f = s.failures[key] else { continue }
                if now.timeIntervalSince(f.since) >= 60 {
                    s.failures[key] = nil
                } else if f.count >= limit {
                    return .tooManyFailures
                }
            }
            guard s.verifying < Self.concurrentVerifications else { return .busy }
            s.verifying += 1
            return nil
        }
        if let gate { return gate }
        defer { state.withLock { $0.verifying -= 1 } }
        let trusted = state.withLock { $0.loaded && !$0.unreadable && $0.problems.isEmpty }
        if !trusted { return .untrusted }
        let hash = state.withLock { $0.hashes[name] }
        // The same work for an unknown name as for a known one.
        let matches = PasswordHash.verify(password, against: hash ?? decoy())
        if matches, let hash { return .signedIn(name, generation: hash) }
        state.withLock { s in
            for (key, _) in budgets {
                let f = s.failures[key] ?? (0, now)
                s.failures[key] = (f.count + 1, f.since)
            }
            if s.failures.count > 10_000 {
                s.failures = s.failures.filter { now.timeIntervalSince($0.value.since) < 60 }
            }
        }
        return .refused
    }

    /// A hash of a random password, made once: what an unknown name is checked against.
    private func decoy() -> String {
        if let d = state.withLock({ $0.decoy }) { return d }
        let made = (try? SecretBytes.random(count: 32, using: SystemRandom())).flatMap { try? PasswordHash.make($0) }
        state.withLock { $0.decoy = $0.decoy ?? made }
        return made ?? ""
    }
}
