#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an audit found.
package struct AuditReport: Sendable {
    /// Every problem, each with a stable code.
    package var findings: [AuditFinding]
    /// The log's head as it stands.
    package var head: HistoryHead
    /// Records in the log, and documents it says are present.
    package var records: Int
    package var documents: Int
    /// Objects in `objects/`.
    package var objects: Int
    /// True when every chunk was read (a deep audit), not only every header.
    package var deep: Bool
    /// Downloads by operators of a receiver's browser view that the history records.
    package var downloads = 0
}

extension Vault {
    /// Checks the vault against its history:
    /// - the chain is whole (every record authenticates in its place, nothing cut off, the head
    ///   matches), and the anomalies earlier writers sealed into it;
    /// - every document the log says is present is there, authenticates (its header, or with
    ///   `deep` every chunk and the SHA-256) and matches the log's digest and size;
    /// - no object is there that the log says was removed (resurrected) or never added;
    /// - the index names exactly the objects, with their metadata;
    /// - with `expectedHead`, the log still holds that record: a vault rolled back to an older
    ///   copy (or a log replaced) is caught.
    /// - with `requireDelivered` (destination identities, ``Destination/identity(of:)``): every
    ///   document the history removed was confirmed by each of them before its removal.
    /// Reads only; changes nothing (``Auditor`` runs each check as a phase of its own).
    package func audit(
        deep: Bool = false, expectedHead: HistoryHead? = nil, requireDelivered: [String] = [],
        requireReceipts: [ReceiptRequirement] = [], progress: ((Int, Int) -> Void)? = nil
    ) throws -> AuditReport {
        let auditor = try Auditor(vault: self, deep: deep)
        var findings = auditor.chain()
        findings += try auditor.receipts(requireReceipts)
        findings += auditor.deliveries(requireDelivered)
        findings += auditor.legacyLog()
        findings += auditor.pendingIntake()
        findings += auditor.pendingRemoval()
        findings += auditor.rollback(expectedHead)
        findings += auditor.missingObjects()
        findings += try auditor.objects(progress: progress)
        findings += try auditor.indexTable()
        return AuditReport(
            findings: findings, head: auditor.scan.head, records: auditor.scan.entries.count,
            documents: auditor.present.count, objects: auditor.objectIDs.count, deep: deep,
            downloads: auditor.scan.downloads)
    }
}

/// One audit of a vault, check by check. As restic's checker does, each phase reads what it
/// needs and returns its typed findings, in the order `audit` reports them; the state read
/// once (the history's scan, the documents it holds, the objects on disk) is shared.
struct Auditor {
    let vault: Vault
    let deep: Bool
    /// The history, read once (records are not kept: phases that need them read them again).
    let scan: HistoryScan
    /// Documents the history says are present, without those a crashed removal left pending.
    let present: [DocumentID: (HistoryRecord.Document, Int)]
    /// Documents the history removed, with the position of the record that did.
    let removed: [DocumentID: Int]
    /// The objects on disk, without those a crashed removal left pending.
    let objectIDs: Set<DocumentID>
    /// Documents an interrupted removal names: the next change finishes it, not a finding.
    let pendingRemovals: Set<DocumentID>
    /// What `pending.removal` holds, or why it was refused.
    let pendingRemovalState: (documents: [HistoryRecord.Document]?, refused: VaultError?)
    /// The index, and how it stands against the vault's key and stamp.
    let inspected: (status: Vault.IndexStatus, index: DocumentIndex)

    init(vault: Vault, deep: Bool) throws {
        self.vault = vault
        self.deep = deep
        scan = try HistoryLog(vault: vault).scan(keepRecords: false)
        pendingRemovalState = try HistoryLog(vault: vault).pendingRemovalState()
        let state = scan.documentState()
        let pending = Set((pendingRemovalState.documents ?? []).map(\.id))
        var present = state.present
        for id in pending { present[id] = nil }
        self.present = present
        removed = state.removed
        pendingRemovals = pending
        objectIDs = try vault.store.objectIDs().filter { !pending.contains($0) }
        inspected = try vault.inspectIndex()
    }

    /// The chain is whole, the anomalies earlier writers sealed into it, and the index's witness
    /// of a longer log.
    func chain() -> [AuditFinding] {
        scan.findings + scan.noted + vault.indexWitness(scan)
    }

    /// `removed-unsigned`: each document removed with no receipt signed by a required key
    /// before it.
    func receipts(_ requirements: [ReceiptRequirement]) throws -> [AuditFinding] {
        requirements.isEmpty ? [] : try vault.unsignedRemovals(requirements, scan: scan)
    }

    /// `removed-undelivered`: each document removed before a required destination confirmed it.
    func deliveries(_ destinations: [String]) -> [AuditFinding] {
        guard !destinations.isEmpty else { return [] }
        let deliveries = scan.deliveries()
        let names = scan.removedDocuments()
        var findings: [AuditFinding] = []
        for (id, position) in removed.sorted(by: { $0.key < $1.key }) {
            for destination in destinations {
                if let d = deliveries[destination]?[id], d.record < position { continue }
                findings.append(
                    AuditFinding(
                        .removedUndelivered,
                        """
                        \(id) (\(names[id]?.name ?? "?")) was removed by record \(position) without a \
                        delivery to \(destination) before it
                        """,
                        document: id.hex, record: position))
            }
        }
        return findings
    }

    /// `log-missing`: a vault of the first format with no history at all.
    func legacyLog() -> [AuditFinding] {
        guard !scan.exists && scan.storedHead == nil && scan.anchor == nil && vault.config.isLegacy else { return [] }
        return [
            AuditFinding(
                .logMissing,
                "the vault has no history (log.vlt): it was made before vault kept one, or the log was deleted")
        ]
    }

    /// `pending-intake-refused`: an `intake.pending` that does not open under this vault's key.
    func pendingIntake() -> [AuditFinding] {
        let intake = vault.store.path(.pendingIntake)
        guard FileSystem.kind(of: intake) != .missing,
            (try? vault.openState(
                try FileSystem.readFile(intake, limit: 1 << 20), purpose: .pendingIntake,
                role: VaultFile.pendingIntake.name, what: "intake.pending")) == nil
        else { return [] }
        return [
            AuditFinding(
                .pendingIntakeRefused,
                "intake.pending does not open under this vault's key; it is not acted on (delete it)")
        ]
    }

    /// `pending-removal-refused`: a `remove.pending` that was forged, damaged or sealed under a
    /// superseded key.
    func pendingRemoval() -> [AuditFinding] {
        guard let refused = pendingRemovalState.refused else { return [] }
        return [
            AuditFinding(
                .pendingRemovalRefused,
                "\(refused.message); it is not acted on (delete it, or remove the documents again)")
        ]
    }

    /// `rolled-back` or `head-differs`: the log no longer holds the head the caller remembers.
    func rollback(_ expected: HistoryHead?) -> [AuditFinding] {
        guard let expected else { return [] }
        if scan.entries.count < expected.count {
            return [
                AuditFinding(
                    .rolledBack,
                    """
                    the log holds \(scan.entries.count) records, but the expected head \(expected) has \
                    \(expected.count): the vault was rolled back, or its log cut
                    """
                )
            ]
        }
        guard expected.count > 0 && scan.entries[expected.count - 1].tag != expected.tag else { return [] }
        return [
            AuditFinding(
                .headDiffers, "record \(expected.count) is not the one the expected head names: the log was replaced",
                record: expected.count)
        ]
    }

    /// `missing-object`: each document the history holds that has no object.
    func missingObjects() -> [AuditFinding] {
        // Only the few missing ones are sorted (sorting every entry would copy them all).
        present.filter { !objectIDs.contains($0.key) }.sorted { $0.key < $1.key }.map { id, entry in
            AuditFinding(
                .missingObject,
                """
                \(id) (\(entry.0.name)), added by record \(entry.1), has no object: it was deleted outside \
                vault
                """,
                document: id.hex, record: entry.1)
        }
    }

    /// Every object, read (its header, or with `deep` every chunk and the SHA-256): damaged,
    /// resurrected, differing from its record, in no record; and its index row. Each object's
    /// row is looked up as the object is read (nothing is kept per document).
    func objects(progress: ((Int, Int) -> Void)?) throws -> [AuditFinding] {
        // a stale stamp alone (a copied folder, a crash) is not a finding
        let rows = inspected.status == .current || inspected.status == .stale ? inspected.index : nil
        // A row's tags are its envelope's with the history's changes made (`tag` records).
        let tagChanges = scan.projected().tagChanges
        var findings: [AuditFinding] = []
        for (n, id) in objectIDs.sorted().enumerated() {
            progress?(n, objectIDs.count)
            var metadata: DocumentMetadata?
            do {
                if vault.holdsCaptured(id) {
                    metadata = deep ? try vault.checkCaptured(id).metadata : try vault.storedRecord(id).metadata
                } else {
                    let reader = try vault.openEnvelope(id, verifyDigest: deep)
                    if deep { while try reader.next() != nil {} }
                    metadata = reader.metadata
                }
            } catch {
                let e = VaultError.from(error)
                findings.append(AuditFinding(.damagedObject, "\(id): \(e.code): \(e.message)", document: id.hex))
            }
            findings += placed(id, metadata: metadata)
            if let rows, let m = metadata { findings += row(of: id, in: rows, matching: m.retagged(tagChanges[id])) }
        }
        progress?(objectIDs.count, objectIDs.count)
        return findings
    }

    /// An object against the history: resurrected, differing from the document its record
    /// added, or in no record.
    private func placed(_ id: DocumentID, metadata: DocumentMetadata?) -> [AuditFinding] {
        let hex = id.hex
        if let at = removed[id], present[id] == nil {
            return [
                AuditFinding(
                    .resurrectedObject,
                    "\(hex) was removed by record \(at), and its object is back: export and upload refuse it",
                    document: hex, record: at)
            ]
        } else if let (logged, position) = present[id] {
            guard let m = metadata, Hex.encode(m.sha256) != logged.sha256 || m.size != logged.size else { return [] }
            return [
                AuditFinding(
                    .objectDiffers,
                    "\(hex) is not the document record \(position) added (its size or SHA-256 differs)",
                    document: hex, record: position)
            ]
        } else if scan.exists {
            return [
                AuditFinding(
                    .unloggedObject,
                    """
                    \(hex) is in the vault but in no record: it was copied in, or a command was killed after \
                    committing it (the next change records those as 'adopt')
                    """,
                    document: hex)
            ]
        }
        return []
    }

    /// An object's index row: present, authentic, and holding the envelope's metadata.
    private func row(
        of id: DocumentID, in index: DocumentIndex, matching metadata: DocumentMetadata
    ) -> [AuditFinding] {
        let hex = id.hex
        do {
            guard let row = try index.record(id) else {
                return [
                    AuditFinding(
                        .indexMismatch, "the index has no row for \(id) (the next command rebuilds it)", document: hex)
                ]
            }
            guard row.metadata != metadata else { return [] }
            return [
                AuditFinding(.indexMismatch, "the index's record of \(id) differs from its envelope", document: hex)
            ]
        } catch {
            return [
                AuditFinding(
                    .indexMismatch,
                    "the index's row for \(id) fails authentication (the next command rebuilds it)",
                    document: hex)
            ]
        }
    }

    /// The index as a whole: its sealed commitment over the rows (rebuilt when it fails), rows
    /// with no object, and the removed documents it lists against the history's.
    func indexTable() throws -> [AuditFinding] {
        var index = inspected.index
        switch inspected.status {
        case .current, .stale:
            var findings: [AuditFinding] = []
            if !(try index.verifyRows(against: try index.stateOrEmpty())) {
                findings.append(
                    AuditFinding(
                        .indexMismatch,
                        """
                        index.db does not match the commitment vault sealed with its rows: rows were added, \
                        removed or changed outside vault (rebuilt from the history and the objects)
                        """
                    ))
                try vault.rebuildIndexNow()
                index = try vault.inspectIndex().index
            }
            for id in try index.ids() where !objectIDs.contains(id) && !pendingRemovals.contains(id) {
                findings.append(
                    AuditFinding(
                        .indexMismatch,
                        "the index has a row for \(id), which has no object (the next command reconciles it)",
                        document: id.hex))
            }
            // Compared only when the index has applied the whole history (a writer killed
            // between its record and the index leaves it one behind; the next command catches up).
            let indexState = try index.stateOrEmpty()
            let indexRemoved = Set(try index.removedDocuments().keys)
            if indexState.logCount == scan.entries.count && indexState.logTag == Hex.encode(scan.head.tag)
                && indexRemoved != Set(removed.keys)
            {
                findings.append(
                    AuditFinding(
                        .indexMismatch,
                        """
                        the index's list of removed documents differs from the history's (\(indexRemoved.count) \
                        against \(removed.count))
                        """
                    ))
            }
            return findings
        case .missing:
            return [AuditFinding(.indexMismatch, "index.db is missing or empty (the next command rebuilds it)")]
        case .otherEpoch:
            return [
                AuditFinding(
                    .indexMismatch,
                    """
                    index.db is sealed in another key epoch: a password change was interrupted, or an old copy \
                    was put back (the next command rebuilds it)
                    """
                )
            ]
        case .damaged:
            return [
                AuditFinding(
                    .indexMismatch, "index.db fails authentication or has lost rows (the next command rebuilds it)")
            ]
        }
    }
}

/// A destination whose receipts an audit requires for every document removed: its identity,
/// and the receiver's public key.
package struct ReceiptRequirement: Sendable {
    /// The destination's identity (``Destination/identity(of:)``).
    package var identity: String
    /// The Ed25519 public key its receipts are signed with.
    package var publicKey: [UInt8]

    package init(identity: String, publicKey: [UInt8]) {
        self.identity = identity
        self.publicKey = publicKey
    }
}

extension Vault {
    /// A `removed-unsigned` finding for each document the history removed with no receipt
    /// before it, signed by `requirement`'s key, that names it: proven from the vault alone (the
    /// receipts are in the `upload` records). A receipt counts for a document when its signature
    /// verifies over the statement as received and it names, at the document's place in the
    /// record, the same SHA-256 and size.
    /// The documents whose confirmation at `requirement`'s destination carries a receipt signed
    /// by its key that names them (SHA-256 and size), with the position of the first such record.
    static func signedDeliveries(
        _ requirement: ReceiptRequirement, in records: [(position: Int, record: HistoryRecord)]
    ) -> [DocumentID: Int] {
        var signed: [DocumentID: Int] = [:]
        for (position, r) in records where Destination.confirmed(by: r).contains(requirement.identity) {
            guard let text = r.receipt,
                let answer = try? Receipt.answer(Array(text.utf8)),
                answer.isSigned(by: requirement.publicKey),
                answer.receipt.documents.count == r.documents.count
            else { continue }
            // Each document by its contents, or, for a sealed batch a receiver kept sealed, by the
            // sealed pair the upload recorded beside it.
            let sealed = r.sealed?.count == r.documents.count ? r.sealed! : nil
            for (k, (d, s)) in zip(r.documents, answer.receipt.documents).enumerated() where signed[d.id] == nil {
                let pair = "\(Hex.encode(s.sha256)):\(s.size)"
                if (Hex.encode(s.sha256) == d.sha256 && s.size == d.size) || sealed?[k] == pair {
                    signed[d.id] = position
                }
            }
        }
        return signed
    }

    func unsignedRemovals(_ requirements: [ReceiptRequirement], scan: HistoryScan) throws -> [AuditFinding] {
        let records = try HistoryLog(vault: self).scan(keepRecords: true).records
        let removed = scan.documentState().removed
        let names = scan.removedDocuments()
        var findings: [AuditFinding] = []
        for requirement in requirements {
            let signed = Self.signedDeliveries(requirement, in: records)
            for (id, position) in removed.sorted(by: { $0.key < $1.key }) {
                if let at = signed[id], at < position { continue }
                findings.append(
                    AuditFinding(
                        .removedUnsigned,
                        """
                        \(id) (\(names[id]?.name ?? "?")) was removed by record \(position) without a receipt \
                        signed by \(requirement.identity) before it
                        """,
                        document: id.hex, record: position))
            }
        }
        return findings
    }
}
