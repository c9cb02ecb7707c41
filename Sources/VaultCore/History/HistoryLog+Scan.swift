#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension HistoryLog {
    /// Reads and checks the whole log.
    /// - Parameter keepRecords: keep every record in ``HistoryScan/entries`` (for a full listing of the history);
    ///   without, only what the records say about documents is kept (``HistoryScan/documentState()``),
    ///   so an audit of a history of 100,000 records does not hold them all.
    func scan(keepRecords: Bool = true) throws -> HistoryScan {
        var scan = HistoryScan()
        if !keepRecords { scan.projection = DocumentProjection() }
        scan.storedHead = readHead(into: &scan)
        scan.anchor = readAnchor(into: &scan)
        guard FileSystem.kind(of: path) != .missing else {
            if let head = scan.storedHead ?? scan.anchor {
                scan.findings.append(
                    AuditFinding(.logMissing, "log.vlt is missing, but its head says it held \(head.count) records"))
            } else if promisesHistory {
                scan.findings.append(
                    AuditFinding(
                        .logMissing,
                        """
                            log.vlt, log.head and log.anchor are missing, but this vault has kept a history since it \
                            was made: they were deleted
                            """
                    ))
            }
            scan.end = 0
            return scan
        }
        scan.exists = true
        let file = try OpenFile.openStored(path)
        defer { file.close() }
        let fileSize = Int(try file.size())
        scan.fileSize = fileSize
        guard try file.read(count: HistoryFormat.fileHeader.count, at: 0) == HistoryFormat.fileHeader else {
            scan.findings.append(
                AuditFinding(.logMalformed, "log.vlt does not start with the history magic and version"))
            scan.end = 0
            return scan
        }
        let framed = try frames(of: file, to: fileSize, findings: &scan.findings)
        scan.end = framed.last?.end ?? HistoryFormat.fileHeader.count
        try authenticateAll(framed, in: file, keepRecords: keepRecords, into: &scan)
        checkEnds(framed, fileSize: fileSize, into: &scan)
        // A password change saw more records than there are: the history was put back from a
        // copy older than the change.
        for (e, anchor) in epochKeys.retiredAt.sorted(by: { $0.key < $1.key }) where anchor.count > framed.count {
            scan.findings.append(
                AuditFinding(
                    .rolledBack,
                    """
                        the history holds \(framed.count) records; when a password change retired epoch \(e) it held \
                        \(anchor.count): it was put back from an older copy
                        """
                ))
            break
        }
        return scan
    }

    /// Authenticates each record in its place after its predecessor, in its epoch or a later
    /// one; one that does not is a finding that says why (damaged, moved, chain broken, sealed
    /// under a retired key). Records before an `accept` are settled.
    private func authenticateAll(
        _ framed: [Framed], in file: OpenFile, keepRecords: Bool, into scan: inout HistoryScan
    ) throws {
        var floor = keys.keys.min() ?? epoch
        for (i, f) in framed.enumerated() {
            let position = i + 1
            let previous = i == 0 ? Self.zeroTag : framed[i - 1].tag
            if let (e, record) = try authenticate(
                f, at: position, after: previous, floor: floor, in: file,
                documents: { keepRecords || HistoryRecord.projectsDocuments($0) })
            {
                floor = e
                scan.entries.append(
                    .init(position: position, record: scan.projection == nil ? record : nil, tag: f.tag, epoch: e))
                scan.projection?.apply(record, at: position)
                if record.operation == .download { scan.downloads += 1 }
                if record.operation == .accept {  // a password holder settled everything before it
                    scan.noted.removeAll()
                    scan.findings.removeAll { ($0.record ?? Int.max) < position }
                    scan.acceptedAt = position
                    continue
                }
                for a in record.anomalies {
                    scan.noted.append(
                        AuditFinding(
                            .init(rawValue: a.code), "record \(position) notes: \(a.message)", record: position))
                }
                continue
            }
            scan.entries.append(.init(position: position, record: nil, tag: f.tag, epoch: nil))
            let (nonce, sealed) = try load(f, from: file)
            if let finding = whyNot(
                sealed, nonce: nonce, frame: f, at: position, previous: previous, floor: floor, framed: framed,
                scan: scan)
            {
                scan.findings.append(finding)
            }
        }
    }

    /// Why a record does not open in its place: sealed under a retired key, authentic at another
    /// position, authentic but after another record, or not authentic at all (nil when an
    /// `accept` after it settled it).
    private func whyNot(
        _ sealed: [UInt8], nonce: [UInt8], frame f: Framed, at position: Int, previous: [UInt8], floor: UInt32,
        framed: [Framed], scan: HistoryScan
    ) -> AuditFinding? {
        // Opens under an epoch whose retirement it comes after (or differs at its last record):
        // an old copy of the history, extended by someone who knew the old password, put back.
        if let (e, _) = open(sealed, nonce: nonce, position: position, previousTag: previous, from: floor),
            let anchor = epochKeys.retiredAt[e]
        {
            if position > anchor.count {
                return AuditFinding(
                    .logRecordSuperseded,
                    """
                        record \(position) is sealed under the key of epoch \(e), which a password change retired \
                        after record \(anchor.count): someone who knew an old password wrote it
                        """,
                    record: position)
            }
            return AuditFinding(
                .logForked,
                """
                    record \(position) is not the record the password change that retired epoch \(e) saw last: the \
                    history was replaced by another copy of itself
                    """,
                record: position)
        }
        if let old = keys.keys.filter({ $0 < floor }).first(where: { e in
            open(sealed, nonce: nonce, position: position, previousTag: previous, from: e).map { $0.0 < floor } ?? false
        }) {
            return AuditFinding(
                .logRecordSuperseded,
                """
                    record \(position) is sealed under the key of epoch \(old), which a password change before it \
                    retired: someone who knew an old password wrote it
                    """,
                record: position)
        }
        // Authentic elsewhere? Each record names its position in the clear (authenticated):
        // try it there, after each record of the log.
        let claimed = f.position
        let authenticElsewhere =
            claimed >= 1
            && (claimed == 1
                ? open(sealed, nonce: nonce, position: 1, previousTag: Self.zeroTag, from: 0) != nil
                : framed.contains { p in
                    open(sealed, nonce: nonce, position: claimed, previousTag: p.tag, from: 0) != nil
                })
        if let accepted = scan.acceptedAt, accepted > position { return nil }
        if authenticElsewhere && claimed != position {
            return AuditFinding(
                .logRecordMoved,
                "record \(position) belongs at position \(claimed): records were reordered, or some removed",
                record: position)
        }
        if authenticElsewhere {
            return AuditFinding(
                .logChainBroken,
                """
                    record \(position) is authentic but does not follow record \(position - 1): a record before it \
                    was changed, moved or removed
                    """,
                record: position)
        }
        return AuditFinding(
            .logRecordDamaged, "record \(position) fails authentication: it was altered, or comes from another log",
            record: position)
    }

    /// The log's end against its heads: cut inside a record, records cut off, a head naming
    /// another record or sealed under a retired key, a head or anchor missing.
    private func checkEnds(_ framed: [Framed], fileSize: Int, into scan: inout HistoryScan) {
        if scan.end < fileSize, scan.findings.allSatisfy({ $0.code != .logMalformed }) {
            let cut = [scan.storedHead, scan.anchor].compactMap { $0 }.map { $0.end > scan.end }.first ?? true
            if cut {
                scan.findings.append(
                    AuditFinding(.logTorn, "log.vlt ends inside a record after record \(framed.count): it was cut"))
            }  // else: a torn append past the head (a crash mid-append); the next writer removes it
        }
        for (name, stored) in [("log.head", scan.storedHead), ("log.anchor", scan.anchor)] {
            guard let head = stored else { continue }
            if head.count > framed.count {
                scan.findings.append(
                    AuditFinding(
                        .logTruncated,
                        "log.vlt holds \(framed.count) records, but \(name) says \(head.count): records were cut off"))
            } else if head.count > 0, Hex.encode(framed[head.count - 1].tag) != head.tag {
                scan.findings.append(
                    AuditFinding(
                        .logHeadMismatch, "record \(head.count) is not the one \(name) names: the log was replaced",
                        record: head.count))
            }
        }
        // A head is sealed in the epoch of the record it names (a crash between a record and its
        // head leaves a head of the epoch before, naming the record before): one sealed in
        // another, retired epoch was written with a retired key.
        for (name, head, e) in [
            ("log.head", scan.storedHead, scan.headEpoch), ("log.anchor", scan.anchor, scan.anchorEpoch)
        ] {
            guard let head,
                  let e,
                  e < epoch,
                  head.count >= 1,
                  head.count <= scan.entries.count else { continue }
            if let named = scan.entries[head.count - 1].epoch, named != e {
                scan.findings.append(
                    AuditFinding(
                        .logHeadSuperseded,
                        """
                            \(name) is sealed under the key of epoch \(e), which a password change retired: someone \
                            who knew an old password wrote it, or an old copy was put back
                            """
                    ))
            }
        }
        if scan.storedHead == nil && !scan.findings.contains(where: { $0.code == .logHeadDamaged }) {
            scan.findings.append(AuditFinding(.logHeadMissing, "log.head is missing"))
        }
        // Only a vault that writes anchors misses one; the first append after an upgrade writes it.
        if scan.anchor == nil, promisesHistory, scan.storedHeadIsSealedState,
            !scan.findings.contains(where: { $0.code == .logAnchorDamaged })
        {
            scan.findings.append(AuditFinding(.logAnchorMissing, "log.anchor is missing"))
        }
    }

    private var legacyHeadAD: [UInt8] { HistoryFormat.headMagic + Array(vaultID.utf8) }

    /// Reads `log.head`: a sealed state file (purpose log head). Sealed under an earlier epoch it
    /// counts only while the log's last record is of that epoch too (a password change that a
    /// crash stopped before its record); the check is made by ``scan()``'s caller through
    /// ``HistoryScan/headEpoch``. The format before sealed state is read in epoch 0.
    func readHead(into scan: inout HistoryScan) -> StoredHead? {
        guard FileSystem.kind(of: headPath) != .missing else { return nil }
        guard let bytes = try? FileSystem.readFile(headPath, limit: 1 << 16) else {
            scan.findings.append(AuditFinding(.logHeadDamaged, "log.head cannot be read"))
            return nil
        }
        if bytes.starts(with: HistoryFormat.headMagic), let legacy = keys[0] {
            let n = HistoryFormat.headMagic.count, nonceEnd = n + HistoryFormat.nonceSize
            if bytes.count > nonceEnd,
                let plain = XChaCha20Poly1305.open(
                    Array(bytes[nonceEnd...]), ad: legacyHeadAD, nonce: Array(bytes[n..<nonceEnd]), key: legacy),
                let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain))
            {
                scan.headEpoch = 0
                return head
            }
        } else if let (e, plain) = try? SealedState.openAnyEpoch(
            bytes, purpose: .logHead, role: VaultFile.logHead.name, keys: epochKeys, vaultID: vaultID),
            let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain))
        {
            scan.headEpoch = e
            scan.storedHeadIsSealedState = true
            return head
        }
        scan.findings.append(AuditFinding(.logHeadDamaged, "log.head fails authentication"))
        return nil
    }

    /// Reads `log.anchor`, the second copy of the head (sealed state, purpose log anchor).
    private func readAnchor(into scan: inout HistoryScan) -> StoredHead? {
        guard FileSystem.kind(of: anchorPath) != .missing else { return nil }
        guard let bytes = try? FileSystem.readFile(anchorPath, limit: 1 << 16),
            let (e, plain) = try? SealedState.openAnyEpoch(
                bytes, purpose: .logAnchor, role: VaultFile.logAnchor.name, keys: epochKeys, vaultID: vaultID),
            let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain))
        else {
            scan.findings.append(AuditFinding(.logAnchorDamaged, "log.anchor fails authentication"))
            return nil
        }
        scan.anchorEpoch = e
        return head
    }
}
