import Foundation
import Testing

@testable import VaultCore
@testable import VaultReceive

/// Signing in is bounded whatever the address: a review rotating source addresses (any IPv6
/// /64, or 127.0.0.0/8) had every guess checked, and found an eight-character password in 21 s.
@Suite struct OperatorAccountsTests {
    static func accounts() async throws -> (OperatorAccounts, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(UUID().uuidString)").path
        let vault = try VaultStore(root: dir).create(
            password: try Array("office password".utf8).withUnsafeBytes { try SecretBytes(copying: $0) }, kdf: .minimum)
        let accounts = try await OperatorAccounts(vault: vault)
        try await accounts.add("alice", password: Self.secret("correct horse operator"))
        return (accounts, dir)
    }

    static func secret(_ text: String) throws -> SecretBytes {
        try Array(text.utf8).withUnsafeBytes { try SecretBytes(copying: $0) }
    }

    @Test func guessesFromEverChangingAddressesAreBoundedByNameAndInAll() async throws {
        let (accounts, dir) = try await Self.accounts()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wrong = try Self.secret("sunshine7")
        for i in 0..<OperatorAccounts.failuresPerMinute {
            #expect(accounts.signIn(name: "alice", password: wrong, from: "127.0.0.\(i + 1)") == .refused)
        }
        // A new address, the right password even: alice's budget is spent for the minute.
        let right = try Self.secret("correct horse operator")
        #expect(accounts.signIn(name: "alice", password: right, from: "127.0.1.1") == .tooManyFailures)
        let later = accounts.signIn(name: "alice", password: right, from: "127.0.1.1", now: Date() + 61)
        #expect(later != .tooManyFailures)
        // One IPv6 /64 is one address.
        let (other, dir2) = try await Self.accounts()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        for i in 0..<OperatorAccounts.failuresPerMinute {
            #expect(other.signIn(name: "n\(i)", password: wrong, from: "2001:db8:1:2::\(i + 1)") == .refused)
        }
        #expect(other.signIn(name: "someone", password: wrong, from: "2001:db8:1:2::ffff") == .tooManyFailures)
        // And in all, whatever the names and addresses.
        let names = OperatorAccounts.budgets(name: "x", address: "10.0.0.1").map(\.key)
        #expect(names == ["address 10.0.0.1", "name x", "all"])
        #expect(OperatorAccounts.budgets(name: "x", address: "2001:db8:1:2::9").first?.key == "address 2001:db8:1:2")
    }

    @Test func anOperatorsPasswordMustBeStrong() async throws {
        let (accounts, dir) = try await Self.accounts()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for weak in ["", "sunshine7", "aaaaaaaaaaaaaaaa", "abababababab"] {
            await #expect {
                try await accounts.add("bob", password: Self.secret(weak))
            } throws: { error in
                (error as? VaultError)?.code == .usage
            }
        }
        #expect(
            OperatorAccounts.passwordProblem(try Self.secret("sunshine7"))
                == "an operator's password needs at least 12 characters, not a few repeated "
                + "(an operator sees every document the office holds)")
        try await accounts.add("bob", password: Self.secret("a long and odd phrase"))
    }
}
