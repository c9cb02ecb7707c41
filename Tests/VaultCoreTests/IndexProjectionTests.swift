import Foundation
import Testing
import VaultTestSupport
@testable import VaultCore

/// The index is a projection of the history: whatever someone who can write to the vault folder
/// does to index.db (no password needed), the next process lists every document once, selects
/// by tag what the history says, and shows none of the attacker's text. In process, with
/// ``VaultFixture``'s attacker API; the binary-level suite keeps what only a process shows (the
/// warning line, `verify`'s exit status, a hang bounded by a timeout).
@Suite struct IndexProjectionTests {
    /// Two documents tagged `2026`.
    static func twoDocuments() throws -> (VaultFixture, DocumentID, DocumentID) {
        let f = try VaultFixture()
        let a = try f.add("a.txt", testBytes(2000, seed: 3921), tags: ["2026"]).id
        let b = try f.add("b.txt", testBytes(2000, seed: 3922), tags: ["2026"]).id
        return (f, a, b)
    }

    /// B's row deleted and a second copy of A's row inserted with its id as TEXT: a list showed
    /// A twice and no B, and an upload sent A twice and never B.
    @Test func swappedRowsHideNoDocument() throws {
        let (f, a, b) = try Self.twoDocuments()
        try f.sql("DELETE FROM documents WHERE id = \(VaultFixture.blob(b));")
        #expect(throws: VaultFixture.SQLFailed.self, "a STRICT table takes no TEXT id") {
            try f.sql(
                """
                INSERT INTO documents SELECT added, CAST(id AS TEXT), name, digest, logged, record FROM documents
                    WHERE id = \(VaultFixture.blob(a));
                """)
        }
        let listed = try f.listed()
        #expect(listed.count == 2 && Set(listed) == [a, b], "each document once: \(listed)")
        // What an upload of everything selects.
        let selected = try f.vault.select(DocumentSelection()).map(\.id)
        #expect(selected.count == 2 && Set(selected) == [a, b], "\(selected)")
    }

    /// A trigger that deletes B's row whenever it is inserted survived rebuilds that cleared rows
    /// in place, so B stayed hidden.
    @Test func aPlantedTriggerIsFoundAndTheIndexRebuiltWithoutIt() throws {
        let (f, a, b) = try Self.twoDocuments()
        try f.sql(
            """
            CREATE TRIGGER hide AFTER INSERT ON documents WHEN NEW.id = \(VaultFixture.blob(b))
                BEGIN DELETE FROM documents WHERE id = NEW.id; END;
            DELETE FROM documents WHERE id = \(VaultFixture.blob(b));
            """)
        #expect(Set(try f.listed()) == [a, b])
        #expect(try f.sqlValues("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == ["0"])
        #expect(try f.reopen().audit().findings.isEmpty, "the rebuilt index audits clean")
    }

    /// One row of the `tags` table deleted hid a document from a selection by tag.
    @Test func aDeletedTagRowHidesNoDocument() throws {
        let (f, a, b) = try Self.twoDocuments()
        try f.sql("DELETE FROM tags WHERE id = \(VaultFixture.blob(b));")
        let tagged = try f.reopen().select(DocumentSelection(tags: ["2026"])).map(\.id)
        #expect(Set(tagged) == [a, b] && tagged.count == 2, "\(tagged)")
    }

    /// A row in the `unreadable` table made every list report the attacker's text as vault's
    /// own finding.
    @Test func aPlantedUnreadableNoteIsNeverShown() throws {
        let (f, a, b) = try Self.twoDocuments()
        let fake = "X'" + String(repeating: "ab", count: 16) + "'"
        #expect(throws: VaultFixture.SQLFailed.self, "notes are sealed rows: no column takes text") {
            try f.sql(
                """
                INSERT INTO unreadable (id, code, message) VALUES (\(fake), 'vault-damaged',
                    'CALL +1 555 0100 TO RESTORE YOUR FILES');
                """)
        }
        try f.sql("INSERT INTO unreadable (id, record) VALUES (\(fake), X'00');")
        let (records, unreadable) = try f.reopen().records()
        #expect(Set(records.map(\.id)) == [a, b])
        #expect(unreadable.isEmpty, "\(unreadable.map(\.1.message))")
    }

    /// index.db replaced by a symbolic link to another SQLite database: vault dropped that
    /// database's tables. It is opened without following links, and the other file is untouched.
    @Test func anIndexThatIsASymbolicLinkLeadsNowhere() throws {
        let (f, a, b) = try Self.twoDocuments()
        let other = f.folder + "/other.db"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f.path(.index) + suffix) }
        try FileManager.default.createSymbolicLink(atPath: f.path(.index), withDestinationPath: "../other.db")
        let precious = try VaultFixture()
        try FileManager.default.removeItem(atPath: precious.path(.index))
        try FileManager.default.createSymbolicLink(atPath: precious.path(.index), withDestinationPath: other)
        try precious.sql("CREATE TABLE precious (x); INSERT INTO precious VALUES (42);")
        #expect(Set(try f.listed()) == [a, b])
        #expect(try precious.sqlValues("SELECT x FROM precious") == ["42"], "the other database is untouched")
        let attributes = try FileManager.default.attributesOfItem(atPath: f.path(.index))
        #expect(attributes[.type] as? FileAttributeType == .typeRegular, "a regular index.db took its place")
    }

    /// One flipped byte in a sealed row made every list fail until index.db was deleted by hand.
    @Test func aDamagedRowIsRebuiltNotAFailure() throws {
        let (f, a, b) = try Self.twoDocuments()
        try f.sql(
            """
            UPDATE documents SET record = CAST(substr(record, 1, 40) || X'FF' || substr(record, 42) AS BLOB)
                WHERE id = \(VaultFixture.blob(b));
            """)
        #expect(Set(try f.listed()) == [a, b])
        #expect(try f.vault.audit().findings.isEmpty, "rebuilt when opened: nothing left to find")
    }

    /// A flipped byte in a document's object: that document reads as damaged, the other reads
    /// whole, and the audit names the damaged one.
    @Test func aFlippedByteInAnObjectIsFoundAndTheOtherDocumentReads() throws {
        let f = try VaultFixture()
        let good = try f.add("good.bin", testBytes(70_000, seed: 1))
        let bad = try f.add("bad.bin", testBytes(70_000, seed: 2))
        let object = f.root + "/objects/\(bad.id.hex).vlt"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 100] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let vault = try f.reopen()
        #expect(try vault.randomAccess(good.id).read(at: 0, count: 70_001) == testBytes(70_000, seed: 1))
        #expect(throws: VaultError.self) { _ = try vault.randomAccess(bad.id).read(at: 0, count: 70_001) }
    }

    /// The history's last record cut off (a log put back shorter): the next process notices the
    /// log no longer reaches its head, and the audit says so.
    @Test func aTruncatedHistoryIsAFinding() throws {
        let f = try VaultFixture()
        try f.add("a.txt", testBytes(100, seed: 1))
        try f.add("b.txt", testBytes(100, seed: 2))
        try f.truncate(.log, by: 10)
        let findings = try f.reopen().audit().findings
        #expect(!findings.isEmpty, "a shortened history is found")
    }
}
