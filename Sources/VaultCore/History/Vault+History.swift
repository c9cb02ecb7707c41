#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// MARK: - The vault's side

extension Vault {
    /// Reads and checks the history (no lock needed: records are only ever appended).
    package func history() throws -> HistoryScan {
        var scan = try HistoryLog(vault: self).scan()
        scan.findings += indexWitness(scan)
        return scan
    }

    /// The history as ``history()`` reads it, but read again under the writer lock when that
    /// read has findings: a change being committed by another thread or process at that moment
    /// (its index ahead of its log record for an instant) must not look like damage. For a
    /// process that acts on findings while others write (the receiver: a batch committing as
    /// another station's request is authenticated).
    package func settledHistory() throws -> HistoryScan {
        let scan = try history()
        guard !(scan.findings.isEmpty && scan.noted.isEmpty) else { return scan }
        return try store.withWriterLock { _ in try history() }
    }

    /// What the index witnesses against `scan`: it never applied records the log did not hold,
    /// so a log shorter than the most it applied was put back from an older copy.
    func indexWitness(_ scan: HistoryScan) -> [AuditFinding] {
        guard let high = indexedLogHigh(),
            scan.exists,
            high > scan.entries.count
        else { return [] }
        return [
            AuditFinding(
                .rolledBack,
                """
                the history holds \(scan.entries.count) records, and index.db had applied \(high): log.vlt and \
                its heads were put back from an older copy
                """
            )
        ]
    }

    /// The head `log.head` names (count and last tag), read without scanning the log: what
    /// `upload` sends as `X-Vault-Log-Head`, so the back office keeps a copy of the head
    /// elsewhere (which catches a rollback of the whole folder). Nil when there is none or it
    /// does not open under the current key.
    package func storedHead() -> HistoryHead? {
        guard let log = try? HistoryLog(vault: self) else { return nil }
        var scan = HistoryScan()
        return log.readHead(into: &scan).flatMap { head in
            Hex.decode(head.tag).map { HistoryHead(count: head.count, tag: $0) }
        }
    }

    /// ``storedHead()`` read under the writer lock: the head once no append is under way (an
    /// append writes the head, then more, before it lets the lock go).
    package func settledHead() throws -> HistoryHead? {
        try store.withWriterLock { _ in storedHead() }
    }

    /// Fails unless this process can append to the history: the vault folder (where the log's
    /// heads are replaced), the log and the index must be writable. What a command that sends
    /// documents checks first, so that nothing goes out that the history cannot record.
    package func checkHistoryWritable() throws {
        for path in [store.root, store.path(.log), store.path(.index)]
        where FileSystem.kind(of: path) != .missing && !Platform.isWritable(path) {
            throw VaultError(.io, "the history cannot be recorded: \(path) is not writable")
        }
    }

    /// Appends `record` to the history, under the writer lock.
    /// - Returns: the new head.
    @discardableResult
    package func appendToHistory(_ record: HistoryRecord) throws -> HistoryHead {
        try store.withWriterLock { lock in try appendToHistory(record, lock) }
    }

    /// Appends `record` as ``appendToHistory(_:)`` does.
    /// - Parameter whileLocked: given the step before the writer lock is let go: a process that
    ///   follows the history (reading the head without the lock) learns of its own records in
    ///   their order, before anyone sees the head they made.
    /// - Returns: where it went (the head before it and after it): a process that follows the
    ///   history applies its own records from this, instead of reading the history again.
    package func appendStep(
        _ record: HistoryRecord, whileLocked: (HistoryStep) -> Void = { _ in }
    ) throws -> HistoryStep {
        try store.withWriterLock { lock in
            let step = try appendStep(record, lock)
            whileLocked(step)
            return step
        }
    }

    /// Appends `record`, holding the writer lock. Before it, a vault without a log
    /// gets one (a `begin` record naming the documents present), and documents that a killed
    /// command committed without recording are recorded (`adopt`) — only those that
    /// authenticate under this vault's key and that the log never saw removed, and only when
    /// the chain is whole, so nothing an attacker without the password put there is taken in.
    /// A removal a crash interrupted (`remove.pending`) is finished first.
    ///
    /// The log's tail is checked against its sealed head, not read whole (``HistoryLog/verifiedTail()``);
    /// the index keeps what the history says about documents, so nothing is replayed.
    /// - Parameter pending: ids `record` itself adds (they are on disk already).
    @discardableResult
    func appendToHistory(
        _ record: HistoryRecord, _ lock: WriterLock, pending: Set<DocumentID> = []
    ) throws -> HistoryHead {
        try appendStep(record, lock, pending: pending).after
    }

    /// ``appendToHistory(_:_:pending:)``, telling where the record went.
    func appendStep(_ record: HistoryRecord, _ lock: WriterLock, pending: Set<DocumentID> = []) throws -> HistoryStep {
        try appendSteps([record], lock, pending: pending)[0]
    }

    /// Appends `records` in order, as ``appendStep(_:_:pending:)`` appends one, with one fsync
    /// of the log and one new head for them all (a receiver's group of batches).
    /// - Returns: where each went.
    func appendSteps(
        _ records: [HistoryRecord], _ lock: WriterLock, pending: Set<DocumentID> = []
    ) throws -> [HistoryStep] {
        try withIndex(lock) { index in
            let initial = records[0].operation == .`init` || records[0].operation == .clone
            var writer = try historyWriter(index: index, lock, initial: initial)
            if records[0].operation != .remove, let interrupted = writer.log.pendingRemoval() {
                try finishRemoval(interrupted, writer: &writer, interrupted: true)
            }
            if !initial { try prelude(&writer, pending: pending) }
            var before = HistoryHead(count: writer.tail.count, tag: writer.tail.tag)
            var steps: [HistoryStep] = []
            for (record, tail) in zip(records, try writer.append(records)) {
                let after = HistoryHead(count: tail.count, tag: tail.tag)
                steps.append(HistoryStep(before: before, after: after, record: record))
                before = after
            }
            return steps
        }
    }

    /// What comes before a command's own record: a `begin` record for a vault that never had a
    /// history, or an `adopt` record for documents a killed command committed unrecorded.
    func prelude(_ writer: inout HistoryWriter, pending: Set<DocumentID>) throws {
        if let scan = writer.scan,
            !scan.exists && scan.storedHead == nil && scan.anchor == nil && (config.isLegacy || store.source != nil)
        {
            // Only a vault/1 vault may never have had a history; from vault/2 on a missing
            // log stays a finding until a password holder accepts the loss.
            let objects = try store.objectIDs().subtracting(pending)
            try writer.append(
                HistoryRecord(
                    .begin, documents: authenticatedDocuments(objects.sorted()),
                    detail: "the vault had no history; these documents were present"))
        } else if writer.whole {
            var unlogged = try writer.index.unlogged().filter { !pending.contains($0) }
            if !unlogged.isEmpty {
                // The index's flag alone is not trusted (anyone can clear it): what the history
                // itself names is not adopted again. A full scan, only when there is a candidate.
                let named = try writer.log.scan(keepRecords: false).projected()
                let known = unlogged.filter { named.present[$0] != nil || named.removed[$0] != nil }
                if !known.isEmpty {
                    let index = writer.index
                    try index.write(writer.lock) { try index.markLogged(known) }
                    unlogged.removeAll { known.contains($0) }
                }
            }
            let adopted = authenticatedDocuments(unlogged)
            if !adopted.isEmpty {
                try writer.append(
                    HistoryRecord(
                        .adopt, documents: adopted, detail: "committed by a command that ended before recording them"))
            }
        }
    }

    /// The history, ready to append to, with the index caught up with it: the tail verified
    /// against the sealed head, and the records the index has not applied (a crash between a
    /// record and its application) applied. When the tail does not verify, the whole log is
    /// read and the index's view of it derived again.
    /// - Parameter initial: the record is the first of a new log (`init`, `clone`).
    func historyWriter(index: DocumentIndex, _ lock: WriterLock, initial: Bool = false) throws -> HistoryWriter {
        try checkKeyEpoch(lock)
        let log = try HistoryLog(vault: self)
        if let tail = log.verifiedTail() {
            var state = try index.stateOrEmpty()
            if let missed = log.records(after: state, upTo: tail) {
                if !missed.records.isEmpty {
                    try index.write(lock) {
                        var projection = IndexProjection(index: index)
                        for (n, r) in missed.records.enumerated() {
                            try r.apply(at: state.logCount + n + 1, to: &projection)
                        }
                        state = try index.stateOrEmpty()
                        (state.logCount, state.logEnd, state.logTag) = (tail.count, tail.end, Hex.encode(tail.tag))
                        state.logEpoch = missed.epoch
                        state.removed = try index.counts(documents: false).removed
                        try index.writeState(state)
                    }
                }
                return HistoryWriter(
                    vault: self, log: log, lock: lock, tail: tail, index: index, whole: true, scan: nil)
            }
        }
        var scan = try log.scan(keepRecords: false)
        if initial && !scan.exists { scan = HistoryScan.settled(scan) }
        if !scan.findings.isEmpty {
            let codes = Array(Set(scan.findings.map(\.code.rawValue))).sorted().joined(separator: ", ")
            VaultNotices.post(
                """
                the history has \(scan.findings.count == 1 ? "a finding" : "\(scan.findings.count) findings") \
                (\(codes)): 
                """
                    + "records that do not verify count for nothing; an audit lists them")
        }
        try index.write(lock) {
            try deriveHistory(index, from: scan, state: scan.documentState(), lock)
            var state = try index.stateOrEmpty()
            state.removed = try index.counts(documents: false).removed
            try index.writeState(state)
        }
        return HistoryWriter(
            vault: self, log: log, lock: lock, tail: LogTail(scan), index: index, whole: scan.findings.isEmpty,
            scan: scan)
    }

    /// Fails unless `vault.json` is still of this vault's key epoch: a password change that ran
    /// while this command did (passwd refuses while another command holds the vault, but a lock
    /// file can be removed) would otherwise get a record or an envelope sealed under the key it
    /// retired — refused afterwards as an old password's. Checked under the writer lock, which
    /// the change holds throughout.
    func checkKeyEpoch(_ lock: WriterLock) throws {
        guard store.source == nil,
            let onDisk = try? store.readConfig(),
            onDisk.keyEpoch != keys.epoch
        else { return }
        throw VaultError(
            .busy,
            """
            the password changed while this command ran (key epoch \(keys.epoch) → \(onDisk.keyEpoch)); nothing \
            more was changed
            """,
            hint: "run the command again with the new password")
    }

    /// Accepts what is wrong with the history (an audit that accepts the loss): appends an
    /// `accept` record naming the documents whose envelopes authenticate and the findings it
    /// settles. Audits report nothing from before it; the record itself stays in the chain.
    /// - Returns: the findings it settled.
    package func acceptHistoryLoss() throws -> [AuditFinding] {
        try store.withWriterLock { lock in
            try withIndex(lock) { index in
                let scan = try HistoryLog(vault: self).scan()
                let settled = scan.findings + scan.noted
                var writer = try historyWriter(index: index, lock)
                writer.tail.findings = []
                let documents = authenticatedDocuments(try store.objectIDs().sorted())
                let codes = Array(Set(settled.map(\.code.rawValue))).sorted()
                try writer.append(
                    HistoryRecord(
                        .accept, documents: documents,
                        detail: "a password holder accepted: "
                            + (codes.isEmpty ? "nothing was wrong" : codes.joined(separator: ", "))))
                return settled
            }
        }
    }

    /// The documents among `ids` whose envelope header (or captured record) authenticates under
    /// this vault's key.
    private func authenticatedDocuments(_ ids: [DocumentID]) -> [HistoryRecord.Document] {
        ids.compactMap { id in (try? storedRecord(id)).map(HistoryRecord.Document.init) }
    }

    /// A send the history could not record is not made: a delivery missing from the audit
    /// trail is worse than one not made.
    package func refuseUnrecordedSend() throws {
        do {
            try checkHistoryWritable()
        } catch let e as VaultError {
            throw VaultError(
                e.code, e.message + "; nothing was sent",
                hint: "a send the history cannot record is not made: make the vault folder writable "
                    + "(it is read-only to this user, or on a read-only file system)")
        }
    }

    /// Fails when the history the destination list comes from does not verify: put back from an
    /// older copy, cut, forked, or with records that do not authenticate. Each destination's
    /// recipients and receipt key are in that history, so an older copy could send a sealed
    /// destination's documents in the clear, or count a delivery without its receipt: nothing is
    /// sent until a password holder has audited the vault and accepted what it found.
    package func refuseUntrustedDestinationList() throws {
        let scan = try history()
        let untrusted = scan.findings.filter { $0.code == .rolledBack || $0.code.rawValue.hasPrefix("log-") }
        guard !untrusted.isEmpty else { return }
        let codes = Array(Set(untrusted.map(\.code.rawValue))).sorted().joined(separator: ", ")
        throw VaultError(
            .vaultDamaged,
            """
            the history does not verify (\(codes)): the destinations, their recipients and receipt keys \
            come from it, so nothing is sent
            """,
            hint: "audit the vault and, once what it found is understood, accept it; then send again")
    }

    /// Fails when one of `records` was removed according to the history and its object is
    /// back (a resurrected document): such a document is not sent anywhere.
    package func refuseResurrected(_ records: [DocumentRecord]) throws {
        let back = try withIndex { index in try records.compactMap { r in try index.removal(of: r.id).map { (r, $0) } }
        }
        guard let (first, position) = back.first else { return }
        throw Self.resurrected(first, position: position, more: back.count - 1)
    }

    static func resurrected(_ first: DocumentRecord, position: Int, more: Int) -> VaultError {
        VaultError(
            .vaultDamaged,
            """
            document \(first.id) (\(first.metadata.name)) was removed (history record \(position)) and its object \
            is back
            """
                + (more > 0 ? ", and \(more) more" : "") + "; nothing was sent",
            remedy: .auditAndRemoveAgain(first.id))
    }
}

/// A history append in progress: the log's tail, and the index kept in step with each record.
struct HistoryWriter {
    let vault: Vault
    let log: HistoryLog
    /// The writer lock the append holds.
    let lock: WriterLock
    var tail: LogTail
    let index: DocumentIndex
    /// True when the chain is whole (nothing is adopted otherwise).
    let whole: Bool
    /// The whole-log scan, when the tail did not verify and the log was read.
    let scan: HistoryScan?

    /// Appends `record` and applies it to the index, with the index's position in the history.
    mutating func append(_ record: HistoryRecord) throws {
        try append([record])
    }

    /// Appends `records` in order (one write and one fsync of the log: ``HistoryLog/append(_:to:)``)
    /// and applies them to the index in one transaction.
    /// - Returns: the tail after each.
    @discardableResult
    mutating func append(_ records: [HistoryRecord]) throws -> [LogTail] {
        let tails = try log.append(records, to: tail)
        tail = tails[tails.count - 1]
        let (index, log, lock) = (self.index, self.log, self.lock)
        try index.write(lock) {
            var projection = IndexProjection(index: index)
            for (record, at) in zip(records, tails) { try record.apply(at: at.count, to: &projection) }
            var state = try index.stateOrEmpty()
            let last = tails[tails.count - 1]
            (state.logCount, state.logEnd, state.logTag) = (last.count, last.end, Hex.encode(last.tag))
            state.logEpoch = log.epoch
            // A password holder accepted the log as it is.
            if records.contains(where: { $0.operation == .accept }) { state.logHigh = nil }
            state.removed = try index.counts(documents: false).removed
            try index.writeState(state)
        }
        return tails
    }
}
