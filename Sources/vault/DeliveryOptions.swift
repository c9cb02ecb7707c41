import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Which documents a delivery filter keeps, from the ledger read once (so a listing looks
/// each document up in memory, not in the index it is walking).
struct DeliveryFilter {
    enum Kind {
        /// Documents some of these destinations lacks (none given: that no destination has).
        case undelivered([String])
        /// Documents every one of these destinations confirmed, `olderThan` seconds ago or more.
        case delivered([String], olderThan: TimeInterval?)
    }

    let kind: Kind
    let ledger: [String: [DocumentID: Delivery]]
    let now = Date()

    init(_ kind: Kind, vault: VaultCore.Vault) throws {
        self.kind = kind
        ledger = try vault.ledger()
    }

    func keeps(_ id: DocumentID) -> Bool {
        switch kind {
        case .undelivered(let destinations):
            if destinations.isEmpty { return !ledger.values.contains { $0[id] != nil } }
            return destinations.contains { ledger[$0]?[id] == nil }
        case .delivered(let destinations, let age):
            return destinations.allSatisfy { d in
                guard let delivery = ledger[d]?[id] else { return false }
                return age.map { now.timeIntervalSince(delivery.date) >= $0 } ?? true
            }
        }
    }

    /// The identities a command means: `given` resolved (names through the vault's list), and
    /// with `required` every destination the list marks required.
    static func destinations(_ given: [String], required: Bool, list: DestinationList) throws -> [String] {
        var out = try given.map { try list.resolve($0).identity }
        if required { for d in list.required where !out.contains(d.identity) { out.append(d.identity) } }
        return out
    }

    /// `30d`, `12h`, `45m`, `2w`, `90s` in seconds; nil for anything else, `inf` and `1e308h`
    /// among it.
    static func duration(_ text: String) -> TimeInterval? {
        guard let unit = text.last,
              let n = Double(text.dropLast()),
              n >= 0 else { return nil }
        let seconds: Double
        switch unit {
        case "s": seconds = n
        case "m": seconds = n * 60
        case "h": seconds = n * 3600
        case "d": seconds = n * 86_400
        case "w": seconds = n * 7 * 86_400
        default: return nil
        }
        return seconds.isFinite ? seconds : nil
    }
}
