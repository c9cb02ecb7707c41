import Foundation

/// The constants of the history log (docs/FORMAT.md, "History").
enum HistoryFormat {
    /// `log.vlt` starts with these 8 bytes and a version byte.
    static let magic = Array("VAULTLOG".utf8)
    static let version: UInt8 = 1
    static var fileHeader: [UInt8] { magic + [version] }
    /// `log.head` starts with these 8 bytes.
    static let headMagic = Array("VAULTLHD".utf8)
    static let tagSize = 16
    static let nonceSize = EnvelopeFormat.nonceSize
    /// A record's sealed length (nonce and tag included) is at most this.
    static let maxRecordSize = 64 << 20
    /// `crypto_kdf` subkey of the vault key that seals records and the head.
    static let subkeyID: UInt64 = 2
    static let subkeyContext = "vaultlog"
}

/// What reading the history found: the records in file order (those that authenticate in
/// their place), the log's head as it stands, and what is wrong with the chain.
public struct HistoryScan: Sendable {
    /// One whole record of the file.
    public struct Entry: Sendable {
        /// Its position in the file, from 1.
        public let position: Int
        /// The record, when it authenticates at this position after its predecessor.
        public let record: HistoryRecord?
        /// Its authentication tag.
        public let tag: [UInt8]
    }

    /// Every whole record, in file order.
    public var entries: [Entry] = []
    /// Problems with the log as it is now.
    public var findings: [AuditFinding] = []
    /// Problems earlier writers found and sealed into their records (``HistoryRecord/anomalies``).
    public var noted: [AuditFinding] = []
    /// True when `log.vlt` exists.
    public var exists = false
    /// The head kept beside the log (`log.head`), if it could be read.
    var storedHead: StoredHead?
    /// The byte offset after the last whole record.
    var end = HistoryFormat.fileHeader.count
    /// The file's size.
    var fileSize = 0

    /// The log's head as it stands: its whole records and the last one's tag.
    public var head: HistoryHead {
        HistoryHead(count: entries.count, tag: entries.last?.tag ?? [UInt8](repeating: 0, count: HistoryFormat.tagSize))
    }

    /// The records that authenticate, in order.
    public var records: [(position: Int, record: HistoryRecord)] {
        entries.compactMap { e in e.record.map { (e.position, $0) } }
    }

    /// Replays the records: the documents the log says are in the vault (with the record that
    /// added them) and those it says were removed (with the record that removed them).
    public func documentState() -> (present: [String: (HistoryRecord.Document, Int)], removed: [String: Int]) {
        var present: [String: (HistoryRecord.Document, Int)] = [:]
        var removed: [String: Int] = [:]
        for (position, record) in records {
            switch record.operation {
            case .add, .import, .adopt, .pull:
                for d in record.documents { present[d.id] = (d, position) }
            case .begin:
                present = [:]
                for d in record.documents { present[d.id] = (d, position) }
            case .remove:
                for d in record.documents { present[d.id] = nil; removed[d.id] = position }
            case .`init`, .export, .upload, .passwd, .push, .clone:
                break
            }
        }
        return (present, removed)
    }
}

/// `log.head`: sealed, so it cannot be forged without the password.
struct StoredHead: Codable, Equatable {
    var count: Int
    /// Offset after the last record it covers.
    var end: Int
    var tag: String
}

/// The vault's history log: `log.vlt`, an append-only file of sealed, chained records, and
/// `log.head`, the sealed count and tag of the last record written (which tells a log cut at a
/// record boundary from a complete one).
///
/// Written by hand: this is vault's own format (a few lines over libsodium's AEAD), and no
/// package of this field does a sealed append-only log.
struct HistoryLog {
    let store: VaultStore
    let key: SecretBytes
    let vaultID: String
    let random: any RandomSource

    var path: String { store.root + "/log.vlt" }
    var headPath: String { store.root + "/log.head" }
    var pendingRemovalPath: String { store.root + "/remove.pending" }

    init(vault: Vault) throws {
        store = vault.store
        key = try SubkeyDerivation.derive(from: vault.vaultKey, id: HistoryFormat.subkeyID, context: HistoryFormat.subkeyContext)
        vaultID = vault.config.id
        random = vault.random
    }

    /// The associated data of the record at `position` (from 1): the vault, the position and
    /// the previous record's tag. So a record opens only in its place, after its predecessor.
    func associatedData(position: Int, previousTag: [UInt8]) -> [UInt8] {
        var ad = HistoryFormat.fileHeader + Array(vaultID.utf8)
        ad.appendBigEndian(UInt64(position))
        return ad + previousTag
    }

    static let zeroTag = [UInt8](repeating: 0, count: HistoryFormat.tagSize)

    // MARK: Reading

    private struct Framed { var offset: Int; var end: Int; var position: Int; var nonce: [UInt8]; var sealed: [UInt8]
        var tag: [UInt8] { Array(sealed.suffix(HistoryFormat.tagSize)) } }

    /// Reads and checks the whole log.
    func scan() throws -> HistoryScan {
        var scan = HistoryScan()
        scan.storedHead = readHead(into: &scan)
        guard FileSystem.kind(of: path) != .missing else {
            if let head = scan.storedHead {
                scan.findings.append(AuditFinding("log-missing", "log.vlt is missing, but log.head says it held \(head.count) records"))
            }
            scan.end = 0
            return scan
        }
        scan.exists = true
        let bytes = try FileSystem.readFile(path, limit: 1 << 30)
        scan.fileSize = bytes.count
        guard bytes.starts(with: HistoryFormat.fileHeader) else {
            scan.findings.append(AuditFinding("log-malformed", "log.vlt does not start with the history magic and version"))
            scan.end = 0
            return scan
        }
        // Framing: lengths only, no keys.
        var framed: [Framed] = []
        var offset = HistoryFormat.fileHeader.count
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { break }
            let length = Int(bytes[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard length >= 8 + HistoryFormat.nonceSize + HistoryFormat.tagSize, length <= HistoryFormat.maxRecordSize else {
                scan.findings.append(AuditFinding("log-malformed", "bytes at offset \(offset) of log.vlt are not a record (length \(length))",
                                                  record: framed.count + 1))
                break
            }
            guard offset + 4 + length <= bytes.count else { break }
            let body = offset + 12
            let claimed = bytes[offset + 4..<body].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            framed.append(Framed(offset: offset, end: offset + 4 + length, position: Int(clamping: claimed),
                                 nonce: Array(bytes[body..<body + HistoryFormat.nonceSize]),
                                 sealed: Array(bytes[body + HistoryFormat.nonceSize..<offset + 4 + length])))
            offset = offset + 4 + length
        }
        scan.end = framed.last?.end ?? HistoryFormat.fileHeader.count
        // Authentication: each record in its place after its predecessor.
        for (i, f) in framed.enumerated() {
            let position = i + 1
            let previous = i == 0 ? Self.zeroTag : framed[i - 1].tag
            let record = open(f.sealed, nonce: f.nonce, position: position, previousTag: previous)
            scan.entries.append(.init(position: position, record: record, tag: f.tag))
            if let record {
                for a in record.anomalies {
                    scan.noted.append(AuditFinding(a.code, "record \(position) notes: \(a.message)", record: position))
                }
                continue
            }
            // Authentic elsewhere? Each record names its position in the clear (authenticated):
            // try it there, after each record of the log.
            let claimed = f.position
            let authenticElsewhere = claimed >= 1 && (claimed == 1
                ? open(f.sealed, nonce: f.nonce, position: 1, previousTag: Self.zeroTag) != nil
                : framed.contains { p in open(f.sealed, nonce: f.nonce, position: claimed, previousTag: p.tag) != nil })
            if authenticElsewhere && claimed != position {
                scan.findings.append(AuditFinding("log-record-moved", "record \(position) belongs at position \(claimed): records were reordered, or some removed",
                                                  record: position))
            } else if authenticElsewhere {
                scan.findings.append(AuditFinding("log-chain-broken", "record \(position) is authentic but does not follow record \(position - 1): a record before it was changed, moved or removed",
                                                  record: position))
            } else {
                scan.findings.append(AuditFinding("log-record-damaged", "record \(position) fails authentication: it was altered, or comes from another log",
                                                  record: position))
            }
        }
        if scan.end < bytes.count, scan.findings.allSatisfy({ $0.code != "log-malformed" }) {
            let cut = scan.storedHead.map { $0.end > scan.end } ?? true
            if cut {
                scan.findings.append(AuditFinding("log-torn", "log.vlt ends inside a record after record \(framed.count): it was cut"))
            }   // else: a torn append past the head (a crash mid-append); the next writer removes it
        }
        if let head = scan.storedHead {
            if head.count > framed.count {
                scan.findings.append(AuditFinding("log-truncated", "log.vlt holds \(framed.count) records, but its head says \(head.count): records were cut off"))
            } else if head.count > 0, Hex.encode(framed[head.count - 1].tag) != head.tag {
                scan.findings.append(AuditFinding("log-head-mismatch", "record \(head.count) is not the one log.head names: the log was replaced",
                                                  record: head.count))
            }
        } else if !scan.findings.contains(where: { $0.code == "log-head-damaged" }) {
            scan.findings.append(AuditFinding("log-head-missing", "log.head is missing"))
        }
        return scan
    }

    private func open(_ sealed: [UInt8], nonce: [UInt8], position: Int, previousTag: [UInt8]) -> HistoryRecord? {
        guard let plain = XChaCha20Poly1305.open(sealed, ad: associatedData(position: position, previousTag: previousTag), nonce: nonce, key: key)
        else { return nil }
        return try? JSONDecoder().decode(HistoryRecord.self, from: Data(plain))
    }

    private var headAD: [UInt8] { HistoryFormat.headMagic + Array(vaultID.utf8) }

    private func readHead(into scan: inout HistoryScan) -> StoredHead? {
        guard FileSystem.kind(of: headPath) != .missing else { return nil }
        let n = HistoryFormat.headMagic.count, nonceEnd = n + HistoryFormat.nonceSize
        guard let bytes = try? FileSystem.readFile(headPath, limit: 1 << 16), bytes.count > nonceEnd,
              bytes.starts(with: HistoryFormat.headMagic),
              let plain = XChaCha20Poly1305.open(Array(bytes[nonceEnd...]), ad: headAD, nonce: Array(bytes[n..<nonceEnd]), key: key),
              let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain)) else {
            scan.findings.append(AuditFinding("log-head-damaged", "log.head fails authentication"))
            return nil
        }
        return head
    }

    // MARK: Writing

    /// Appends `record` (the caller holds the writer lock). First makes the file whole: a new
    /// log gets its header, a torn append past the head (a crash) is cut off. What is wrong
    /// beyond that is not repaired — records are never rewritten — but noted in the new
    /// record's anomalies, so audits keep reporting it.
    /// - Returns: the new head.
    @discardableResult
    func append(_ record: HistoryRecord, to scan: HistoryScan) throws -> HistoryHead {
        var record = record
        // What this append removes or replaces (a cut tail, a stale or missing head, an
        // unreadable file) is sealed into the record; damaged records stay in the file anyway.
        record.anomalies += scan.findings.filter { !["log-record-damaged", "log-record-moved", "log-chain-broken"].contains($0.code) }
            .map { HistoryRecord.Anomaly(code: $0.code, message: $0.message) }
        let file: FileDescriptor
        var end = scan.end
        if !scan.exists || end == 0 {
            if scan.exists {   // unreadable from its first bytes: kept aside, never overwritten
                try FileSystem.rename(path, to: store.root + "/log.damaged-\(Int(Date().timeIntervalSince1970)).vlt")
            }
            try AtomicFile.write(HistoryFormat.fileHeader, to: path, random: random)
            end = HistoryFormat.fileHeader.count
        }
        file = try FileDescriptor.openOrCreate(path)
        defer { file.close() }
        if scan.exists && scan.fileSize > end { try file.truncate(to: UInt64(end)) }
        let position = (scan.exists && scan.end > 0 ? scan.entries.count : 0) + 1
        let previous = position == 1 ? Self.zeroTag : scan.entries[position - 2].tag
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let nonce = random.bytes(HistoryFormat.nonceSize)
        let sealed = XChaCha20Poly1305.seal(Array(try encoder.encode(record)), ad: associatedData(position: position, previousTag: previous),
                                            nonce: nonce, key: key)
        var frame = [UInt8]()
        frame.appendBigEndian(UInt32(8 + nonce.count + sealed.count))
        frame.appendBigEndian(UInt64(position))
        frame += nonce + sealed
        try file.write(frame, at: UInt64(end))
        try file.sync()
        let tag = Array(sealed.suffix(HistoryFormat.tagSize))
        try writeHead(StoredHead(count: position, end: end + frame.count, tag: Hex.encode(tag)))
        return HistoryHead(count: position, tag: tag)
    }

    // MARK: Removals in progress

    private var pendingAD: [UInt8] { Array("VAULTRMP".utf8) + Array(vaultID.utf8) }

    /// Writes `remove.pending`: the documents a removal is about to unlink, sealed (so nobody
    /// without the password can make vault record a removal it did not do).
    func writePendingRemoval(_ documents: [HistoryRecord.Document]) throws {
        let nonce = random.bytes(HistoryFormat.nonceSize)
        let sealed = XChaCha20Poly1305.seal(Array(try JSONEncoder().encode(documents)), ad: pendingAD, nonce: nonce, key: key)
        try AtomicFile.write(Array("VAULTRMP".utf8) + nonce + sealed, to: pendingRemovalPath, random: random)
    }

    /// The documents of a removal that was interrupted, if `remove.pending` is there and
    /// authenticates (a file that does not is ignored, and reported by the audit).
    func pendingRemoval() -> [HistoryRecord.Document]? {
        guard FileSystem.kind(of: pendingRemovalPath) != .missing,
              let bytes = try? FileSystem.readFile(pendingRemovalPath, limit: 64 << 20), bytes.count > 8 + HistoryFormat.nonceSize,
              bytes.starts(with: Array("VAULTRMP".utf8)),
              let plain = XChaCha20Poly1305.open(Array(bytes[(8 + HistoryFormat.nonceSize)...]), ad: pendingAD,
                                                 nonce: Array(bytes[8..<8 + HistoryFormat.nonceSize]), key: key) else { return nil }
        return try? JSONDecoder().decode([HistoryRecord.Document].self, from: Data(plain))
    }

    private func writeHead(_ head: StoredHead) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let nonce = random.bytes(HistoryFormat.nonceSize)
        let sealed = XChaCha20Poly1305.seal(Array(try encoder.encode(head)), ad: headAD, nonce: nonce, key: key)
        try AtomicFile.write(HistoryFormat.headMagic + nonce + sealed, to: headPath, random: random)
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

// MARK: - The vault's side

extension Vault {
    /// Reads and checks the history (no lock needed: records are only ever appended).
    public func history() throws -> HistoryScan { try HistoryLog(vault: self).scan() }

    /// Appends `record` to the history, under the writer lock.
    /// - Returns: the new head.
    @discardableResult
    public func record(_ record: HistoryRecord) throws -> HistoryHead {
        try store.withLock { try recordLocked(record) }
    }

    /// Appends `record`; the caller holds the writer lock. Before it, a vault without a log
    /// gets one (a `begin` record naming the documents present), and documents that a killed
    /// command committed without recording are recorded (`adopt`) — only those that
    /// authenticate under this vault's key and that the log never saw removed, and only when
    /// the chain is whole, so nothing an attacker without the password put there is taken in.
    /// A removal a crash interrupted (`remove.pending`) is finished first.
    /// - Parameter pending: ids `record` itself adds (they are on disk already).
    @discardableResult
    func recordLocked(_ record: HistoryRecord, pending: Set<DocumentID> = []) throws -> HistoryHead {
        let log = try HistoryLog(vault: self)
        var scan = try log.scan()
        if record.operation != .remove, let interrupted = log.pendingRemoval() {
            try finishRemoval(interrupted, log: log, scan: scan, adding: pending)
            scan = try log.scan()
        }
        if record.operation != .`init` && record.operation != .clone {
            let objects = try store.objectIDs().subtracting(pending)
            if !scan.exists && scan.storedHead == nil {
                let begin = HistoryRecord(.begin, documents: authenticatedDocuments(objects.sorted()),
                                          detail: "the vault had no history; these documents were present")
                try log.append(begin, to: scan)
                scan = try log.scan()
            } else if scan.findings.isEmpty {
                let state = scan.documentState()
                let unlogged = objects.filter { state.present[$0.hex] == nil && state.removed[$0.hex] == nil }
                let adopted = authenticatedDocuments(unlogged.sorted())
                if !adopted.isEmpty {
                    try log.append(HistoryRecord(.adopt, documents: adopted,
                                                 detail: "committed by a command that ended before recording them"), to: scan)
                    scan = try log.scan()
                }
            }
        }
        return try log.append(record, to: scan)
    }

    /// Removes documents (the caller holds the writer lock): `remove.pending` names them first,
    /// then the objects go, the index is updated and the removal recorded, and the pending file
    /// goes last. A crash anywhere is finished by the next writer (``finishRemoval``), so the
    /// history never says present what is gone, nor removed what is still there.
    func removeLocked(_ documents: [HistoryRecord.Document]) throws {
        let log = try HistoryLog(vault: self)
        if let earlier = log.pendingRemoval() { try finishRemoval(earlier, log: log, scan: try log.scan()) }
        try log.writePendingRemoval(documents)
        try finishRemoval(documents, log: log, scan: nil)
    }

    /// Unlinks whatever of `documents` is left, updates the index, appends the removal record
    /// unless the log's last record is already it, and deletes `remove.pending`.
    /// - Parameter adding: ids the caller's own record adds (not to be adopted meanwhile).
    private func finishRemoval(_ documents: [HistoryRecord.Document], log: HistoryLog, scan: HistoryScan?,
                               adding: Set<DocumentID> = []) throws {
        let ids = documents.compactMap { DocumentID(hex: $0.id) }
        for id in ids where FileSystem.kind(of: store.objectPath(id)) != .missing { try FileSystem.remove(store.objectPath(id)) }
        try FileSystem.syncDirectory(store.objectsPath)
        var index = try loadIndex().index
        for id in ids { index.records[id] = nil }
        try saveIndex(index)
        let last = scan?.records.last?.record
        let recorded = last.map { $0.operation == .remove && Set($0.documents.map(\.id)) == Set(documents.map(\.id)) } ?? false
        if !recorded {
            try recordLocked(HistoryRecord(.remove, documents: documents,
                                           detail: scan == nil ? nil : "finished after the removing command was interrupted"), pending: adding)
        }
        try FileSystem.remove(log.pendingRemovalPath)
        try FileSystem.syncDirectory(store.root)
    }

    /// The documents among `ids` whose envelope header authenticates under this vault's key.
    private func authenticatedDocuments(_ ids: [DocumentID]) -> [HistoryRecord.Document] {
        ids.compactMap { id in
            guard let reader = try? openEnvelope(id) else { return nil }
            return HistoryRecord.Document(DocumentRecord(id: id, metadata: reader.metadata))
        }
    }

    /// Fails when one of `records` was removed according to the history and its object is
    /// back (a resurrected document): such a document is not sent anywhere.
    public func refuseResurrected(_ records: [DocumentRecord]) throws {
        let removed = try history().documentState().removed
        let back = records.filter { removed[$0.id.hex] != nil }
        guard let first = back.first else { return }
        throw VaultError(.vaultDamaged,
                         "document \(first.id) (\(first.metadata.name)) was removed (history record \(removed[first.id.hex]!)) and its object is back"
                         + (back.count > 1 ? ", and \(back.count - 1) more" : "") + "; nothing was sent",
                         hint: "run 'vault audit'; 'vault remove \(first.id.hex.prefix(8))' removes it again")
    }
}
