import Foundation
import Testing
@testable import VaultCore

/// The policy of adding many files (``AddSession/addAll``), in process: what the error callback
/// decides, what is added, what is left out or never tried, and what the history records.
@Suite struct BulkAddTests {
    let dir = TempDir()
    let vault: Vault

    init() throws {
        vault = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
    }

    /// An input of `bytes`, or one whose opening fails (a file gone since it was listed).
    func input(_ name: String, _ bytes: [UInt8]?) -> AddInput {
        AddInput(shown: "in/" + name, name: name, size: UInt64(bytes?.count ?? 0)) {
            guard let bytes else { throw VaultError(.notFound, "in/\(name) is gone") }
            return BytesSource(bytes)
        }
    }

    func lastRecord() throws -> HistoryRecord? { try vault.history().records.last?.record }

    @Test(arguments: [
        // (inputs: nil = cannot be opened, "dup" = contents of "a"; policy; added; skipped; stopped; outcome)
        (["a", "b", "c"], "skip-duplicates", ["a", "b", "c"], [String](), String?.none, HistoryRecord.Outcome.ok),
        (["a", "dup", "c"], "skip-duplicates", ["a", "c"], ["dup"], nil, .partial),
        (["a", "gone", "c"], "skip-duplicates", ["a"], [], "gone", .partial),
        (["gone", "a", "c"], "skip-duplicates", [], [], "gone", .failed),
        (["a", "gone", "dup", "c"], "skip-all", ["a", "c"], ["gone", "dup"], nil, .partial),
        (["a", "dup", "c"], "stop-all", ["a"], [], "dup", .partial),
    ])
    func theCallbackDecidesAndTheHistorySaysHowItEnded(
        names: [String], policy: String, added: [String], skipped: [String], stopped: String?,
        outcome: HistoryRecord.Outcome
    ) throws {
        let contents = ["a": testBytes(3000, seed: 1), "b": testBytes(10, seed: 2), "c": testBytes(70_000, seed: 3)]
        let inputs = names.map { name in
            input(name, name == "dup" ? contents["a"] : name == "gone" ? nil : contents[name])
        }
        var asked: [String] = []
        var seen: [String] = []
        let session = try AddSession(vault: vault)
        let result = try session.addAll(
            inputs,
            onError: { input, error in
                asked.append(input.name)
                switch policy {
                case "skip-all": return .skip
                case "stop-all": return .stop
                default: return AddErrorAction.skippingDuplicates(error)
                }
            },
            added: { position, record in seen.append(inputs[position].name + "=" + record.metadata.name) })
        #expect(result.added.map { inputs[$0.input].name } == added)
        #expect(seen == added.map { $0 + "=" + $0 }, "each document is announced as it is committed")
        #expect(result.skipped.map { inputs[$0.input].name } == skipped)
        #expect(result.stopped.map { inputs[$0.input].name } == stopped)
        #expect(asked == skipped + (stopped.map { [$0] } ?? []), "the callback is asked once per input not added")
        let stoppedAt = stopped.flatMap { s in names.firstIndex(of: s) }
        #expect(result.notTried == stoppedAt.map { names.count - $0 - 1 } ?? 0)
        #expect(result.outcome == outcome)
        #expect(try vault.records().records.map(\.metadata.name).sorted() == added.sorted())
        if added.isEmpty {
            #expect(try lastRecord()?.operation != .add, "nothing added: no record")
        } else {
            let record = try #require(try lastRecord())
            #expect(record.operation == .add && record.outcome == outcome)
            #expect(record.documents.map(\.name) == added)
            if let stopped { #expect(record.detail == "stopped at in/\(stopped): in/\(stopped) is gone"
                || record.detail?.hasPrefix("stopped at in/\(stopped): its contents are already") == true) }
        }
        #expect(try vault.audit().findings.isEmpty)
    }

    @Test func filesLeftOutBeforeMakeTheAddPartial() throws {
        let session = try AddSession(vault: vault)
        let result = try session.addAll(
            [input("a", testBytes(10, seed: 9))], alreadyLeftOut: 1, onError: { _, _ in .stop })
        #expect(result.outcome == .partial && result.added.count == 1)
        #expect(try lastRecord()?.outcome == .partial)
    }
}
