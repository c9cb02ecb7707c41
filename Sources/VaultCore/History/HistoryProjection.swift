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
}

extension HistoryRecord {
    /// Whether ``apply(at:to:)`` reads the documents of a record of `operation` (a scan that
    /// keeps no records leaves them out of the others: a send names every document it sent).
    static func projectsDocuments(_ operation: Operation) -> Bool {
        switch operation {
        case .add, .import, .adopt, .pull, .begin, .accept, .remove, .upload: true
        case .`init`, .export, .passwd, .push, .clone, .upgrade: false
        }
    }

    /// What this record, at `position` in the log, does to `projection`.
    func apply(at position: Int, to projection: inout some HistoryProjection) throws {
        switch operation {
        case .add, .import, .adopt, .pull:
            try projection.present(documents, at: position)
        case .begin, .accept:
            try projection.reset(to: documents, at: position)
        case .remove:
            try projection.removed(documents, at: position)
        case .upload:
            for destination in Destination.confirmed(by: self) {
                try projection.delivered(documents, Delivery(destination: destination, record: position, timeMillis: timeMillis,
                                                             detail: detail))
            }
        case .`init`, .export, .passwd, .push, .clone, .upgrade:
            break
        }
    }
}

/// The projection a scan of the whole history keeps in memory: what it says about documents
/// and deliveries, instead of the records (an audit of 100,000 records holds this, not them).
struct DocumentProjection: HistoryProjection {
    /// The documents present, with the position of the record that added them.
    var present: [String: (HistoryRecord.Document, Int)] = [:]
    /// The documents removed, with the position of the record that removed them.
    var removed: [String: Int] = [:]
    /// The document of each removal (the last record that removed it).
    var removedDocuments: [String: HistoryRecord.Document] = [:]
    /// The first confirmed delivery of each document, by destination.
    var deliveries: [String: [String: Delivery]] = [:]

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
