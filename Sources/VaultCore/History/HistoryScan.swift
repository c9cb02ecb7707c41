#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What reading the history found: the records in file order (those that authenticate in
/// their place), the log's head as it stands, and what is wrong with the chain.
package struct HistoryScan: Sendable {
    /// One whole record of the file.
    package struct Entry: Sendable {
        /// Its position in the file, from 1.
        package let position: Int
        /// The record, when it authenticates at this position after its predecessor.
        package let record: HistoryRecord?
        /// Its authentication tag.
        package let tag: [UInt8]
        /// The key epoch it was sealed in, when it authenticates.
        package let epoch: UInt32?
    }

    /// Every whole record, in file order.
    package var entries: [Entry] = []
    /// The `download` records that authenticate: documents operators of the browser view took.
    package var downloads = 0
    /// Problems with the log as it is now.
    package var findings: [AuditFinding] = []
    /// Problems earlier writers found and sealed into their records (``HistoryRecord/anomalies``).
    package var noted: [AuditFinding] = []
    /// True when `log.vlt` exists.
    package var exists = false
    /// The head kept beside the log (`log.head`), if it could be read, and its key epoch.
    var storedHead: StoredHead?
    var headEpoch: UInt32?
    /// The second copy of the head (`log.anchor`), and its key epoch.
    var anchor: StoredHead?
    var anchorEpoch: UInt32?
    /// True when `log.head` is a sealed state file: written by a version that also writes `log.anchor`.
    var storedHeadIsSealedState = false
    /// The position of the last `accept` record, if any.
    package var acceptedAt: Int?
    /// The byte offset after the last whole record.
    var end = HistoryFormat.fileHeader.count
    /// The file's size.
    var fileSize = 0

    /// The log's head as it stands: its whole records and the last one's tag.
    package var head: HistoryHead {
        HistoryHead(count: entries.count, tag: entries.last?.tag ?? [UInt8](repeating: 0, count: HistoryFormat.tagSize))
    }

    /// The same scan with nothing to note: the `accept` record seals no anomalies of its own
    /// (it names what it settles in its detail).
    static func settled(_ scan: HistoryScan) -> HistoryScan {
        var copy = scan
        copy.findings = []
        return copy
    }

    /// The records that authenticate, in order.
    package var records: [(position: Int, record: HistoryRecord)] {
        entries.compactMap { e in e.record.map { (e.position, $0) } }
    }

    /// What the records say, kept while scanning instead of the records (``scan(keepRecords:)``
    /// with `false`); nil when the scan kept the records.
    var projection: DocumentProjection?

    /// The projection of the records that authenticate: kept by the scan, or made from its records.
    func projected() -> DocumentProjection { projection ?? DocumentProjection(records) }

    /// Replays the records: the documents the log says are in the vault (with the record that
    /// added them) and those it says were removed (with the record that removed them).
    package func documentState() -> (present: [DocumentID: (HistoryRecord.Document, Int)], removed: [DocumentID: Int]) {
        let p = projected()
        return (p.present, p.removed)
    }

    /// The first confirmed delivery of each document, by destination and id.
    package func deliveries() -> [String: [DocumentID: Delivery]] { projected().deliveries }

    /// The document each removal named, by id (the last removal of each).
    func removedDocuments() -> [DocumentID: HistoryRecord.Document] { projected().removedDocuments }
}

/// Where the next record goes: what an append needs to know about the log.
struct LogTail {
    /// True when `log.vlt` exists.
    var exists: Bool
    /// Whole records, the offset after the last, and its tag.
    var count: Int
    var end: Int
    var tag: [UInt8]
    /// The file's size (bytes past `end` are a torn append, cut off by the next one).
    var fileSize: Int
    /// What is wrong with the log, sealed into the next record's anomalies.
    var findings: [AuditFinding]

    /// The tail of a whole-log scan.
    init(_ scan: HistoryScan) {
        self.init(
            exists: scan.exists, count: scan.entries.count, end: scan.end,
            tag: scan.entries.last?.tag ?? HistoryLog.zeroTag,
            fileSize: scan.fileSize, findings: scan.findings)
    }

    init(exists: Bool, count: Int, end: Int, tag: [UInt8], fileSize: Int, findings: [AuditFinding]) {
        (self.exists, self.count, self.end, self.tag, self.fileSize, self.findings) = (
            exists, count, end, tag, fileSize, findings
        )
    }
}

/// `log.head` and `log.anchor`: sealed, so they cannot be forged without the password.
struct StoredHead: Codable, Equatable {
    var count: Int
    /// Offset after the last record it covers.
    var end: Int
    var tag: String
}
