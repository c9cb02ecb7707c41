#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One record of a vault's history (`log.vlt`): what one command did to the vault or sent out.
///
/// Records are sealed under a subkey of the vault key and chained (docs/FORMAT.md, "History"),
/// so nobody without the password can add, change, reorder or remove one unnoticed.
package struct HistoryRecord: Codable, Sendable, Equatable {
    /// What the command was.
    package enum Operation: String, Codable, Sendable, CaseIterable {
        case `init`, add, `import`, remove, export, upload, passwd
        /// Documents that a command committed but did not record, because it was killed or
        /// interrupted first; the next change to the vault records them.
        case adopt
        /// The first record of a log started on a vault that had none (made before the history
        /// existed, or whose log was deleted): the documents present then.
        case begin
        /// Documents fetched from a remote store (authenticated before they were taken).
        case pull
        /// Documents and tombstones sent to a remote store.
        case push
        /// The first record of a replica made by cloning a remote vault (its source in `destinations`).
        case clone
        /// `vault.json` rewritten in a newer format (same keys).
        case upgrade
        /// A password holder accepted what the log lost or what was wrong with it (an audit
        /// that accepts the loss): the documents present then, like `begin`; the findings noted
        /// before it are settled.
        case accept
        /// A destination added, changed (required or not) or removed (`vault/3`): its entry as
        /// JSON in `detail` (``DestinationChange``). The destination list is the projection of
        /// these records: nothing outside the history says which destinations exist.
        case destination
        /// The tags of the documents named changed: those added and removed as JSON in `detail`
        /// (``TagChange``). A document's tags are its envelope's with every change applied.
        case tag
        /// A batch a receiver (`vault receive`) took from a station: its documents, committed
        /// together; `detail` is JSON (`ReceivedBatch`, VaultReceive): the station, the batch key, the
        /// station's history head and the signed receipt.
        case receive
        /// A receiver's station added or removed: JSON in `detail` (`StationChange`, VaultReceive).
        case station
        /// A receiver's signing key made: its public key in `detail` (`ReceiverKeyRecord`, VaultReceive).
        case receiver
        /// An operator of a receiver's browser view added or removed: JSON in `detail`
        /// (`OperatorChange`, VaultReceive), with the password's Argon2id hash for an `add`.
        case operatorAccount = "operator"
        /// Documents an operator of a receiver's browser view downloaded (one, or an archive):
        /// who, from which address and how, as JSON in `detail` (`DownloadRecord`, VaultReceive).
        /// Recorded before the first byte is sent; a download that cannot be recorded is refused.
        case download
    }

    /// How the command ended.
    package enum Outcome: String, Codable, Sendable {
        /// Everything asked was done.
        case ok
        /// Some documents were done and some skipped (exit code 2).
        case partial
        /// The command failed after changing the vault or sending something out.
        case failed
    }

    /// A document the record names.
    package struct Document: Codable, Sendable, Equatable {
        /// The document id (32 hex digits in the record).
        package var id: DocumentID
        /// Its name.
        package var name: String
        /// SHA-256 of its plaintext (hex).
        package var sha256: String
        /// Plaintext size in bytes.
        package var size: UInt64

        /// A document by its parts.
        package init(id: DocumentID, name: String, sha256: String, size: UInt64) {
            self.id = id
            self.name = name
            self.sha256 = sha256
            self.size = size
        }

        /// The document of `record`.
        package init(_ record: DocumentRecord) {
            id = record.id
            name = record.metadata.name
            sha256 = Hex.encode(record.metadata.sha256)
            size = record.metadata.size
        }
    }

    /// A problem the writer of this record found in the log before appending it (the log cut
    /// short, its head missing, ...). It is sealed into the chain, so an audit keeps
    /// reporting it: a repair cannot hide that the log was damaged.
    package struct Anomaly: Codable, Sendable, Equatable {
        /// A finding code (`log-truncated`, `log-head-missing`, ...).
        package var code: String
        /// What was found.
        package var message: String

        /// An anomaly by its parts.
        package init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// What the command was.
    package var operation: Operation
    /// When the record was written, in milliseconds since 1970.
    package var timeMillis: Int64
    /// The host name of the machine that wrote it.
    package var host: String
    /// How the command ended.
    package var outcome: Outcome
    /// The documents added, removed, adopted or sent (with `begin`: every document present).
    package var documents: [Document]
    /// Where documents went: batch files (`file://` paths) or upload targets (scheme, host and
    /// path only: never credentials, user info or query).
    package var destinations: [String]
    /// A short note (the new KDF level of a `passwd`, the error of a failed command, ...).
    package var detail: String?
    /// Problems found in the log when this record was appended.
    package var anomalies: [Anomaly]
    /// `upload` to a destination that signs receipts: the receiver's signed receipt for the
    /// batch, as it answered (`{"receipt":…,"signature":…}`, docs/FORMAT.md "Receipts").
    package var receipt: String?
    /// `upload` of a sealed batch whose receipt signs its sealed files (a receiver that kept them
    /// sealed, without the identity): each document's `<SHA-256 hex>:<size>` of its sealed pair,
    /// in the order of ``documents``, as the upload sent them and the receipt names them.
    package var sealed: [String]?

    /// A record of `operation` now, on this host.
    package init(
        _ operation: Operation, outcome: Outcome = .ok, documents: [Document] = [], destinations: [String] = [],
        detail: String? = nil, now: Date = Date()
    ) {
        self.operation = operation
        self.timeMillis = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        self.host = Platform.hostName
        self.outcome = outcome
        self.documents = documents
        self.destinations = destinations
        self.detail = detail
        self.anomalies = []
    }

    enum CodingKeys: String, CodingKey {
        case operation = "op", timeMillis = "time", host, outcome, documents, destinations, detail, anomalies, receipt
        case sealed
    }

    /// Where a destination URL may be recorded: scheme, host, port and path, nothing else.
    package static func destination(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.scheme ?? "" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? ""
    }
}

/// Where one record went: the history's head just before it was appended, the head it made,
/// and the record. What a process that appended it needs to follow the history without reading
/// it again (a receiver applying its own batches).
package struct HistoryStep: Sendable {
    /// The head the record follows.
    package let before: HistoryHead
    /// The head after it.
    package let after: HistoryHead
    /// The record as appended.
    package let record: HistoryRecord
}

/// The head of a vault's history: how many records it holds and the tag of the last one.
/// Printed as `<count>-<32 hex digits>`; an operator who keeps it elsewhere can later detect a
/// vault rolled back to an older copy (an audit given the expected head).
package struct HistoryHead: Equatable, Sendable, CustomStringConvertible, Codable {
    /// Number of records.
    package var count: Int
    /// The last record's authentication tag (16 bytes; all zeros for an empty log).
    package var tag: [UInt8]

    /// A head.
    package init(count: Int, tag: [UInt8]) {
        self.count = count
        self.tag = tag
    }

    /// Parses `<count>-<32 hex digits>`.
    package init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2,
              let count = Int(parts[0]),
              count >= 0,
              let tag = Hex.decode(String(parts[1])),
              tag.count == HistoryFormat.tagSize else { return nil }
        self.init(count: count, tag: tag)
    }

    package var description: String { "\(count)-\(Hex.encode(tag))" }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let head = HistoryHead(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a history head"))
        }
        self = head
    }
}

/// One problem an audit (or a reading of the history) found, with a stable code for scripts.
package struct AuditFinding: Codable, Sendable, Equatable {
    /// What kind of finding this is: a stable code for scripts, written as its raw value.
    /// Extensible like ``VaultError/Code``: a code a record noted is kept as it was written.
    package struct Code: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// A document's envelope fails a check.
        package static let damagedObject = Code(rawValue: "damaged-object")
        /// The head given to compare with is not the history's.
        package static let headDiffers = Code(rawValue: "head-differs")
        /// The index disagrees with the objects or the history.
        package static let indexMismatch = Code(rawValue: "index-mismatch")
        /// `log.anchor` does not open.
        package static let logAnchorDamaged = Code(rawValue: "log-anchor-damaged")
        /// `log.anchor` is missing.
        package static let logAnchorMissing = Code(rawValue: "log-anchor-missing")
        /// An authentic record does not follow the one before it.
        package static let logChainBroken = Code(rawValue: "log-chain-broken")
        /// `log.head` does not open.
        package static let logHeadDamaged = Code(rawValue: "log-head-damaged")
        /// The record a head names is not in the log: the log was replaced.
        package static let logHeadMismatch = Code(rawValue: "log-head-mismatch")
        /// `log.head` is missing.
        package static let logHeadMissing = Code(rawValue: "log-head-missing")
        /// A head is sealed under a retired key.
        package static let logHeadSuperseded = Code(rawValue: "log-head-superseded")
        /// `log.vlt` is not a history log, or holds bytes that are not a record.
        package static let logMalformed = Code(rawValue: "log-malformed")
        /// The history is missing.
        package static let logMissing = Code(rawValue: "log-missing")
        /// A record fails authentication.
        package static let logRecordDamaged = Code(rawValue: "log-record-damaged")
        /// A record is authentic at another position.
        package static let logRecordMoved = Code(rawValue: "log-record-moved")
        /// A record is sealed under a key a password change retired.
        package static let logRecordSuperseded = Code(rawValue: "log-record-superseded")
        /// The record a password change saw last is not there: the history was replaced by
        /// another copy of itself.
        package static let logForked = Code(rawValue: "log-forked")
        /// `log.vlt` ends inside a record.
        package static let logTorn = Code(rawValue: "log-torn")
        /// Records were cut off the end of the log.
        package static let logTruncated = Code(rawValue: "log-truncated")
        /// A document the index lists has no object.
        package static let missingObject = Code(rawValue: "missing-object")
        /// A document's object is not the one the history recorded.
        package static let objectDiffers = Code(rawValue: "object-differs")
        /// A pending removal does not open.
        package static let pendingRemovalRefused = Code(rawValue: "pending-removal-refused")
        /// A pending intake (`intake.pending`) does not open.
        package static let pendingIntakeRefused = Code(rawValue: "pending-intake-refused")
        /// A removed document's object is back.
        package static let resurrectedObject = Code(rawValue: "resurrected-object")
        /// The log holds fewer records than the expected head.
        package static let rolledBack = Code(rawValue: "rolled-back")
        /// An object no history record added.
        package static let unloggedObject = Code(rawValue: "unlogged-object")
        /// A document was removed before the destination a delivery policy requires confirmed it.
        package static let removedUndelivered = Code(rawValue: "removed-undelivered")
        /// A document was removed without a receipt signed by a destination that must sign for it.
        package static let removedUnsigned = Code(rawValue: "removed-unsigned")
    }

    /// What kind of finding this is.
    package var code: Code
    /// One line saying what was found.
    package var message: String
    /// The document concerned, if any (32 hex digits).
    package var document: String?
    /// The log record concerned, if any (its position, from 1).
    package var record: Int?

    /// A finding.
    package init(_ code: Code, _ message: String, document: String? = nil, record: Int? = nil) {
        self.code = code
        self.message = message
        self.document = document
        self.record = record
    }
}

extension HistoryRecord {
    /// The record as JSON, keys sorted, as `JSONEncoder` with sorted keys writes it but written
    /// by hand: `JSONEncoder` builds a tree of the whole value first, which cost 63 MB for the
    /// record of an export of 100,000 documents (docs/PERFORMANCE.md, "scale").
    package func json() -> [UInt8] {
        var o = [UInt8]()
        json(into: &o)
        return o
    }

    /// Appends ``json()`` to `o` (a record of a send names every document: the log's append
    /// builds its frame around it in one buffer).
    func json(into o: inout [UInt8]) {
        o.reserveCapacity(o.count + 256 + documents.count * 170)
        func key(_ k: StaticString, first: Bool = false) {
            if !first { o.append(0x2C) }
            o.append(0x22)
            o.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
            o.append(contentsOf: [0x22, 0x3A])
        }
        func string(_ s: String) { o.append(contentsOf: JSONString.quoted(s)) }
        func number<T: BinaryInteger>(_ n: T) { o.append(contentsOf: String(n).utf8) }
        o.append(0x7B)
        key("anomalies", first: true)
        o.append(0x5B)
        for (i, a) in anomalies.enumerated() {
            if i > 0 { o.append(0x2C) }
            o.append(0x7B); key("code", first: true); string(a.code); key("message"); string(a.message); o.append(0x7D)
        }
        o.append(0x5D)
        key("destinations")
        o.append(0x5B)
        for (i, d) in destinations.enumerated() {
            if i > 0 { o.append(0x2C) }
            string(d)
        }
        o.append(0x5D)
        if let detail { key("detail"); string(detail) }
        key("documents")
        o.append(0x5B)
        for (i, d) in documents.enumerated() {
            if i > 0 { o.append(0x2C) }
            o.append(0x7B)
            key("id", first: true); string(d.id.hex)
            key("name"); string(d.name)
            key("sha256"); string(d.sha256)
            key("size"); number(d.size)
            o.append(0x7D)
        }
        o.append(0x5D)
        key("host"); string(host)
        key("op"); string(operation.rawValue)
        key("outcome"); string(outcome.rawValue)
        if let receipt { key("receipt"); string(receipt) }
        if let sealed {
            key("sealed")
            o.append(0x5B)
            for (i, p) in sealed.enumerated() {
                if i > 0 { o.append(0x2C) }
                string(p)
            }
            o.append(0x5D)
        }
        key("time"); number(timeMillis)
        o.append(0x7D)
    }
}
