import CSQLite
import Foundation
import VaultCore

/// An in-process vault at the smallest KDF in a folder of its own, with an attacker's hands: what
/// someone who can write to the vault folder, with no password, does to it (flip a byte, run SQL
/// on the index, drop the history's last record, put a file back from an older copy). Library
/// invariants are tested with it in process; what only a process shows (exit codes, the words of
/// a warning, signals) stays with the built binary.
///
/// Every vault command of a new process unlocks the store again: ``reopen()`` is that process.
package final class VaultFixture {
    /// The fixture's own folder (removed when the fixture goes).
    package let folder: String
    /// The vault folder, `folder/vault`.
    package let root: String
    /// The vault as the last ``reopen()`` (or the creation) unlocked it.
    package private(set) var vault: Vault

    /// The password of every fixture.
    package static let password = "correct horse battery"

    /// A new empty vault.
    package init() throws {
        var template = Array("\(NSTemporaryDirectory())/vault-fixture-XXXXXX".utf8CString)
        folder = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        root = folder + "/vault"
        vault = try VaultStore(root: root).create(password: Self.secret(), kdf: .minimum)
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// The password as the library takes it.
    package static func secret(_ text: String = password) -> SecretBytes {
        Array(text.utf8).withUnsafeBytes { try! SecretBytes(copying: $0) }
    }

    // MARK: What the user does

    /// Adds `bytes` as a document named `name`.
    @discardableResult
    package func add(_ name: String, _ bytes: [UInt8], tags: [String] = []) throws -> DocumentRecord {
        try vault.add(from: BytesSource(bytes), name: name, tags: tags, allowDuplicate: true)
    }

    /// Unlocks the vault again, as the next command's process does (which checks the index
    /// against the history, and rebuilds it when it does not verify).
    @discardableResult
    package func reopen() throws -> Vault {
        vault = try VaultStore(root: root).unlock(password: Self.secret())
        return vault
    }

    /// The ids of the documents the vault lists (repeats kept), after a ``reopen()``.
    package func listed() throws -> [DocumentID] {
        try reopen().records().records.map(\.id)
    }

    // MARK: What the attacker does

    /// The path of `file` in the vault folder.
    package func path(_ file: VaultFile) -> String { root + "/" + file.name }

    /// The bytes of `file` now: kept, to be put back later (``putBack(_:_:)``).
    package func copy(of file: VaultFile) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(file))))
    }

    /// Writes `bytes` over `file`: an older copy put back.
    package func putBack(_ file: VaultFile, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path(file)))
    }

    /// Flips the low bit of the byte at `offset` of `file` (from its end when negative).
    package func flipByte(in file: VaultFile, at offset: Int) throws {
        var bytes = try copy(of: file)
        let at = offset < 0 ? bytes.count + offset : offset
        precondition(bytes.indices.contains(at), "\(file.name) has \(bytes.count) bytes; no byte \(offset)")
        bytes[at] ^= 1
        try putBack(file, bytes)
    }

    /// Cuts the last `count` bytes off `file`.
    package func truncate(_ file: VaultFile, by count: Int) throws {
        let bytes = try copy(of: file)
        precondition(count <= bytes.count, "\(file.name) has \(bytes.count) bytes")
        try putBack(file, Array(bytes.dropLast(count)))
    }

    /// Runs `script` on index.db as the attacker's sqlite3 shell would (no vault code involved).
    /// - Throws: ``SQLFailed`` with SQLite's message.
    package func sql(_ script: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open(path(.index), &db) == SQLITE_OK else {
            defer { sqlite3_close(db) }
            throw SQLFailed(message: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_close(db) }
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, script, nil, nil, &error) == SQLITE_OK else {
            defer { sqlite3_free(error) }
            throw SQLFailed(message: error.map { String(cString: $0) } ?? "error")
        }
    }

    /// The first column of every row `query` returns on index.db, as text.
    package func sqlValues(_ query: String) throws -> [String] {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_open(path(.index), &db) == SQLITE_OK,
            sqlite3_prepare_v2(db, query, -1, &statement, nil) == SQLITE_OK
        else { throw SQLFailed(message: String(cString: sqlite3_errmsg(db))) }
        defer { sqlite3_finalize(statement) }
        var out: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            out.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
        }
        return out
    }

    /// An SQL literal of `id`'s bytes, as index.db keeps ids.
    package static func blob(_ id: DocumentID) -> String { "X'\(id.hex)'" }

    /// SQLite refused the attacker's script.
    package struct SQLFailed: Error, CustomStringConvertible {
        package let message: String
        package var description: String { "sqlite: \(message)" }
    }
}
