#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The vault's open index connection, made on first use and kept for the vault's life.
final class IndexHolder: @unchecked Sendable {
    // @unchecked: every access to `index` and `lastStatus` holds `lock`.
    let lock = RecursiveLock()
    var index: DocumentIndex?
    /// What the last check found, before any repair (for `verify` and `audit`).
    var lastStatus: Vault.IndexStatus = .current
    /// True while this vault's ``IntakeBatch`` commits (under the writer lock): its own
    /// `intake.pending` is not an interrupted one.
    var committingIntake = false
}

extension Vault {
    /// What opening the index found. `otherEpoch`: sealed in another key epoch (a password
    /// change a crash stopped before it sealed the index again, or an old copy put back): never
    /// read, rebuilt like a missing one.
    package enum IndexStatus: Sendable, Equatable { case current, missing, damaged, stale, otherEpoch }

    /// Runs `body` with the index, first made current with the objects: reconciled with
    /// `objects/` when its stamp differs (what changed is read, nothing else), rebuilt from the
    /// objects and the history when it is missing, damaged, of another key epoch or has lost
    /// rows. Repairs take the writer lock.
    /// - Parameter known: records of objects the caller just wrote (a reconcile need not read them).
    /// - Parameter full: count the document rows too (reads the smallest of the index's B-trees:
    ///   for commands that read every row anyway, and before saying a document is not found).
    ///   Rows of removed documents are always counted (there are few).
    /// - Parameter ownChanges: the caller's own changes to `objects/`, each stamp pair taken
    ///   under the writer lock (an add session's commits): when they chain from the index's
    ///   stamp to the folder's, the index is current but for them, and nothing is reconciled — a
    ///   bulk add looks up each document's twin without listing `objects/` again.
    func withIndex<R>(
        known: [DocumentID: DocumentRecord] = [:], full: Bool = false,
        ownChanges: [(before: String, after: String)] = [], _ body: (DocumentIndex) throws -> R
    ) throws -> R {
        try withIndex(lock: nil, known: known, full: full, ownChanges: ownChanges, body)
    }

    /// ``withIndex(known:full:_:)`` for a caller that holds the writer lock (repairs use it).
    /// - Parameter ownChanges: the caller's own changes to `objects/` (the stamp before and after
    ///   each, under the lock): when they account for all of the stamp's change, the index is
    ///   current (the caller writes the rows).
    func withIndex<R>(
        _ lock: WriterLock, known: [DocumentID: DocumentRecord] = [:], full: Bool = false,
        ownChanges: [(before: String, after: String)] = [], _ body: (DocumentIndex) throws -> R
    ) throws -> R {
        lock.check(store)
        return try withIndex(lock: lock, known: known, full: full, ownChanges: ownChanges, body)
    }

    private func withIndex<R>(
        lock: WriterLock?, known: [DocumentID: DocumentRecord], full: Bool,
        ownChanges: [(before: String, after: String)], _ body: (DocumentIndex) throws -> R
    ) throws -> R {
        do {
            return try withCheckedIndex(lock: lock, known: known, full: full, ownChanges: ownChanges, body)
        } catch let damaged as DocumentIndex.RowDamaged {
            // A row a lookup touched does not open: rebuilt, and the lookup made once more.
            VaultNotices.post("\(damaged.what); rebuilt index.db from the history and the objects")
            try holding(lock) { lock in
                indexHolder.lock.lock()
                defer { indexHolder.lock.unlock() }
                indexHolder.lastStatus = .damaged
                let high = Self.high(of: try openIndex())
                try rebuildIndex(try freshIndexFile(lock), known: known, keptHigh: high, lock)
            }
            do {
                return try withCheckedIndex(lock: lock, known: known, full: full, ownChanges: ownChanges, body)
            } catch let again as DocumentIndex.RowDamaged {
                throw VaultError(.vaultDamaged, again.what)
            }
        }
    }

    private func withCheckedIndex<R>(
        lock: WriterLock?, known: [DocumentID: DocumentRecord], full: Bool,
        ownChanges: [(before: String, after: String)], _ body: (DocumentIndex) throws -> R
    ) throws -> R {
        indexHolder.lock.lock()
        defer { indexHolder.lock.unlock() }
        // A received batch a crash interrupted goes first: its objects must not be adopted.
        if !indexHolder.committingIntake, store.source == nil,
            FileSystem.kind(of: store.path(.pendingIntake)) != .missing
        {
            try holding(lock) { lock in try rollBackInterruptedIntake(lock) }
        }
        var index = try openIndex()
        var status = try checkIndex(index, full: full)
        // A command that acts on every document checks every row against the commitment first.
        var unverified = false
        if full, status == .current || status == .stale, case .current(let state)? = try index.readState(),
            !(try index.verifyRows(against: state))
        {
            unverified = true
            status = .damaged
        }
        if status == .stale, !ownChanges.isEmpty, case .current(let state)? = try index.readState() {
            var at: String? = state.objects
            for change in ownChanges { at = change.before == at ? change.after : nil }
            if at == objectsStamp() { status = .current }
        }
        if indexHolder.lastStatus != .damaged || status != .current { indexHolder.lastStatus = status }
        // Records the index has not applied (a writer killed between its record and the index)
        // first: a reconcile then knows every removal, and never takes a document put back
        // after one as new. (A rebuild derives the history itself.)
        if status == .current || status == .stale, try historyBehind(index) {
            try holding(lock) { lock in _ = try historyWriter(index: index, lock) }
        }
        if status != .current {
            try holding(lock) { lock in
                let again = unverified ? .damaged : try checkIndex(index, full: full)
                if again == .damaged {
                    VaultNotices.post(
                        "index.db does not match what vault last wrote (rows added, removed or changed by someone "
                            + "else, or damaged); rebuilt it from the history and the objects")
                }
                if again == .stale {
                    try reconcileIndex(index, known: known, lock)
                } else if again == .damaged {
                    let high = Self.high(of: index)
                    index = try freshIndexFile(lock)
                    try rebuildIndex(index, known: known, keptHigh: high, lock)
                } else if again != .current {
                    try rebuildIndex(index, known: known, lock)
                }
            }
        }
        return try body(index)
    }

    /// Runs `body` with `lock`, or with the writer lock taken for it when the caller holds none.
    func holding<R>(_ lock: WriterLock?, _ body: (WriterLock) throws -> R) throws -> R {
        if let lock { return try body(lock) }
        return try store.withWriterLock(body)
    }

    /// The open connection. A file vault does not take as its own (``DocumentIndex/Rejected``:
    /// not a regular file, another layout, anything in it vault's schema does not have) is
    /// deleted and a new one made, which the objects and the history fill; a file SQLite cannot
    /// read is moved aside (the objects are the truth).
    private func openIndex() throws -> DocumentIndex {
        if let index = indexHolder.index { return index }
        let index: DocumentIndex
        do {
            index = try DocumentIndex(vault: self)
        } catch let rejected as DocumentIndex.Rejected {
            if !rejected.earlierVersion {
                VaultNotices.post("\(rejected.why); made it anew from the history and the objects")
                indexHolder.lastStatus = .damaged
            }
            let path = store.path(.index)
            for suffix in ["", "-wal", "-shm"] {
                switch FileSystem.kind(of: path + suffix, following: false) {
                case .missing: continue
                case .directory:
                    // A folder in its place (anything in it is nobody's but the attacker's).
                    do { try FileManager.default.removeItem(atPath: path + suffix) } catch {
                        throw VaultError(
                            .io, "cannot remove the folder \(path + suffix) in the index's place", cause: error)
                    }
                default: try FileSystem.remove(path + suffix)
                }
            }
            index = try DocumentIndex(vault: self)
        } catch let e as VaultError where e.code == .vaultDamaged {
            let path = store.path(.index)
            for suffix in ["", "-wal", "-shm"] where FileSystem.kind(of: path + suffix) != .missing {
                try FileSystem.rename(
                    path + suffix, to: store.root + "/index.damaged-\(Int(Date().timeIntervalSince1970)).db" + suffix)
            }
            index = try DocumentIndex(vault: self)
        }
        indexHolder.index = index
        return index
    }

    /// True when the log's verified tail is past what the index has applied. A log shorter than
    /// what the index applied (the history, or it with its heads, put back from an older copy)
    /// is told once: the index was the only witness of the records that are gone.
    private func historyBehind(_ index: DocumentIndex) throws -> Bool {
        guard store.source == nil || FileSystem.kind(of: store.path(.log)) != .missing else { return false }
        let state = try index.stateOrEmpty()
        let log = try HistoryLog(vault: self)
        guard let tail = try log.verifiedTail() else {
            // The heads do not vouch for the tail (damaged, or put back with an older log): the
            // whole log is read, and the index follows what it says.
            let scan = try log.scan(keepRecords: false)
            if scan.exists, scan.entries.count < (state.logHigh ?? state.logCount) {
                VaultNotices.post(
                    """
                        the history holds \(scan.entries.count) records, and index.db had applied \
                        \(state.logHigh ?? state.logCount): log.vlt 
                        """
                        + "and its heads were put back from an older copy; compare the head the back office kept")
            }
            return scan.entries.count != state.logCount || Hex.encode(scan.head.tag) != state.logTag
        }
        if tail.count < (state.logHigh ?? state.logCount) {
            VaultNotices.post(
                """
                    the history holds \(tail.count) records, and index.db had applied \
                    \(state.logHigh ?? state.logCount): log.vlt 
                    """
                    + "and its heads were put back from an older copy; compare the head the back office kept")
        }
        return tail.count != state.logCount || Hex.encode(tail.tag) != state.logTag
    }

    /// How the index stands against the objects, without changing anything.
    func checkIndex(_ index: DocumentIndex, full: Bool = true) throws -> IndexStatus {
        guard let row = try index.readState() else { return .missing }
        let state: DocumentIndex.State
        switch row {
        case .current(let s): state = s
        case .otherEpoch: return .otherEpoch
        case .unauthentic: return .damaged
        }
        let counts = try index.counts(documents: full)
        guard counts.documents.map({ $0 == state.documents }) ?? true && counts.removed == state.removed else {
            return .damaged
        }
        if store.source != nil {
            return try index.ids().union(index.unreadableIDs()) == store.objectIDs() ? .current : .stale
        }
        return objectsStamp() == state.objects ? .current : .stale
    }

    /// `objects/`'s inode, modification and change times: any entry created, renamed or
    /// removed in it changes them, and the change time cannot be set back.
    func objectsStamp() -> String {
        guard store.source == nil,
              let st = Platform.statTimes(store.objectsPath) else { return "" }
        return st
    }

    /// Brings the rows in line with `objects/`: rows of objects that are gone are deleted, and
    /// objects the index does not know are read (their headers only). Those the history removed
    /// are kept as resurrected (never adopted; export and upload refuse them).
    private func reconcileIndex(_ index: DocumentIndex, known: [DocumentID: DocumentRecord], _ lock: WriterLock) throws
    {
        if store.source == nil {
            sweepTemporaries(objects: true)
            if FileSystem.kind(of: store.stagingPath) == .directory { AtomicFile.sweep(store.stagingPath) }
        }
        let objects = try store.objectIDs()
        let rows = try index.ids(), unreadable = try index.unreadableIDs()
        try index.write(lock) {
            for id in rows.subtracting(objects) { try index.delete(id) }
            for id in unreadable.subtracting(objects) { try index.setUnreadable(id, nil) }
            for id in objects.subtracting(rows).sorted() {
                if let record = known[id] {
                    try index.put(record, logged: try index.isRemoved(id))
                    continue
                }
                do {
                    // the header only
                    try index.put(try storedRecord(id), logged: try index.isRemoved(id))
                    try index.setUnreadable(id, nil)
                } catch let e as VaultError where e.code == .io && store.source == nil {
                    throw e
                } catch {
                    try index.setUnreadable(id, VaultError.from(error))
                }
            }
            try commitIndexState(index, lock)
        }
    }

    /// Makes the index anew from the objects (reusing the records of an `index.vlt` of the
    /// version before, which need not be opened again) and the history (which documents it
    /// names, which it removed, how far it goes).
    /// - Parameter keptHigh: the most records the index this one replaces had applied (a witness
    ///   a rebuild keeps: ``DocumentIndex/State/logHigh``).
    func rebuildIndex(
        _ index: DocumentIndex, known: [DocumentID: DocumentRecord] = [:], keptHigh: Int? = nil, _ lock: WriterLock
    ) throws {
        let keptHigh = max(keptHigh ?? 0, Self.high(of: index) ?? 0)
        let objects = try store.objectIDs()
        var known = known
        if FileSystem.kind(of: store.indexPath) != .missing, let bytes = try? FileSystem.readFile(store.indexPath),
            let old = try? VaultIndex.open(bytes, keys: keys, vaultID: config.id)
        {
            known.merge(old.records) { a, _ in a }
        }
        let log = try HistoryLog(vault: self)
        let scan = try log.scan(keepRecords: false)
        let state = scan.documentState()
        try index.write(lock) {
            try index.clear()
            for id in objects.sorted() {
                if let record = known[id] {
                    try index.put(record, logged: true)
                    continue
                }
                do {
                    try index.put(try storedRecord(id), logged: true)
                } catch let e as VaultError where e.code == .io && store.source == nil {
                    throw e
                } catch {
                    try index.setUnreadable(id, VaultError.from(error))
                }
            }
            try deriveHistory(index, from: scan, state: state, keptHigh: keptHigh, lock)
            try commitIndexState(index, lock)
        }
        if FileSystem.kind(of: store.indexPath) != .missing { try FileSystem.remove(store.indexPath) }
    }

    /// Sets what the index keeps from the history to what `scan` says (inside a transaction):
    /// which documents a record names (the others are adopted by the next change, when the
    /// chain is whole), which were removed, and how far the history goes.
    func deriveHistory(
        _ index: DocumentIndex, from scan: HistoryScan,
        state: (present: [DocumentID: (HistoryRecord.Document, Int)], removed: [DocumentID: Int]), keptHigh: Int? = nil,
        _ lock: WriterLock
    ) throws {
        try index.clearHistoryRows()
        // A broken chain adopts nothing: every document counts as named.
        let whole = scan.findings.isEmpty || !scan.exists
        if !whole { try index.db.execute("UPDATE documents SET logged = 1") }
        try index.markLogged(Array(state.present.keys) + Array(state.removed.keys))
        for (id, d) in scan.removedDocuments() {
            if let at = state.removed[id] { try index.addRemoved(d, position: at) }
        }
        for (_, documents) in scan.deliveries() {
            for (id, delivery) in documents { try index.addDelivery(id, delivery) }
        }
        // Rows were made from the envelopes: the history's tag changes are made to them.
        for (id, change) in scan.projected().tagChanges {
            guard let row = try index.record(id) else { continue }
            try index.put(DocumentRecord(id: id, metadata: row.metadata.retagged(change)), logged: true)
        }
        var s = try index.stateOrEmpty()
        s.logCount = scan.exists ? scan.entries.count : 0
        s.logEnd = scan.exists ? scan.end : 0
        s.logTag = Hex.encode(scan.head.tag)
        s.logEpoch = scan.exists ? scan.entries.last?.epoch : nil
        let destinations = scan.projected().destinations
        s.destinations = destinations.destinations.isEmpty ? nil : destinations
        s.logHigh = scan.acceptedAt != nil ? nil : max(s.logHigh ?? 0, keptHigh ?? 0)
        try index.writeState(s)
    }

    /// Rewrites the state row after rows changed (inside a transaction): the counts and the
    /// stamp of `objects/` as they are now; the history position is kept.
    func commitIndexState(_ index: DocumentIndex, _ lock: WriterLock) throws {
        var s = try index.stateOrEmpty()
        s.documents += index.takeDelta()
        s.removed = try index.counts(documents: false).removed
        s.objects = objectsStamp()
        try index.writeState(s)
    }

    /// Makes a new, empty index (a new vault or replica).
    func createIndex(_ lock: WriterLock) throws {
        try withIndex(lock) { _ in }
    }

    /// Rebuilds the index from the objects and the history now (`verify` found a row that
    /// differs from its envelope).
    func rebuildIndexNow() throws {
        try store.withWriterLock { lock in
            indexHolder.lock.lock()
            defer { indexHolder.lock.unlock() }
            let high = Self.high(of: try openIndex())
            try rebuildIndex(try freshIndexFile(lock), keptHigh: high, lock)
        }
    }

    /// The most records `index` ever applied, when its state row opens.
    static func high(of index: DocumentIndex) -> Int? {
        guard case .current(let s)? = try? index.readState() else { return nil }
        return s.logHigh ?? s.logCount
    }

    /// ``high(of:)`` of this vault's index as it stands (nothing repaired).
    func indexedLogHigh() -> Int? {
        indexHolder.lock.lock()
        defer { indexHolder.lock.unlock() }
        guard store.source == nil,
              let index = try? openIndex() else { return nil }
        return Self.high(of: index)
    }

    /// Closes the index, deletes its files and opens a new, empty one (which a rebuild then
    /// fills): an index that did not verify is never cleared in place, so nothing of the old
    /// file — a page, a row, an object of someone else's — outlives the rebuild.
    private func freshIndexFile(_ lock: WriterLock) throws -> DocumentIndex {
        indexHolder.index = nil
        let path = store.path(.index)
        for suffix in ["", "-wal", "-shm"] where FileSystem.kind(of: path + suffix, following: false) == .file {
            try FileSystem.remove(path + suffix)
        }
        return try openIndex()
    }

    /// How the index stands, without repairing it (`audit`), and the index when it can be read.
    func inspectIndex() throws -> (status: IndexStatus, index: DocumentIndex) {
        indexHolder.lock.lock()
        defer { indexHolder.lock.unlock() }
        let index = try openIndex()
        return (try checkIndex(index), index)
    }

    /// The ids the index has rows for, as it stands (nothing is repaired or read from the objects).
    func indexedIDs() -> Set<DocumentID> {
        indexHolder.lock.lock()
        defer { indexHolder.lock.unlock() }
        guard let index = try? openIndex(),
              case .current? = try? index.readState() else { return [] }
        return (try? index.ids()) ?? []
    }
}
