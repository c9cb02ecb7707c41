import Foundation
import Testing
@testable import VaultCore

/// A received batch (``IntakeBatch``) enters the vault whole or not at all: staged documents are
/// invisible until the commit, a discarded batch leaves nothing, and a commit a crash stopped
/// after linking the objects is taken out by the next command instead of adopted.
@Suite struct IntakeTests {
    let dir = TempDir()
    let vault: Vault

    init() throws {
        vault = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
    }

    func stage(_ batch: IntakeBatch, _ documents: [(String, [UInt8])]) throws {
        for (name, bytes) in documents {
            try batch.begin(name: name, contentType: "application/octet-stream")
            try bytes.withUnsafeBytes { try batch.write($0) }
            try batch.end()
        }
    }

    func objects() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.file("vault/objects")).sorted()
    }

    @Test func aCommittedBatchIsOneRecordAndItsDocumentsReadBack() throws {
        let batch = IntakeBatch(vault: vault)
        let docs = [("a.pdf", testBytes(300_000, seed: 1)), ("b.txt", testBytes(10, seed: 2)), ("empty", [])]
        try stage(batch, docs)
        #expect(try objects().isEmpty, "nothing is in objects/ before the commit")
        try batch.commit(HistoryRecord(.receive, detail: "{}"))
        let records = try vault.records().records
        #expect(records.map(\.metadata.name).sorted() == ["a.pdf", "b.txt", "empty"])
        for (name, bytes) in docs {
            let r = try #require(records.first { $0.metadata.name == name })
            #expect(try vault.randomAccess(r.id).read(at: 0, count: bytes.count + 1) == bytes)
        }
        let last = try #require(try vault.history().records.last?.record)
        #expect(last.operation == .receive && Set(last.documents.map(\.name)) == ["a.pdf", "b.txt", "empty"])
        #expect(FileManager.default.fileExists(atPath: dir.file("vault/intake.pending")) == false)
        #expect(try vault.audit().findings.isEmpty)
    }

    /// Batches committed together (a receiver's group commit) are one record each, in order,
    /// chained as if appended one by one, in one write of the log; a crash after linking takes
    /// out every batch of the group and nothing else.
    @Test func batchesCommittedTogetherAreARecordEachAndAllOrNothing() throws {
        let before = try vault.history().records.count
        let batches = (0..<3).map { _ in IntakeBatch(vault: vault) }
        for (n, batch) in batches.enumerated() {
            let seed = UInt64(30 + 2 * n)
            try stage(batch, [("b\(n)-1", testBytes(2000 + n, seed: seed)), ("b\(n)-2", testBytes(n, seed: seed + 1))])
        }
        let steps = try IntakeBatch.commit(
            batches.enumerated().map { ($1, HistoryRecord(.receive, detail: #"{"n":\#($0)}"#)) })
        let history = try vault.history().records.map(\.record)
        #expect(history.count == before + 3)
        for (n, record) in history.suffix(3).enumerated() {
            #expect(record.operation == .receive && record.detail == #"{"n":\#(n)}"#)
            #expect(record.documents.map(\.name) == ["b\(n)-1", "b\(n)-2"])
        }
        #expect(steps.map(\.after.count) == [before + 1, before + 2, before + 3])
        #expect(steps[1].before == steps[0].after && steps[2].before == steps[1].after)
        #expect(steps[2].after == vault.storedHead())
        #expect(try vault.audit().findings.isEmpty)

        let group = (0..<2).map { _ in IntakeBatch(vault: vault) }
        try stage(group[0], [("lost-a", testBytes(500, seed: 50))])
        try stage(group[1], [("lost-b", testBytes(600, seed: 51))])
        #expect(throws: IntakeBatch.Interrupted.self) {
            try IntakeBatch.commit(group.map { ($0, HistoryRecord(.receive, detail: "{}")) }, interrupt: .afterLinking)
        }
        #expect(try objects().count == 8, "the crash left both batches' objects linked")
        let reopened = try vault.store.unlock(password: TestKeys.password())
        #expect(try reopened.records().records.count == 6)
        #expect(try objects().count == 6)
        #expect(try reopened.history().records.count == before + 3)
        #expect(try reopened.audit().findings.isEmpty)
    }

    @Test func aDiscardedBatchLeavesNothing() throws {
        let batch = IntakeBatch(vault: vault)
        try stage(batch, [("a", testBytes(5000, seed: 3)), ("b", testBytes(7, seed: 4))])
        batch.discard()
        #expect(try objects().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("vault/staging")).isEmpty)
        #expect(try vault.records().records.isEmpty)
    }

    @Test func aCommitInterruptedAfterLinkingIsTakenOutNotAdopted() throws {
        let kept = IntakeBatch(vault: vault)
        try stage(kept, [("kept", testBytes(100, seed: 5))])
        try kept.commit(HistoryRecord(.receive, detail: "{}"))
        let batch = IntakeBatch(vault: vault)
        try stage(batch, [("one", testBytes(4000, seed: 6)), ("two", testBytes(9000, seed: 7))])
        #expect(throws: IntakeBatch.Interrupted.self) {
            try batch.commit(HistoryRecord(.receive, detail: "{}"), interrupt: .afterLinking)
        }
        #expect(try objects().count == 3, "the crash left the two objects linked")
        #expect(FileManager.default.fileExists(atPath: dir.file("vault/intake.pending")))

        // The next process: any command that opens the index takes the batch out.
        let reopened = try vault.store.unlock(password: TestKeys.password())
        #expect(try reopened.records().records.map(\.metadata.name) == ["kept"])
        #expect(try objects().count == 1)
        #expect(FileManager.default.fileExists(atPath: dir.file("vault/intake.pending")) == false)
        // A later change adopts nothing: the history has no `adopt` record.
        _ = try reopened.add(from: BytesSource(testBytes(50, seed: 8)), name: "later")
        let ops = try reopened.history().records.map(\.record.operation)
        #expect(!ops.contains(.adopt), "\(ops)")
        #expect(try reopened.audit().findings.isEmpty)
    }

    /// The next batch's own commit, before any other command (a receiver restarted after the
    /// crash): the interrupted batch is taken out first, not hidden by the new intake.pending
    /// and then adopted (found in review).
    @Test func theNextBatchTakesAnInterruptedOneOutBeforeItsOwnCommit() throws {
        let first = IntakeBatch(vault: vault)
        try stage(first, [("lost-1", testBytes(3000, seed: 11)), ("lost-2", testBytes(4000, seed: 12))])
        #expect(throws: IntakeBatch.Interrupted.self) {
            try first.commit(HistoryRecord(.receive, detail: "{}"), interrupt: .afterLinking)
        }
        let restarted = try vault.store.unlock(password: TestKeys.password())
        let next = IntakeBatch(vault: restarted)
        try stage(next, [("next", testBytes(5000, seed: 13))])
        try next.commit(HistoryRecord(.receive, detail: "{}"))
        #expect(try restarted.records().records.map(\.metadata.name) == ["next"])
        #expect(try objects().count == 1)
        #expect(!(try restarted.history().records.map(\.record.operation)).contains(.adopt))
        #expect(try restarted.audit().findings.isEmpty)
    }

    /// Suspected by a hostile review, not reproduced, and kept as a test: an `intake.pending`
    /// saved from an interrupted commit and put back later (by someone who can write to the
    /// folder) is taken out by the next commit; it names only its own batch's ids (gone, or named
    /// by the history), and the sweep of `staging/` leaves this process's files and any file a
    /// writer holds, so a batch staged meanwhile still commits whole.
    @Test func aPendingFilePutBackLaterTakesNothingFromOtherBatches() throws {
        let first = IntakeBatch(vault: vault)
        try stage(first, [("lost", testBytes(3000, seed: 21))])
        #expect(throws: IntakeBatch.Interrupted.self) {
            try first.commit(HistoryRecord(.receive, detail: "{}"), interrupt: .afterLinking)
        }
        let saved = try Data(contentsOf: URL(fileURLWithPath: dir.file("vault/intake.pending")))
        let restarted = try vault.store.unlock(password: TestKeys.password())
        try restarted.recoverInterruptedIntake()
        let staged = IntakeBatch(vault: restarted)
        try stage(staged, [("staged-1", testBytes(7000, seed: 22)), ("staged-2", testBytes(10, seed: 23))])
        try saved.write(to: URL(fileURLWithPath: dir.file("vault/intake.pending")))
        let next = IntakeBatch(vault: restarted)
        try stage(next, [("next", testBytes(5000, seed: 24))])
        try next.commit(HistoryRecord(.receive, detail: "{}"))
        try staged.commit(HistoryRecord(.receive, detail: "{}"))
        #expect(try restarted.records().records.map(\.metadata.name).sorted() == ["next", "staged-1", "staged-2"])
        #expect(try restarted.audit().findings.isEmpty)
    }

    @Test func anAuditReportsAPendingIntakeThatDoesNotOpen() throws {
        try Data("not sealed".utf8).write(to: URL(fileURLWithPath: dir.file("vault/intake.pending")))
        let codes = try vault.audit().findings.map(\.code)
        #expect(codes == [.pendingIntakeRefused], "\(codes)")
    }

    @Test func aForgedPendingFileIsNeverActedOn() throws {
        let kept = IntakeBatch(vault: vault)
        try stage(kept, [("kept", testBytes(100, seed: 9))])
        try kept.commit(HistoryRecord(.receive, detail: "{}"))
        let id = try #require(try vault.records().records.first?.id)
        // Someone without the password names the kept document in a pending file of their own.
        let forged = Array(#"["\#(id.hex)"]"#.utf8)
        try Data(forged).write(to: URL(fileURLWithPath: dir.file("vault/intake.pending")))
        let reopened = try vault.store.unlock(password: TestKeys.password())
        #expect(try reopened.records().records.map(\.id) == [id], "the document stays")
        #expect(try objects().count == 1)
    }
}
