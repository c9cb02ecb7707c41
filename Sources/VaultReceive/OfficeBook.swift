#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What an office's records (``OfficeRecord``, from either home) say it took and heard: its
/// batches in order, and for each station its totals, last batch, last history head, alerts and
/// recorded refusals. What the operator's pages, `vault receive batches` and `vault receive
/// station list` show.
package struct OfficeBook: Sendable {
    /// A batch taken.
    package struct Batch: Sendable {
        /// When it was recorded (milliseconds since 1970).
        package var timeMillis: Int64
        package var station: String
        /// How it came (`json`, `form`, `tus`).
        package var wire: String
        /// Its `Idempotency-Key`.
        package var key: String
        /// Its documents, in the receipt's order (on a store, entries from before names were kept
        /// there have an empty name and size 0).
        package var documents: [HistoryRecord.Document]
        /// The id the station gave each document (its receipt names it so), when it could be read.
        package var stationIDs: [DocumentID]?
        /// The receipt's signature (base64).
        package var signature: String
        /// Whether its documents came sealed.
        package var sealed: Bool
        /// Its record's position among the office's records (1 the first).
        package var recordPosition = 0

        /// Its payload bytes (the sum of its documents' sizes).
        package var bytes: UInt64 { documents.reduce(0) { $0 + $1.size } }
    }

    /// An alert recorded for a station: the head it sent could not follow the one it sent before.
    package struct Alert: Sendable {
        package var timeMillis: Int64
        /// `rolled-back` or `forked`.
        package var reason: String
        package var head: String
        package var knownHead: String
    }

    /// A station as the records tell of it.
    package struct Station: Sendable {
        package var name: String
        /// The last history head it sent with a batch taken.
        package var head: String?
        package var batches = 0
        package var documents = 0
        package var bytes: UInt64 = 0
        /// When its last batch was taken (milliseconds since 1970).
        package var lastBatchMillis: Int64?
        package var alerts: [Alert] = []
        /// Refusals recorded (once per code until a batch is taken), and the last one.
        package var refusalsRecorded = 0
        package var lastRefusal: (millis: Int64, code: String)?
    }

    /// A download by an operator of the browser view.
    package struct Download: Sendable {
        package var timeMillis: Int64
        package var operatorName: String
        package var address: String
        /// `document` or `archive`.
        package var via: String
        /// How many documents it took.
        package var documents: Int
    }

    /// What an operator is to see: a station's alert (its history rolled back or forked), a
    /// removed station's token used, or a refusal recorded; open until acknowledged.
    package struct Notice: Sendable {
        /// Its record's position among the office's records (1 the first): its number.
        package var number: Int
        package var timeMillis: Int64
        package var station: String
        /// `rolled-back`, `forked`, `removed-token-used` or `refused`.
        package var kind: String
        /// What happened, in a sentence.
        package var detail: String
        /// Who acknowledged it, and when.
        package var acknowledgedBy: String?
        package var acknowledged: Int64?
    }

    /// Every notice, oldest first.
    package private(set) var notices: [Notice] = []
    /// Records applied so far: the position of the next is one more.
    package private(set) var position = 0
    /// The position of the last record that may have changed a document's tags or presence
    /// other than by a batch taken (an `add`, `tag`, `remove`, `accept`, …): what a projection of
    /// the documents' tags cannot follow from the batches alone.
    package private(set) var lastOtherChange = 0

    /// The notices not acknowledged.
    package var openNotices: [Notice] { notices.filter { $0.acknowledged == nil } }

    /// The batches, oldest first.
    package private(set) var batches: [Batch] = []
    /// The downloads of each document, oldest first.
    package private(set) var downloads: [DocumentID: [Download]] = [:]
    /// Every download recorded.
    package private(set) var downloadCount = 0
    /// Removed stations whose token was used since (once each until added again): name and time.
    package private(set) var removedTokensUsed: [(name: String, millis: Int64)] = []
    /// The stations there are now, by name.
    package private(set) var stations: [String: Station] = [:]
    private var holding: [DocumentID: Int] = [:]

    /// What `records` say, in order.
    package init(_ records: [OfficeRecord]) { apply(records) }

    /// Adds what `records`, written after those read so far, say.
    package mutating func apply(_ records: [OfficeRecord]) {
        struct Answer: Decodable { var signature: String? }
        let decoder = JSONDecoder()
        for record in records {
            position += 1
            if ![.receive, .station, .download, .operatorAccount, .receiver].contains(record.operation) {
                lastOtherChange = position
            }
            switch record.operation {
            case .receive:
                guard let batch = record.payload(ReceivedBatch.self) else { continue }
                let signature = (try? decoder.decode(Answer.self, from: Data(batch.answer.utf8)))?.signature ?? ""
                // The receipt names each document by the station's id, in the record's order.
                let stationIDs = (try? Receipt.answer(Array(batch.answer.utf8)).receipt.documents.map(\.id))
                    .flatMap { $0.count == record.documents.count ? $0 : nil }
                for d in record.documents { holding[d.id] = batches.count }
                let taken = Batch(
                    timeMillis: record.timeMillis, station: batch.station, wire: batch.wire, key: batch.batch,
                    documents: record.documents, stationIDs: stationIDs, signature: signature,
                    sealed: batch.sealed == true, recordPosition: position)
                batches.append(taken)
                guard var s = stations[batch.station] else { continue }
                s.batches += 1
                s.documents += record.documents.count
                s.bytes += taken.bytes
                s.lastBatchMillis = max(s.lastBatchMillis ?? 0, record.timeMillis)
                if let head = batch.head { s.head = head }
                stations[batch.station] = s
            case .download:
                guard let d = record.payload(DownloadRecord.self) else { continue }
                downloadCount += 1
                let download = Download(
                    timeMillis: record.timeMillis, operatorName: d.operatorName, address: d.address, via: d.via,
                    documents: record.documents.count)
                for doc in record.documents { downloads[doc.id, default: []].append(download) }
            case .station:
                guard let change = record.payload(StationChange.self) else { continue }
                note(change, at: record.timeMillis)
                switch change.action {
                case .alert where change.reason == Receiver.removedTokenUsed:
                    // The token of a station removed before (the name may have been added again since).
                    removedTokensUsed.append((change.name, record.timeMillis))
                case .alert:
                    stations[change.name]?.alerts.append(
                        Alert(
                            timeMillis: record.timeMillis, reason: change.reason ?? "", head: change.head ?? "",
                            knownHead: change.knownHead ?? ""))
                case .refused:
                    guard stations[change.name] != nil, let code = change.reason else { continue }
                    stations[change.name]?.refusalsRecorded += 1
                    stations[change.name]?.lastRefusal = (record.timeMillis, code)
                case .add:
                    // A station added again under a removed one's name starts afresh.
                    stations[change.name] = Station(name: change.name)
                    removedTokensUsed.removeAll { $0.name == change.name }
                case .remove:
                    stations[change.name] = nil
                case .acknowledge:
                    continue
                }
            default: continue
            }
        }
    }

    /// Notes an alert or a refusal as a notice, or an acknowledgement of one.
    private mutating func note(_ change: StationChange, at millis: Int64) {
        let detail: String
        switch change.action {
        case .alert where change.reason == Receiver.removedTokenUsed:
            detail = "the token of removed station \(change.name) was used; it was refused"
        case .alert:
            detail =
                "it sent history head \(change.head ?? "?") where \(change.knownHead ?? "?") was known "
                + "(\(change.reason ?? "?"))"
        case .refused:
            detail = "a request of it was refused: \(change.reason ?? "?")"
        case .acknowledge:
            guard let n = change.reason.flatMap(Int.init),
                let i = notices.firstIndex(where: { $0.number == n && $0.acknowledged == nil })
            else { return }
            (notices[i].acknowledgedBy, notices[i].acknowledged) = (change.by ?? "", millis)
            return
        case .add, .remove:
            return
        }
        let kind = change.action == .refused ? "refused" : change.reason ?? "alert"
        notices.append(
            Notice(number: position, timeMillis: millis, station: change.name, kind: kind, detail: detail))
    }

    /// The documents taken whose station gave them an id starting with `prefix` (lower-case
    /// hex), with the station's name and full id, as the batches' receipts name them: how an
    /// office finds what a station reported. (The office keeps ids of its own: an id names an
    /// envelope, here and on a store, so a station must not choose which one its batch writes or
    /// a failed batch deletes.)
    package func received(
        stationIDPrefix prefix: String
    ) -> [(id: DocumentID, station: String, stationID: DocumentID)] {
        batches.flatMap { b in
            zip(b.documents, b.stationIDs ?? []).filter { $0.1.hex.hasPrefix(prefix) }
                .map { ($0.0.id, b.station, $0.1) }
        }
    }

    /// The batch that brought document `id`.
    package func batch(holding id: DocumentID) -> Batch? { holding[id].map { batches[$0] } }

    /// A document taken, with the batch that brought it.
    package struct Received: Sendable {
        package var document: HistoryRecord.Document
        /// Its batch's position in ``batches``.
        package var batch: Int
        /// Its place in the batch's receipt.
        package var index = 0
        /// The id its station gave it, when the receipt could be read.
        package var stationID: DocumentID?
    }

    /// `found` (as ``received(matching:)`` gives it) oldest batch first, each batch's documents
    /// in its receipt's order: the order `list`, `get` and an archive write them in.
    package static func oldestFirst(_ found: [Received]) -> [Received] {
        found.sorted { ($0.batch, $0.index) < ($1.batch, $1.index) }
    }

    /// Which documents taken a query keeps: every condition given holds.
    package struct Filter: Sendable {
        /// Taken from this station.
        package var station: String?
        /// Taken at or after this time (milliseconds since 1970).
        package var sinceMillis: Int64?
        /// Taken before this time.
        package var beforeMillis: Int64?
        /// Part of the name, folders included, in any case.
        package var text: String?
        /// Came sealed (true) or not (false).
        package var sealed: Bool?
        /// Among these (e.g. the documents with a tag, from the index).
        package var among: Set<DocumentID>?

        package init(
            station: String? = nil, sinceMillis: Int64? = nil, beforeMillis: Int64? = nil, text: String? = nil,
            sealed: Bool? = nil, among: Set<DocumentID>? = nil
        ) {
            (self.station, self.sinceMillis, self.beforeMillis) = (station, sinceMillis, beforeMillis)
            (self.text, self.sealed, self.among) = (text, sealed, among)
        }

        /// Whether it keeps anything but every document.
        package var isEverything: Bool {
            station == nil && sinceMillis == nil && beforeMillis == nil && (text ?? "").isEmpty && sealed == nil
                && among == nil
        }
    }

    /// The documents taken that `filter` keeps, newest batch first and in its receipt's order
    /// within a batch: what the documents page and an office's listing by station show; a
    /// memory scan of what the records hold (no index row is read).
    package func received(matching filter: Filter) -> [Received] {
        let needle = filter.text.map { $0.lowercased() }.flatMap { $0.isEmpty ? nil : $0 }
        var out: [Received] = []
        for (position, b) in batches.enumerated().reversed() {
            if let station = filter.station, b.station != station { continue }
            if let since = filter.sinceMillis, b.timeMillis < since { continue }
            if let before = filter.beforeMillis, b.timeMillis >= before { continue }
            if let sealed = filter.sealed, b.sealed != sealed { continue }
            for (i, d) in b.documents.enumerated() {
                if let among = filter.among, !among.contains(d.id) { continue }
                if let needle, !d.name.lowercased().contains(needle) { continue }
                out.append(Received(document: d, batch: position, index: i, stationID: b.stationIDs?[i]))
            }
        }
        return out
    }
}
