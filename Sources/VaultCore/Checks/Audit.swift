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
    /// Reads only; changes nothing.
    package func audit(
        deep: Bool = false, expectedHead: HistoryHead? = nil, requireDelivered: [String] = [],
        requireReceipts: [ReceiptRequirement] = [], progress: ((Int, Int) -> Void)? = nil
    ) throws -> AuditReport {
        let scan = try HistoryLog(vault: self).scan(keepRecords: false)
        var findings = scan.findings + scan.noted + indexWitness(scan)
        if !requireReceipts.isEmpty { findings += try unsignedRemovals(requireReceipts, scan: scan) }
        if !requireDelivered.isEmpty {
            let deliveries = scan.deliveries()
            let removed = scan.documentState().removed
            let names = scan.removedDocuments()
            for (id, position) in removed.sorted(by: { $0.key < $1.key }) {
                for destination in requireDelivered {
                    guard let d = deliveries[destination]?[id],
                        d.record < position
                    else {
                        findings.append(
                            AuditFinding(
                                .removedUndelivered,
                                """
                                \(id) (\(names[id]?.name ?? "?")) was removed by record \(position) without a \
                                delivery to \(destination) before it
                                """,
                                document: id.hex, record: position))
                        continue
                    }
                }
            }
        }
        if !scan.exists && scan.storedHead == nil && scan.anchor == nil && config.isLegacy {
            findings.append(
                AuditFinding(
                    .logMissing,
                    "the vault has no history (log.vlt): it was made before vault kept one, or the log was deleted"))
        }
        let intake = store.path(.pendingIntake)
        if FileSystem.kind(of: intake) != .missing,
            (try? openState(
                try FileSystem.readFile(intake, limit: 1 << 20), purpose: .pendingIntake,
                role: VaultFile.pendingIntake.name, what: "intake.pending")) == nil
        {
            findings.append(
                AuditFinding(
                    .pendingIntakeRefused,
                    "intake.pending does not open under this vault's key; it is not acted on (delete it)"))
        }
        let pendingRemoval = try HistoryLog(vault: self).pendingRemovalState()
        if let refused = pendingRemoval.refused {
            findings.append(
                AuditFinding(
                    .pendingRemovalRefused,
                    "\(refused.message); it is not acted on (delete it, or remove the documents again)"))
        }
        if let expected = expectedHead {
            if scan.entries.count < expected.count {
                findings.append(
                    AuditFinding(
                        .rolledBack,
                        """
                        the log holds \(scan.entries.count) records, but the expected head \(expected) has \
                        \(expected.count): the vault was rolled back, or its log cut
                        """
                    ))
            } else if expected.count > 0 && scan.entries[expected.count - 1].tag != expected.tag {
                findings.append(
                    AuditFinding(
                        .headDiffers,
                        "record \(expected.count) is not the one the expected head names: the log was replaced",
                        record: expected.count))
            }
        }
        let logState = scan.documentState()
        // A row's tags are its envelope's with the history's changes made (`vault tag`).
        let tagChanges = scan.projected().tagChanges
        var present = logState.present
        let removed = logState.removed
        // A removal a crash interrupted is finished by the next change: not a finding.
        let pending = Set((pendingRemoval.documents ?? []).map(\.id))
        for id in pending { present[id] = nil }
        let objects = try store.objectIDs().filter { !pending.contains($0) }
        // Only the few missing ones are sorted (sorting every entry would copy them all).
        for (id, (document, position)) in present.filter({ !objects.contains($0.key) }).sorted(by: { $0.key < $1.key })
        {
            findings.append(
                AuditFinding(
                    .missingObject,
                    """
                    \(id) (\(document.name)), added by record \(position), has no object: it was deleted outside \
                    vault
                    """,
                    document: id.hex, record: position))
        }
        // The index: sealed rows that must name exactly the objects, with their metadata, and
        // the documents the history removed. Each object's row is looked up as the object is
        // read (nothing is kept per document but the row's id set of the index's own pass).
        let inspected = try inspectIndex()
        let status = inspected.status
        var index = inspected.index
        // a stale stamp alone (a copied folder, a crash) is not a finding
        let rowsUsable = status == .current || status == .stale
        for (n, id) in objects.sorted().enumerated() {
            progress?(n, objects.count)
            var metadata: DocumentMetadata?
            do {
                let reader = try openEnvelope(id, verifyDigest: deep)
                if deep { while try reader.next() != nil {} }
                metadata = reader.metadata
            } catch {
                let e = VaultError.from(error)
                findings.append(AuditFinding(.damagedObject, "\(id): \(e.code): \(e.message)", document: id.hex))
            }
            let hex = id.hex
            if let at = removed[id], present[id] == nil {
                findings.append(
                    AuditFinding(
                        .resurrectedObject,
                        "\(hex) was removed by record \(at), and its object is back: export and upload refuse it",
                        document: hex, record: at))
            } else if let (logged, position) = present[id] {
                if let m = metadata, Hex.encode(m.sha256) != logged.sha256 || m.size != logged.size {
                    findings.append(
                        AuditFinding(
                            .objectDiffers,
                            "\(hex) is not the document record \(position) added (its size or SHA-256 differs)",
                            document: hex, record: position))
                }
            } else if scan.exists {
                findings.append(
                    AuditFinding(
                        .unloggedObject,
                        """
                        \(hex) is in the vault but in no record: it was copied in, or a command was killed after \
                        committing it (the next change records those as 'adopt')
                        """,
                        document: hex))
            }
            if rowsUsable, let m = metadata {
                do {
                    if let row = try index.record(id) {
                        if row.metadata != m.retagged(tagChanges[id]) {
                            findings.append(
                                AuditFinding(
                                    .indexMismatch, "the index's record of \(id) differs from its envelope",
                                    document: hex))
                        }
                    } else {
                        findings.append(
                            AuditFinding(
                                .indexMismatch, "the index has no row for \(id) (the next command rebuilds it)",
                                document: hex))
                    }
                } catch {
                    findings.append(
                        AuditFinding(
                            .indexMismatch,
                            "the index's row for \(id) fails authentication (the next command rebuilds it)",
                            document: hex))
                }
            }
        }
        progress?(objects.count, objects.count)
        switch status {
        case .current, .stale:
            if !(try index.verifyRows(against: try index.stateOrEmpty())) {
                findings.append(
                    AuditFinding(
                        .indexMismatch,
                        """
                        index.db does not match the commitment vault sealed with its rows: rows were added, \
                        removed or changed outside vault (rebuilt from the history and the objects)
                        """
                    ))
                try rebuildIndexNow()
                index = try inspectIndex().index
            }
            for id in try index.ids() where !objects.contains(id) && !pending.contains(id) {
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
        case .missing:
            findings.append(AuditFinding(.indexMismatch, "index.db is missing or empty (the next command rebuilds it)"))
        case .otherEpoch:
            findings.append(
                AuditFinding(
                    .indexMismatch,
                    """
                    index.db is sealed in another key epoch: a password change was interrupted, or an old copy \
                    was put back (the next command rebuilds it)
                    """
                ))
        case .damaged:
            findings.append(
                AuditFinding(
                    .indexMismatch, "index.db fails authentication or has lost rows (the next command rebuilds it)"))
        }
        return AuditReport(
            findings: findings, head: scan.head, records: scan.entries.count, documents: present.count,
            objects: objects.count, deep: deep)
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
            for (d, s) in zip(r.documents, answer.receipt.documents)
            where Hex.encode(s.sha256) == d.sha256 && s.size == d.size && signed[d.id] == nil {
                signed[d.id] = position
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
