import Foundation
import Testing
@testable import VaultCore

/// The delivery ledger through VaultCore alone: deliveries recorded per document as history
/// records, looked up by what the user means, migrated from earlier versions, and derived
/// again from the history when the index's rows are tampered with.
@Suite struct DeliveryLedgerTests {
    static let office = "https://office.example/in"

    @Test(arguments: [
        ("HTTPS://Office.Example:443/in", "https://office.example/in"),
        ("https://user:secret@office.example/in?token=abc#top", "https://office.example/in?token=abc"),
        ("https://office.example/in?tenant=a", "https://office.example/in?tenant=a"),
        ("http://127.0.0.1:80", "http://127.0.0.1/"),
        ("http://127.0.0.1:8080/batches/", "http://127.0.0.1:8080/batches/"),
        ("s3://archive//station-3/", "s3://archive/station-3"),
        ("s3://archive", "s3://archive")
    ])
    func aDestinationIsKnownByWhatTheUserMeans(url: String, identity: String) {
        #expect(Destination.identity(of: url) == identity)
    }

    /// An S3 destination is its bucket and prefix through one endpoint and region; a secret-looking
    /// query value is not shown.
    @Test func anS3DestinationIncludesWhereItIsReachedAndSecretsAreNotShown() {
        let test = S3Place(endpoint: "http://127.0.0.1:8333/", region: "us-east-1")
        let production = S3Place(endpoint: "https://s3.us-east-1.amazonaws.com", region: "us-east-1")
        let a = DestinationIdentity(url: "s3://archive/in", s3: test),
            b = DestinationIdentity(url: "s3://archive/in", s3: production)
        #expect(
            a?.value == "s3://archive/in (http://127.0.0.1:8333, us-east-1)" && a != b,
            "\(String(describing: a)) \(String(describing: b))")
        #expect(
            DestinationIdentity(recorded: "s3://archive/in").value == "s3://archive/in",
            "a record of an earlier version matches only itself")
        #expect(
            DestinationIdentity(url: "https://o.example/in?tenant=a&access_token=s3cr3t&Signature=x")?.description
                == "https://o.example/in?tenant=a&access_token=…&Signature=…")
    }

    @Test func anythingButHTTPAndS3IsNoDestination() {
        for url in ["ftp://host/x", "file:///tmp/x", "office", "https://", ""] {
            #expect(Destination.identity(of: url) == nil, "\(url)")
        }
    }

    @Test func eachConfirmedBatchIsOneHistoryRecordAndOneLookupPerDocument() throws {
        let f = try ExportTests.Fixture(sizes: [10, 20, 30])
        let (a, b, c) = (f.records[0], f.records[1], f.records[2])
        try f.vault.recordDelivery(
            [a, b], to: "HTTPS://Office.example:443/in", detail: "run r batch 1/1: 200",
            now: Date(timeIntervalSince1970: 1_800_000_000))
        let d = try #require(try f.vault.delivery(of: a.id, to: Self.office))
        #expect(d.destination == Self.office && d.timeMillis == 1_800_000_000_000 && d.detail == "run r batch 1/1: 200")
        #expect(try f.vault.delivery(of: c.id, to: Self.office) == nil)
        #expect(try f.vault.delivery(of: a.id, to: "https://elsewhere.example/in") == nil)
        #expect(try f.vault.undelivered(f.records, to: Self.office).map(\.id) == [c.id])
        // The history says so: an upload record naming the batch and the destination's identity.
        let last = try #require(try f.vault.history().entries.last?.record)
        #expect(
            last.operation == .upload && last.documents.map(\.id) == [a.id, b.id]
                && last.destinations == [Self.office])
        // A second confirmation keeps the first one's time.
        try f.vault.recordDelivery(
            [a], to: Self.office, detail: "run s batch 1/1: 200", now: Date(timeIntervalSince1970: 1_900_000_000))
        #expect(try f.vault.delivery(of: a.id, to: Self.office)?.timeMillis == 1_800_000_000_000)
        #expect(try f.vault.deliveries(of: a.id).count == 1)
        #expect(try f.vault.ledger()[Self.office]?.count == 2)
        #expect(throws: VaultError.self) { try f.vault.recordDelivery([a], to: "ftp://x/y", detail: "") }
    }

    @Test func runRecordsOfEarlierVersionsCountAndFailedOnesDoNot() throws {
        let f = try ExportTests.Fixture(sizes: [10, 20])
        let (a, b) = (f.records[0], f.records[1])
        // One record per run, the target as scheme, host, port and path: as versions before the ledger wrote it.
        try f.vault.appendToHistory(
            HistoryRecord(
                .upload, documents: [HistoryRecord.Document(a)], destinations: ["http://127.0.0.1:8080/batches"],
                detail: "run 1c0e"))
        try f.vault.appendToHistory(
            HistoryRecord(
                .upload, outcome: .failed, documents: [HistoryRecord.Document(b)],
                destinations: ["http://127.0.0.1:8080/batches"]))
        #expect(try f.vault.delivery(of: a.id, to: "http://127.0.0.1:8080/batches") != nil)
        #expect(try f.vault.delivery(of: b.id, to: "http://127.0.0.1:8080/batches") == nil)
    }

    /// An index of an earlier version (2: no ledger) is made anew as version 4, with the ledger
    /// derived from the history: nothing of the old file is kept.
    @Test func anEarlierIndexIsMadeAnewWithTheLedgerFromTheHistory() throws {
        let f = try ExportTests.Fixture(sizes: [10, 20])
        try f.vault.recordDelivery([f.records[0]], to: Self.office, detail: "run r batch 1/1: 200")
        // index.db as version 2 left it: no ledger table.
        try f.vault.withIndex { index in try index.db.execute("DROP TABLE deliveries; PRAGMA user_version = 2") }
        let reopened = try f.vault.store.unlock(password: TestKeys.password())
        #expect(try reopened.delivery(of: f.records[0].id, to: Self.office) != nil)
        #expect(try reopened.delivery(of: f.records[1].id, to: Self.office) == nil)
        #expect(try reopened.withIndex { try $0.db.statement("PRAGMA user_version").first { $0.int64(0) } } == 4)
        #expect(try reopened.records().records.count == 2)
    }

    @Test func ledgerRowsMovedOrForgedWithoutThePasswordAreDerivedAgainFromTheHistory() throws {
        let f = try ExportTests.Fixture(sizes: [10, 20, 30])
        let (a, b, c) = (f.records[0], f.records[1], f.records[2])
        try f.vault.recordDelivery([a, b], to: Self.office, detail: "run r batch 1/1: 200")
        // c "delivered" by a copy of a's row under c's id, as an attacker with the folder could write it.
        try f.vault.withIndex { index in
            try index.db.execute(
                """
                    INSERT INTO deliveries (destination, id, record) SELECT destination, x'\(c.id.hex)', record FROM \
                    deliveries WHERE id = x'\(a.id.hex)'
                    """
            )
        }
        #expect(
            try f.vault.undelivered(f.records, to: Self.office).map(\.id) == [c.id], "the forged row is not believed")
        #expect(try f.vault.ledger()[Self.office].map { Set($0.keys) } == [a.id, b.id])
        // A row deleted: the document looks undelivered until the ledger is derived again; never the reverse.
        try f.vault.withIndex { index in try index.db.execute("DELETE FROM deliveries WHERE id = x'\(b.id.hex)'") }
        #expect(try f.vault.delivery(of: b.id, to: Self.office) == nil)
    }

    @Test func anAuditWithADeliveryPolicyNamesWhatWasRemovedBeforeItsDelivery() throws {
        let f = try ExportTests.Fixture(sizes: [10, 20, 30])
        let (a, b, c) = (f.records[0], f.records[1], f.records[2])
        try f.vault.recordDelivery([a], to: Self.office, detail: "run r batch 1/1: 200")
        try f.vault.removeDocuments([a.id, b.id])
        try f.vault.recordDelivery([c], to: Self.office, detail: "run s batch 1/1: 200")
        #expect(try f.vault.audit().findings.isEmpty)
        let findings = try f.vault.audit(requireDelivered: [Self.office]).findings
        #expect(findings.map(\.code) == [.removedUndelivered] && findings.first?.document == b.id.hex, "\(findings)")
    }
}
