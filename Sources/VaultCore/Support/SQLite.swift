import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage

/// A connection to an SQLite database: the vault's index (`index.db`).
///
/// A thin layer over the C library (Debian's `libsqlite3`, the platforms' own SQLite): the index
/// needs a dozen prepared statements and crash-safe transactions, nothing of an ORM. GRDB.swift
/// supports Linux only in part, and sqlite-nio's API is futures on an event loop, which the
/// index's synchronous, single-threaded callers would only have to wait on.
///
/// Not thread-safe: one connection per thread (``DocumentIndex`` serialises its users).
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens `path` read-write, creating it (0600) when `create` is true.
    /// - Throws: ``VaultError/Code/notFound`` when it is missing and `create` is false.
    init(path: String, create: Bool) throws {
        self.path = path
        if create, FileSystem.kind(of: path) == .missing {
            // SQLite would create the file 0644 less the umask; the vault's files are 0600, and
            // its journal and WAL files take the database's mode.
            do {
                let fd = try FileDescriptor.open(
                    path, .writeOnly, options: [.create, .closeOnExec, .noFollow, .nonBlocking],
                    permissions: .ownerReadWrite, retryOnInterrupt: true)
                try? fd.close()
            } catch {
                throw VaultError.posix("cannot create", path, error)
            }
        }
        var db: OpaquePointer?
        // NOFOLLOW: an index.db that is a symbolic link is refused, not followed to another file.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOFOLLOW
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let e = Self.error(rc, db, "cannot open \(path)")
            sqlite3_close_v2(db)
            handle = nil
            throw e
        }
        sqlite3_busy_timeout(db, 120_000)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Rows the last statement inserted, changed or deleted.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs SQL that returns no rows (schema, pragmas).
    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw Self.error(rc, handle, "\(path)") }
    }

    /// A prepared statement for `sql`, cached for the connection's life and reset for reuse.
    func statement(_ sql: String) throws -> SQLiteStatement {
        if let s = statements[sql] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK,
              let stmt else { throw Self.error(rc, handle, "\(path)") }
        let s = SQLiteStatement(stmt, database: self)
        statements[sql] = s
        return s
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`): committed when it returns, rolled
    /// back when it throws.
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let r = try body()
            try execute("COMMIT")
            return r
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in a read transaction: every statement in it sees the same snapshot.
    func reading<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN")
        defer { try? execute("COMMIT") }
        return try body()
    }

    /// The error for result code `rc`: damage for a file that is not a database or is corrupt,
    /// an I/O error (disk full among them) otherwise.
    static func error(_ rc: Int32, _ db: OpaquePointer?, _ what: String) -> VaultError {
        let text = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
        let cause = SQLiteFailure(code: rc)
        switch rc & 0xff {
        case SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FORMAT, SQLITE_SCHEMA, SQLITE_MISMATCH:
            return VaultError(.vaultDamaged, "\(what): the index database is damaged (\(text))", cause: cause)
        case SQLITE_FULL:
            return VaultError(.io, "\(what): the disk is full", cause: cause)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_BUSY, SQLITE_LOCKED:
            return VaultError(.io, "\(what): \(text)", cause: cause)
        default:
            return VaultError(.vaultDamaged, "\(what): \(text)", cause: cause)
        }
    }

    fileprivate func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK else { throw Self.error(rc, handle, path) }
    }
    fileprivate var errorHandle: OpaquePointer? { handle }
}

/// A prepared statement: bind, step, read columns.
final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let database: SQLiteDatabase

    fileprivate init(_ stmt: OpaquePointer, database: SQLiteDatabase) {
        self.stmt = stmt
        self.database = database
    }

    deinit { sqlite3_finalize(stmt) }

    /// Ends the statement's use: a statement left on a row holds its read snapshot open, and a
    /// later write transaction on the connection would fail (`SQLITE_BUSY_SNAPSHOT`).
    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    /// Binds parameters 1… in order: `[UInt8]` as a blob, integers, strings as text, nil as NULL.
    @discardableResult
    func bind(_ values: Any?...) throws -> SQLiteStatement {
        for (i, v) in values.enumerated() {
            let n = Int32(i + 1)
            let rc: Int32
            switch v {
            case let b as [UInt8]:
                rc = b.withUnsafeBytes {
                    sqlite3_bind_blob(
                        stmt, n, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), Self.transient)
                }
            case let x as Int64: rc = sqlite3_bind_int64(stmt, n, x)
            case let x as Int: rc = sqlite3_bind_int64(stmt, n, Int64(x))
            case let s as String: rc = sqlite3_bind_text(stmt, n, s, -1, Self.transient)
            case nil: rc = sqlite3_bind_null(stmt, n)
            default: preconditionFailure("internal error: cannot bind \(type(of: v!))")
            }
            try database.check(rc)
        }
        return self
    }

    /// Advances to the next row: true while there is one.
    func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw SQLiteDatabase.error(rc, database.errorHandle, database.path)
    }

    /// Runs a statement that returns no rows.
    func run() throws {
        defer { reset() }
        while try step() {}
    }

    /// Steps to the first row and reads it with `read`, then resets: nil when there is none.
    func first<R>(_ read: (SQLiteStatement) throws -> R) throws -> R? {
        defer { reset() }
        return try step() ? try read(self) : nil
    }

    /// Calls `body` on every row, then resets (also when `body` throws).
    func forEach(_ body: (SQLiteStatement) throws -> Void) throws {
        defer { reset() }
        while try step() { try body(self) }
    }

    func blob(_ column: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(stmt, column))
        guard n > 0,
              let p = sqlite3_column_blob(stmt, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        return String(cString: p)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    /// SQLITE_TRANSIENT: SQLite copies the bound bytes.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// An SQLite result code, kept as the cause of the error it gave (its text is in the message).
package struct SQLiteFailure: Error, CustomStringConvertible, Sendable, CauseStatedInMessage {
    /// The extended result code.
    package let code: Int32
    /// True for a database that cannot be written (`SQLITE_READONLY` and its extended codes).
    package var isReadOnly: Bool { code & 0xff == SQLITE_READONLY || code & 0xff == SQLITE_PERM }
    package var description: String { String(cString: sqlite3_errstr(code)) }
}
