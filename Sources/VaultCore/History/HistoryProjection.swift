#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A view of the vault's state that the history's records build up: the documents present and
/// removed, the deliveries, the destinations. The history is the truth; a projection is what a
/// reader derives from it, and ``HistoryRecord/apply(at:to:)`` is the one place that says what
/// each record does to one — the in-memory projection of a scan and the index (``IndexProjection``)
/// both take records only through it, under the same rules (each record authenticated in its
/// place, in order, under an epoch no older than the record before).
protocol HistoryProjection {
    /// Documents the record says are in the vault (added, imported, adopted, pulled).
    mutating func present(_ documents: [HistoryRecord.Document], at position: Int) throws
    /// Every document present (`begin`, `accept`): what the record does not name is not.
    mutating func reset(to documents: [HistoryRecord.Document], at position: Int) throws
    /// Documents removed.
    mutating func removed(_ documents: [HistoryRecord.Document], at position: Int) throws
    /// Documents a destination (its identity) confirmed; the first confirmation of each counts.
    mutating func delivered(_ documents: [HistoryRecord.Document], _ delivery: Delivery) throws
    /// A destination added, changed or removed.
    mutating func destination(_ change: DestinationChange) throws
    /// The tags of documents changed.
    mutating func retagged(_ documents: [HistoryRecord.Document], _ change: TagChange) throws
}

extension HistoryRecord {
    /// Whether ``apply(at:to:)`` reads the documents of a record of `operation` (a scan that
    /// keeps no records leaves them out of the others: a send names every document it sent).
    static func projectsDocuments(_ operation: Operation) -> Bool {
        switch operation {
        case .add, .import, .adopt, .pull, .begin, .accept, .remove, .upload, .tag, .receive: true
        case .`init`, .export, .passwd, .push, .clone, .upgrade, .destination, .station, .receiver, .operatorAccount,
            .download:
            false
        }
    }

    /// What this record, at `position` in the log, does to `projection`.
    func apply(at position: Int, to projection: inout some HistoryProjection) throws {
        switch operation {
        case .add, .import, .adopt, .pull, .receive:
            try projection.present(documents, at: position)
        case .begin, .accept:
            try projection.reset(to: documents, at: position)
        case .remove:
            try projection.removed(documents, at: position)
        case .upload:
            for destination in Destination.confirmed(by: self) {
                try projection.delivered(
                    documents,
                    Delivery(
                        destination: destination, record: position, timeMillis: timeMillis,
                        detail: detail))
            }
        case .destination:
            if outcome != .failed, let change = payload(DestinationChange.self) {
                try projection.destination(change)
            }
        case .tag:
            if outcome != .failed, let change = TagChange.of(self) { try projection.retagged(documents, change) }
        case .`init`, .export, .passwd, .push, .clone, .upgrade, .station, .receiver, .operatorAccount, .download:
            break
        }
    }
}

/// What a `destination` record says: the entry as it is from now on (`set`: added or changed),
/// or the name that no longer is one (`remove`).
package struct DestinationChange: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.destination
    package enum Action: String, Codable, Sendable { case set, remove }
    package var action: Action
    package var name: String
    /// The entry, for `set`.
    package var entry: DestinationEntry?

    package init(set entry: DestinationEntry) {
        action = .set
        name = entry.name
        self.entry = entry
    }

    package init(remove name: String) {
        action = .remove
        self.name = name
        entry = nil
    }

    /// A removal names no entry; a setting names its own.
    package var isValid: Bool { action == .remove ? entry == nil : entry?.name == name }

    /// For people: what changed, the URL's secret-looking query values hidden.
    package var summary: String {
        guard action == .set,
            let entry
        else { return "\(name) removed" }
        var shown = DestinationIdentity(url: entry.url, s3: entry.s3Place)?.description ?? entry.url
        if shown.hasPrefix("s3://"), shown.hasSuffix(")"), let open = shown.ranges(of: " (").last {
            shown = shown[..<open.lowerBound] + " via " + shown[open.upperBound...].dropLast()
        }
        let sealed = (entry.recipients ?? []).map { r in r.count > 24 ? r.prefix(12) + "…" + r.suffix(8) : Substring(r)
        }
        return "\(name) → \(shown)\(entry.required ? "" : ", optional")"
            + (sealed.isEmpty ? "" : ", sealed to \(sealed.joined(separator: " "))")
    }

    /// The change a `destination` record names, if it is one.
    package static func of(_ record: HistoryRecord) -> DestinationChange? { record.payload(DestinationChange.self) }

    /// As a record's detail (sorted keys).
    package var detail: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? e.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// `list` with the change made.
    func applied(to list: DestinationList) -> DestinationList {
        var list = list
        switch action {
        case .set:
            guard let entry else { return list }
            if let i = list.destinations.firstIndex(where: { $0.name == name }) {
                list.destinations[i] = entry
            } else {
                list.destinations.append(entry)
            }
        case .remove:
            list.destinations.removeAll { $0.name == name }
        }
        return list
    }
}

/// The projection a scan of the whole history keeps in memory: what it says about documents
/// and deliveries, instead of the records (an audit of 100,000 records holds this, not them).
struct DocumentProjection: HistoryProjection {
    /// The documents present, with the position of the record that added them.
    var present: [DocumentID: (HistoryRecord.Document, Int)] = [:]
    /// The documents removed, with the position of the record that removed them.
    var removed: [DocumentID: Int] = [:]
    /// The document of each removal (the last record that removed it).
    var removedDocuments: [DocumentID: HistoryRecord.Document] = [:]
    /// The first confirmed delivery of each document, by destination.
    var deliveries: [String: [DocumentID: Delivery]] = [:]
    /// The destinations, as the records so far made them.
    var destinations = DestinationList()
    /// The tag changes made to each document so far, as one change (by id).
    var tagChanges: [DocumentID: TagChange] = [:]

    mutating func present(_ documents: [HistoryRecord.Document], at position: Int) {
        for d in documents { present[d.id] = (d, position) }
    }

    mutating func reset(to documents: [HistoryRecord.Document], at position: Int) {
        present = [:]
        self.present(documents, at: position)
    }

    mutating func removed(_ documents: [HistoryRecord.Document], at position: Int) {
        for d in documents {
            present[d.id] = nil
            removed[d.id] = position
            removedDocuments[d.id] = d
        }
    }

    mutating func delivered(_ documents: [HistoryRecord.Document], _ delivery: Delivery) {
        for d in documents where deliveries[delivery.destination]?[d.id] == nil {
            deliveries[delivery.destination, default: [:]][d.id] = delivery
        }
    }

    mutating func destination(_ change: DestinationChange) {
        destinations = change.applied(to: destinations)
    }

    mutating func retagged(_ documents: [HistoryRecord.Document], _ change: TagChange) {
        for d in documents { tagChanges[d.id] = tagChanges[d.id].map { $0.then(change) } ?? change }
    }

    /// The projection of `records` (position and record), in order.
    init(_ records: [(position: Int, record: HistoryRecord)]) {
        for (position, record) in records { apply(record, at: position) }
    }

    init() {}
}

extension DocumentProjection {
    /// Applies `record` (the projection itself never fails).
    mutating func apply(_ record: HistoryRecord, at position: Int) {
        // swiftlint:disable:next force_try
        try! record.apply(at: position, to: &self)
    }
}
