#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The typed detail of one kind of history record: the JSON a record of ``operation`` holds in
/// its `detail`, written by ``detail`` and read by ``HistoryRecord/payload(_:)`` (or, for the
/// same JSON carried elsewhere, ``init(detail:)``) and nowhere else. Records keep their bytes:
/// what is on disk is what earlier versions wrote.
package protocol HistoryPayload: Codable, Sendable {
    /// The operation whose records carry it.
    static var operation: HistoryRecord.Operation { get }
    /// Whether a value decoded from a record is one this kind allows (beyond its JSON shape).
    var isValid: Bool { get }
    /// The JSON written into a record's `detail`.
    var detail: String { get }
}

extension HistoryPayload {
    package var isValid: Bool { true }

    /// Plain `JSONEncoder` output, as records of this kind have always been written.
    package var detail: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }

    /// The JSON `detail` (a record's, or a receivers' log entry's) as this kind, or nil when it is
    /// not one.
    package init?(detail: String?) {
        guard let detail, let value = try? JSONDecoder().decode(Self.self, from: Data(detail.utf8)), value.isValid
        else { return nil }
        self = value
    }
}

extension HistoryRecord {
    /// A record of `payload`'s kind, with it as its detail.
    package init<P: HistoryPayload>(
        payload: P, outcome: Outcome = .ok, documents: [Document] = [], destinations: [String] = [],
        now: Date = Date()
    ) {
        self.init(
            P.operation, outcome: outcome, documents: documents, destinations: destinations, detail: payload.detail,
            now: now)
    }

    /// This record's detail as `type`, when the record is of its kind and the detail is one.
    package func payload<P: HistoryPayload>(_ type: P.Type) -> P? {
        operation == P.operation ? P(detail: detail) : nil
    }
}
