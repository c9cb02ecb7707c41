#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A confirmed delivery of a document to a destination: one entry of the delivery ledger.
///
/// The ledger is not a file of its own: the history is its truth. Each batch a destination
/// confirms is appended to the history as an `upload` record naming the batch's documents and
/// the destination, and the index keeps one sealed row per document and destination
/// (`index.db` table `deliveries`), so "was this document delivered there?" is one lookup
/// (docs/FORMAT.md "Deliveries"). Upload records of earlier versions (one per run) count too.
package struct Delivery: Codable, Sendable, Equatable {
    /// Where it went (a destination's identity: ``Destination/identity(of:)``).
    package var destination: String
    /// The position of the history record that confirmed it.
    package var record: Int
    /// When it was confirmed (milliseconds since 1970).
    package var timeMillis: Int64
    /// What the record says of it (the run, the batch, the back office's answer).
    package var detail: String?

    package init(destination: String, record: Int, timeMillis: Int64, detail: String?) {
        self.destination = destination
        self.record = record
        self.timeMillis = timeMillis
        self.detail = detail
    }

    /// The time as a date.
    package var date: Date { Date(timeIntervalSince1970: Double(timeMillis) / 1000) }
}

/// Where an `s3://` destination's bytes go besides its bucket and prefix: the endpoint and the
/// region the process reaches the store through (its front end's S3 settings). Part of the identity, so a
/// delivery through a test endpoint never counts for production.
package struct S3Place: Sendable, Equatable {
    /// The endpoint URL (scheme, host, port), as the client addresses it.
    package var endpoint: String
    package var region: String

    package init(endpoint: String, region: String) {
        self.endpoint = endpoint
        self.region = region
    }
}

/// A destination's identity: everything that decides where a batch's bytes go, so that a
/// delivery to one never counts for another (docs/FORMAT.md "Deliveries").
///
/// - `http(s)://`: the URL with the scheme and host in lower case, no default port, `/` for an
///   empty path, and its query as given (`…/in?tenant=a` is not `…/in?tenant=b`); never user
///   information or a fragment.
/// - `s3://BUCKET/PREFIX`: the bucket, the prefix without surrounding slashes, and the endpoint
///   and region it was reached through: `s3://BUCKET/PREFIX (ENDPOINT, REGION)`.
///
/// Identities in records of earlier versions (no query; S3 without endpoint) match only a
/// destination with exactly that identity.
package struct DestinationIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The identity as the ledger and the history keep it.
    package let value: String

    /// The process's S3 endpoint and region, for an `s3://` URL a user typed (a destination named
    /// by its URL): the command line sets it from its environment. An upload never needs it:
    /// its identity comes from its own S3 target's endpoint and region, so an app sets nothing.
    /// Nil when not set: the identity of an `s3://` URL is then its bucket and prefix alone.
    private static let s3Place = Mutex<S3Place?>(nil)

    /// Sets the endpoint and region `s3://` destinations are reached through in this process.
    package static func useS3(_ place: S3Place?) { s3Place.withLock { $0 = place } }

    /// The identity of the destination at `url`, reached (for `s3://`) through `place`, or the
    /// process's (``useS3(_:)``) when nil; nil for anything but `http(s)://` and `s3://`.
    package init?(url: String, s3 place: S3Place? = nil) {
        guard let c = URLComponents(string: url.trimmingSpaces()),
            let scheme = c.scheme?.lowercased(),
            let host = c.host,
            !host.isEmpty
        else { return nil }
        switch scheme {
        case "http", "https":
            let port = c.port.flatMap { ($0 == 80 && scheme == "http") || ($0 == 443 && scheme == "https") ? nil : $0 }
            let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
            let query = c.percentEncodedQuery.map { $0.isEmpty ? "" : "?" + $0 } ?? ""
            value = "\(scheme)://\(host.lowercased())\(port.map { ":\($0)" } ?? "")\(path)\(query)"
        case "s3":
            let prefix = c.path.trimming("/")
            let base = prefix.isEmpty ? "s3://\(host)" : "s3://\(host)/\(prefix)"
            if let place = place ?? Self.s3Place.withLock({ $0 }) {
                let endpoint =
                    URLComponents(string: place.endpoint).map { e -> String in
                        var e = e
                        e.scheme = e.scheme?.lowercased(); e.host = e.host?.lowercased(); e.user = nil; e.password = nil
                        e.query = nil; e.fragment = nil
                        if e.path == "/" { e.path = "" }
                        return e.string ?? place.endpoint
                    } ?? place.endpoint
                value = "\(base) (\(endpoint), \(place.region))"
            } else {
                value = base
            }
        default:
            return nil
        }
    }

    /// An identity as a history record wrote it: `http(s)://` ones normalised as above (records
    /// of earlier versions wrote scheme, host, port and path), others as they are.
    package init(recorded: String) {
        if !recorded.hasPrefix("s3://"), let normal = DestinationIdentity(url: recorded) {
            self = normal
        } else {
            value = recorded
        }
    }

    /// A destination as a caller names it: an identity already (an `s3://` one with its place,
    /// as ``DestinationList/Entry/identity`` gives it), else a URL.
    package init?(given: String) {
        if given.hasPrefix("s3://") && given.hasSuffix(")") && given.contains(" (") {
            self.init(recorded: given)
        } else {
            self.init(url: given)
        }
    }

    /// For people: the identity with the value of every query parameter whose name suggests a
    /// secret (token, key, signature, password, secret, credential, auth, sig) shown as `…`.
    package var description: String {
        guard let q = value.firstIndex(of: "?"),
            !value.hasPrefix("s3://")
        else { return value }
        let secretWords = ["token", "key", "sig", "password", "secret", "credential", "auth"]
        let items = value[value.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map {
            item -> String in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2,
                secretWords.contains(where: { parts[0].lowercased().contains($0) })
            else {
                return String(item)
            }
            return "\(parts[0])=…"
        }
        return String(value[..<q]) + "?" + items.joined(separator: "&")
    }
}

/// Destinations as the ledger knows them: what the user means by a place documents go.
package enum Destination {
    /// The identity (``DestinationIdentity``) of the destination at `url`, as the ledger keeps it.
    package static func identity(of url: String) -> String? { DestinationIdentity(url: url)?.value }

    /// The identities a history record confirmed its documents at: those of an `upload`
    /// record that did not fail (``DestinationIdentity/init(recorded:)``).
    static func confirmed(by record: HistoryRecord) -> [String] {
        guard record.operation == .upload,
            record.outcome != .failed
        else { return [] }
        return record.destinations.map { DestinationIdentity(recorded: $0).value }
    }
}

extension Vault {
    /// Records that `destination` confirmed `documents` (one batch): an `upload` record in the
    /// history, which the index turns into ledger rows in the same step. Called once the batch
    /// is confirmed and its journal says so, before anything is removed on the strength of it.
    package func recordDelivery(
        _ documents: [DocumentRecord], to destination: String, detail: String, now: Date = Date()
    ) throws {
        guard let identity = DestinationIdentity(url: destination) else {
            throw VaultError(.usage, "'\(destination)' is not a destination URL")
        }
        try recordDelivery(documents, at: identity, detail: detail, now: now)
    }

    /// ``recordDelivery(_:to:detail:now:)`` at an identity known already (an upload journal's).
    /// - Parameters:
    ///   - receipt: the receiver's signed receipt for the batch, kept in the record.
    ///   - sealed: the sealed pairs it signs, when it signs those (``HistoryRecord/sealed``).
    package func recordDelivery(
        _ documents: [DocumentRecord], at identity: DestinationIdentity, detail: String, receipt: String? = nil,
        sealed: [String]? = nil, now: Date = Date()
    ) throws {
        var record = HistoryRecord(
            .upload, documents: documents.map(HistoryRecord.Document.init), destinations: [identity.value],
            detail: detail, now: now)
        record.receipt = receipt
        record.sealed = sealed
        try appendToHistory(record)
    }

    /// Those of `records` (in their order) that the destination of `identity` has not confirmed.
    package func undelivered(_ records: [DocumentRecord], at identity: DestinationIdentity) throws -> [DocumentRecord] {
        try withLedger { index in try records.filter { try index.delivery(of: $0.id, to: identity.value) == nil } }
    }

    /// The first confirmed delivery of `id` at the destination of `identity`, if any.
    package func delivery(of id: DocumentID, at identity: DestinationIdentity) throws -> Delivery? {
        try withLedger { index in try index.delivery(of: id, to: identity.value) }
    }

    /// The first confirmed delivery of `id` at `destination`, if any (one lookup).
    package func delivery(of id: DocumentID, to destination: String) throws -> Delivery? {
        guard let identity = DestinationIdentity(given: destination) else { return nil }
        return try delivery(of: id, at: identity)
    }

    /// Every destination `id` was delivered to, oldest delivery first.
    package func deliveries(of id: DocumentID) throws -> [Delivery] {
        try withLedger { index in try index.deliveries(of: id) }.sorted {
            ($0.timeMillis, $0.destination) < ($1.timeMillis, $1.destination)
        }
    }

    /// Those of `records` (in their order) that `destination` has not confirmed.
    package func undelivered(_ records: [DocumentRecord], to destination: String) throws -> [DocumentRecord] {
        guard let identity = DestinationIdentity(given: destination) else {
            throw VaultError(.usage, "'\(destination)' is not a destination URL")
        }
        return try undelivered(records, at: identity)
    }

    /// Those of `ids` that the history itself (a full scan: every record authenticated in its
    /// place, under the epoch rules) does not show confirmed at every one of `identities` — what
    /// a removal by delivery checks before it deletes, whatever the index says.
    /// A history with findings proves nothing (what a forger could not make count may still
    /// have been left out): every document is unproven, and the findings' codes say why.
    /// - Returns: the unproven ids, the findings, and those of the ids delivered at a destination
    ///   that signs receipts without one signed by its key.
    package func unprovenDeliveries(
        _ ids: [DocumentID], at identities: [String]
    ) throws -> (ids: [DocumentID], findings: [String], unsigned: [DocumentID]) {
        let scan = try history()
        let findings = Array(Set(scan.findings.map(\.code.rawValue))).sorted()
        if !findings.isEmpty {
            VaultNotices.post(
                """
                the history has findings (\(findings.joined(separator: ", "))): nothing is removed by delivery \
                until an audit settles them
                """
            )
            return (ids, findings, [])
        }
        let deliveries = scan.projected().deliveries
        let wanted = identities.map { DestinationIdentity(given: $0)?.value ?? $0 }
        // At a destination that signs receipts, only a confirmation that carries one counts: a
        // delivery recorded before it was given its key (an impostor may have answered 200 to a
        // plain upload) proves nothing the office stored.
        let keys = Dictionary(
            try DestinationList.load(self).destinations.compactMap { d in
                d.receiptKey.flatMap(Hex.decode).map { (d.identity, $0) }
            }, uniquingKeysWith: { a, _ in a })
        var signed: [String: [DocumentID: Int]] = [:]
        for identity in wanted {
            guard let key = keys[identity] else { continue }
            signed[identity] = Vault.signedDeliveries(
                ReceiptRequirement(identity: identity, publicKey: key), in: scan.records)
        }
        let unsigned = ids.filter { id in
            wanted.contains { deliveries[$0]?[id] != nil && signed[$0].map { $0[id] == nil } == true }
        }
        return (
            ids.filter { id in
                !wanted.allSatisfy { deliveries[$0]?[id] != nil && (signed[$0].map { $0[id] != nil } ?? true) }
            }, [], unsigned
        )
    }

    /// Every ledger row, by destination: the documents delivered there (present or removed
    /// since) with their first delivery.
    package func ledger() throws -> [String: [DocumentID: Delivery]] {
        try withLedger { index in
            var out: [String: [DocumentID: Delivery]] = [:]
            try index.forEachDelivery { id, d in out[d.destination, default: [:]][id] = d }
            return out
        }
    }

    /// Runs `body` on the index; when a ledger row does not open in its place (moved, edited or
    /// forged by someone without the password), the ledger is derived from the history — its
    /// truth — again, and `body` runs once more.
    func withLedger<R>(_ body: (DocumentIndex) throws -> R) throws -> R {
        do {
            return try withIndex(body)
        } catch is DocumentIndex.LedgerRowDamaged {
            try store.withWriterLock { lock in
                try withIndex(lock) { index in
                    var state = try index.stateOrEmpty()
                    (state.logCount, state.logEnd, state.logTag, state.logEpoch) = (0, 0, "", nil)
                    try index.write(lock) { try index.writeState(state) }
                    _ = try historyWriter(index: index, lock)
                }
            }
            do {
                return try withIndex(body)
            } catch let e as DocumentIndex.LedgerRowDamaged {
                throw VaultError(.vaultDamaged, "index.db's delivery row for \(e.id.hex) fails authentication")
            }
        }
    }
}

/// The destinations a vault names (`destinations.vlt`, sealed): a short name for a place
/// documents are delivered to (a back office's URL, an S3 bucket and prefix, a presign
/// endpoint), how batches go there, and whether every document must reach it before it may
/// be removed. Remotes (`remotes.vlt`) are the other kind of place: replicas of the vault.
package typealias DestinationList = NamedList<DestinationEntry>

/// A destination of ``DestinationList``.
package struct DestinationEntry: NamedListEntry {
    package static let listKey = "destinations"
    package static let kind = "destination"
    /// The short name.
    package var name: String
    /// The URL as given (`https://…`, `s3://BUCKET/PREFIX`, or the presign endpoint).
    package var url: String
    /// How batches go there (json, form, tus, s3, presigned-s3); nil for the default of the URL.
    package var wire: String?
    /// Every document must be confirmed here before removal by delivery frees it.
    package var required: Bool
    /// For `s3://`: the endpoint and region it was added for (part of its identity; an upload
    /// to it through another is refused). Nil in lists of earlier versions: the process's.
    package var endpoint: String?
    package var region: String?
    /// The Ed25519 public key (hex) of a receiver that signs receipts: a batch counts as
    /// delivered there only with its signed receipt (docs/RECEIVE.md).
    package var receiptKey: String?
    /// The age recipients (`age1…`, `age1pq1…`) every upload there is sealed to (docs/UPLOAD.md,
    /// "Sealed delivery"); nil or empty: plaintext payloads.
    package var recipients: [String]?
    /// The PEM file of certificate authorities an upload there trusts (an absolute path); nil:
    /// the system's.
    package var cacert: String?
    /// Where an upload there takes its token from when the environment gives none: a file
    /// (an absolute path) or a command (what it prints). The token itself is never kept.
    package var tokenFile: String?
    package var tokenCommand: String?
    /// True when the destination takes uploads with no credentials at all (said when it was
    /// added or set): an upload there with none goes ahead. Nil: it needs some, and an upload
    /// with none is refused before anything is sent.
    package var noCredentials: Bool?

    package init(name: String, url: String, wire: String? = nil, required: Bool = true, s3 place: S3Place? = nil) {
        self.name = name
        self.url = url
        self.wire = wire
        self.required = required
        self.endpoint = place?.endpoint
        self.region = place?.region
    }

    /// Where an `s3://` destination is reached, when the list says.
    package var s3Place: S3Place? { endpoint.flatMap { e in region.map { S3Place(endpoint: e, region: $0) } } }

    /// The ledger's identity of the destination.
    package var identity: String { DestinationIdentity(url: url, s3: s3Place)?.value ?? url }
}

extension NamedList where Entry == DestinationEntry {
    /// The destinations, in the order they were named.
    package var destinations: [DestinationEntry] {
        get { entries }
        set { entries = newValue }
    }

    package static func path(_ store: VaultStore) -> String { store.path(.destinations) }
    package static var role: String { VaultFile.destinations.name }

    /// The vault's destinations: the projection of the history's `destination` records (from
    /// `vault/3` on), which the index keeps in its sealed state row, brought up to date with the
    /// history as any use of the index is. Nothing outside the history decides which
    /// destinations exist or which are required.
    package static func load(_ vault: Vault) throws -> DestinationList {
        guard vault.keepsDestinationsInHistory else { return try loadFile(vault) }
        return try vault.withIndex { index in try index.stateOrEmpty().destinations ?? DestinationList() }
    }

    /// `destinations.vlt` of a vault before `vault/3` (none when it has no list), opened under
    /// the current key, or with `anyEpoch` under any key of the vault's keyring (versions before
    /// did not seal it again at a password change).
    /// - Throws: ``VaultError/Code/vaultDamaged`` for a list that does not open (edited,
    ///   swapped, from another vault or sealed under a retired key).
    package static func loadFile(_ vault: Vault, anyEpoch: Bool = false) throws -> DestinationList {
        try openSealed(
            vault, path: path(vault.store), purpose: .destinations, role: role, anyEpoch: anyEpoch,
            damaged: .addDestinationsAgain)
    }

    /// Makes the vault's destinations this list: a `destination` record in the history for each
    /// entry added or changed and each name removed (from `vault/3` on).
    package func save(_ vault: Vault) throws {
        guard vault.keepsDestinationsInHistory else { return try saveFile(vault) }
        let now = try Self.load(vault)
        for entry in destinations where now.destinations.first(where: { $0.name == entry.name }) != entry {
            try vault.appendToHistory(HistoryRecord(.destination, detail: DestinationChange(set: entry).detail))
        }
        for old in now.destinations where !destinations.contains(where: { $0.name == old.name }) {
            try vault.appendToHistory(HistoryRecord(.destination, detail: DestinationChange(remove: old.name).detail))
        }
    }

    /// Writes `destinations.vlt` crash-safely, sealed (a vault before `vault/3`; the fuzzer's
    /// seeds of the file the upgrade reads).
    package func saveFile(_ vault: Vault) throws {
        try saveSealed(vault, to: Self.path(vault.store), purpose: .destinations, role: Self.role)
    }

    /// The destination `nameOrURL` means: a URL as it is (with the entry of that identity, if
    /// one is named), else a named entry.
    package func resolve(_ nameOrURL: String) throws -> (entry: DestinationEntry?, identity: String) {
        if nameOrURL.contains("://") {
            guard let identity = Destination.identity(of: nameOrURL) else {
                throw VaultError(
                    .usage, "'\(nameOrURL.prefix(200))' is not a destination URL (http://, https:// or s3://)")
            }
            return (destinations.first { $0.identity == identity }, identity)
        }
        guard let entry = destinations.first(where: { $0.name == nameOrURL }) else {
            guard destinations.isEmpty else {
                throw VaultError(
                    .notFound, "no destination named '\(nameOrURL.prefix(64))'",
                    hint: "known: \(destinations.map(\.name).joined(separator: ", "))")
            }
            throw VaultError(.notFound, "no destination named '\(nameOrURL.prefix(64))'", remedy: .addDestination)
        }
        return (entry, entry.identity)
    }

    /// The destinations every document must reach before removal by delivery frees it.
    package var required: [DestinationEntry] { destinations.filter(\.required) }
}
