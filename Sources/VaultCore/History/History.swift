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
package struct HistoryScan: Sendable {
    /// One whole record of the file.
    public struct Entry: Sendable {
        /// Its position in the file, from 1.
        public let position: Int
        /// The record, when it authenticates at this position after its predecessor.
        public let record: HistoryRecord?
        /// Its authentication tag.
        public let tag: [UInt8]
        /// The key epoch it was sealed in, when it authenticates.
        public let epoch: UInt32?
    }

    /// Every whole record, in file order.
    public var entries: [Entry] = []
    /// Problems with the log as it is now.
    public var findings: [AuditFinding] = []
    /// Problems earlier writers found and sealed into their records (``HistoryRecord/anomalies``).
    public var noted: [AuditFinding] = []
    /// True when `log.vlt` exists.
    public var exists = false
    /// The head kept beside the log (`log.head`), if it could be read, and its key epoch.
    var storedHead: StoredHead?
    var headEpoch: UInt32?
    /// The second copy of the head (`log.anchor`), and its key epoch.
    var anchor: StoredHead?
    var anchorEpoch: UInt32?
    /// True when `log.head` is a sealed state file: written by a version that also writes `log.anchor`.
    var storedHeadIsSealedState = false
    /// The position of the last `accept` record, if any.
    public var acceptedAt: Int?
    /// The byte offset after the last whole record.
    var end = HistoryFormat.fileHeader.count
    /// The file's size.
    var fileSize = 0

    /// The log's head as it stands: its whole records and the last one's tag.
    public var head: HistoryHead {
        HistoryHead(count: entries.count, tag: entries.last?.tag ?? [UInt8](repeating: 0, count: HistoryFormat.tagSize))
    }

    /// The same scan with nothing to note: the `accept` record seals no anomalies of its own
    /// (it names what it settles in its detail).
    static func settled(_ scan: HistoryScan) -> HistoryScan {
        var copy = scan
        copy.findings = []
        return copy
    }

    /// The records that authenticate, in order.
    public var records: [(position: Int, record: HistoryRecord)] {
        entries.compactMap { e in e.record.map { (e.position, $0) } }
    }

    /// What the records say about documents, kept while scanning instead of the records.
    struct Lean {
        var present: [String: (HistoryRecord.Document, Int)] = [:]
        var removed: [String: Int] = [:]
        /// The document of each removal (the last record that removed it).
        var removedDocuments: [String: HistoryRecord.Document] = [:]
        /// The first confirmed delivery of each document, by destination.
        var deliveries: [String: [String: Delivery]] = [:]

        /// Whether ``apply(_:at:)`` reads the documents of a record of `operation`.
        static func reads(_ operation: HistoryRecord.Operation) -> Bool {
            switch operation {
            case .add, .import, .adopt, .pull, .begin, .accept, .remove, .upload: true
            case .`init`, .export, .passwd, .push, .clone, .upgrade: false
            }
        }

        mutating func apply(_ record: HistoryRecord, at position: Int) {
            switch record.operation {
            case .add, .import, .adopt, .pull:
                for d in record.documents { present[d.id] = (d, position) }
            case .begin, .accept:
                present = [:]
                for d in record.documents { present[d.id] = (d, position) }
            case .remove:
                for d in record.documents { present[d.id] = nil; removed[d.id] = position; removedDocuments[d.id] = d }
            case .upload:
                for destination in Destination.confirmed(by: record) {
                    for d in record.documents where deliveries[destination]?[d.id] == nil {
                        deliveries[destination, default: [:]][d.id] = Delivery(destination: destination, record: position,
                                                                               timeMillis: record.timeMillis, detail: record.detail)
                    }
                }
            case .`init`, .export, .passwd, .push, .clone, .upgrade:
                break
            }
        }
    }
    /// Set when the scan did not keep the records.
    var lean: Lean?

    /// Replays the records: the documents the log says are in the vault (with the record that
    /// added them) and those it says were removed (with the record that removed them).
    public func documentState() -> (present: [String: (HistoryRecord.Document, Int)], removed: [String: Int]) {
        if let lean { return (lean.present, lean.removed) }
        var state = Lean()
        for (position, record) in records { state.apply(record, at: position) }
        return (state.present, state.removed)
    }

    /// The first confirmed delivery of each document, by destination and id.
    public func deliveries() -> [String: [String: Delivery]] {
        if let lean { return lean.deliveries }
        var state = Lean()
        for (position, record) in records { state.apply(record, at: position) }
        return state.deliveries
    }

    /// The document each removal named, by id (the last removal of each).
    func removedDocuments() -> [String: HistoryRecord.Document] {
        if let lean { return lean.removedDocuments }
        var state = Lean()
        for (position, record) in records { state.apply(record, at: position) }
        return state.removedDocuments
    }
}

/// Where the next record goes: what an append needs to know about the log.
struct LogTail {
    /// True when `log.vlt` exists.
    var exists: Bool
    /// Whole records, the offset after the last, and its tag.
    var count: Int
    var end: Int
    var tag: [UInt8]
    /// The file's size (bytes past `end` are a torn append, cut off by the next one).
    var fileSize: Int
    /// What is wrong with the log, sealed into the next record's anomalies.
    var findings: [AuditFinding]

    /// The tail of a whole-log scan.
    init(_ scan: HistoryScan) {
        self.init(exists: scan.exists, count: scan.entries.count, end: scan.end, tag: scan.entries.last?.tag ?? HistoryLog.zeroTag,
                  fileSize: scan.fileSize, findings: scan.findings)
    }

    init(exists: Bool, count: Int, end: Int, tag: [UInt8], fileSize: Int, findings: [AuditFinding]) {
        (self.exists, self.count, self.end, self.tag, self.fileSize, self.findings) = (exists, count, end, tag, fileSize, findings)
    }
}

/// `log.head` and `log.anchor`: sealed, so they cannot be forged without the password.
struct StoredHead: Codable, Equatable {
    var count: Int
    /// Offset after the last record it covers.
    var end: Int
    var tag: String
}

/// The vault's history log: `log.vlt`, an append-only file of sealed, chained records, and two
/// sealed anchors of its tail — `log.head` and `log.anchor`, the count and tag of the last record
/// written — which tell a log cut at a record boundary from a complete one.
///
/// Records are sealed under the log key of the key epoch they were written in: the epochs of
/// a log never go down, so a record sealed under a superseded key after a newer one (someone
/// who knew an old password) does not authenticate in its place.
///
/// Written by hand: this is vault's own format (a few lines over libsodium's AEAD), and no
/// package of this field does a sealed append-only log.
struct HistoryLog {
    let store: VaultStore
    /// The log key of each epoch this vault knows, and the current epoch.
    let keys: [UInt32: SecretBytes]
    let epoch: UInt32
    let epochKeys: EpochKeys
    let vaultID: String
    let random: any RandomSource
    /// True when the vault's format promises a history (`vault/2`): a missing log is a finding.
    let promisesHistory: Bool

    var path: String { store.root + "/log.vlt" }
    var headPath: String { store.root + "/log.head" }
    var anchorPath: String { store.root + "/log.anchor" }
    var pendingRemovalPath: String { store.root + "/remove.pending" }
    var lossAcceptedPath: String { store.root + "/log.accepted" }

    init(vault: Vault) throws {
        store = vault.store
        var keys: [UInt32: SecretBytes] = [:]
        for e in vault.keys.epochs {
            keys[e] = try SubkeyDerivation.derive(from: vault.keys.key(epoch: e)!, id: HistoryFormat.subkeyID, context: HistoryFormat.subkeyContext)
        }
        self.keys = keys
        epoch = vault.keys.epoch
        epochKeys = vault.keys
        vaultID = vault.config.id
        random = vault.random
        // A cache folder of a store read in place keeps a history of what was sent from it, which
        // starts when the cache does.
        promisesHistory = !vault.config.isLegacy && vault.store.source == nil
    }

    var key: SecretBytes { keys[epoch]! }

    /// The associated data of the record at `position` (from 1): the vault, the position and
    /// the previous record's tag. So a record opens only in its place, after its predecessor.
    func associatedData(position: Int, previousTag: [UInt8]) -> [UInt8] {
        var ad = HistoryFormat.fileHeader + Array(vaultID.utf8)
        ad.appendBigEndian(UInt64(position))
        return ad + previousTag
    }

    static let zeroTag = [UInt8](repeating: 0, count: HistoryFormat.tagSize)

    // MARK: Reading

    /// A record's place in the file and its tag; its nonce and seal are read when needed, so a
    /// scan holds one record at a time, not the file (62 MB for 100,000 records).
    private struct Framed { var offset: Int; var end: Int; var position: Int; var tag: [UInt8] }

    /// Reads a framed record's nonce and seal.
    private func load(_ f: Framed, from file: OpenFile) throws -> (nonce: [UInt8], sealed: [UInt8]) {
        let body = try file.read(count: f.end - (f.offset + 12), at: UInt64(f.offset + 12))
        guard body.count == f.end - (f.offset + 12) else { throw VaultError(.vaultDamaged, "log.vlt changed while it was read") }
        return (Array(body[..<HistoryFormat.nonceSize]), Array(body[HistoryFormat.nonceSize...]))
    }

    /// Reads and checks the whole log.
    /// - Parameter keepRecords: keep every record in ``HistoryScan/entries`` (for a full listing of the history);
    ///   without, only what the records say about documents is kept (``HistoryScan/documentState()``),
    ///   so an audit of a history of 100,000 records does not hold them all.
    func scan(keepRecords: Bool = true) throws -> HistoryScan {
        var scan = HistoryScan()
        if !keepRecords { scan.lean = HistoryScan.Lean() }
        scan.storedHead = readHead(into: &scan)
        scan.anchor = readAnchor(into: &scan)
        guard FileSystem.kind(of: path) != .missing else {
            if let head = scan.storedHead ?? scan.anchor {
                scan.findings.append(AuditFinding(.logMissing, "log.vlt is missing, but its head says it held \(head.count) records"))
            } else if promisesHistory {
                scan.findings.append(AuditFinding(.logMissing, "log.vlt, log.head and log.anchor are missing, but this vault has kept a history since it was made: they were deleted"))
            }
            scan.end = 0
            return scan
        }
        scan.exists = true
        let file = try OpenFile.openForReading(path)
        defer { file.close() }
        let fileSize = Int(try file.size())
        scan.fileSize = fileSize
        guard try file.read(count: HistoryFormat.fileHeader.count, at: 0) == HistoryFormat.fileHeader else {
            scan.findings.append(AuditFinding(.logMalformed, "log.vlt does not start with the history magic and version"))
            scan.end = 0
            return scan
        }
        let framed = try frames(of: file, size: fileSize, into: &scan)
        scan.end = framed.last?.end ?? HistoryFormat.fileHeader.count
        try authenticate(framed, in: file, keepRecords: keepRecords, into: &scan)
        checkEnds(framed, fileSize: fileSize, into: &scan)
        return scan
    }

    /// The log's framing: each record's offsets, claimed position and tag, from lengths alone
    /// (no keys). Stops at the first length that cannot be a record's (a finding) or at a record
    /// that runs past the file's end.
    private func frames(of file: OpenFile, size fileSize: Int, into scan: inout HistoryScan) throws -> [Framed] {
        var framed: [Framed] = []
        var offset = HistoryFormat.fileHeader.count
        while offset < fileSize {
            guard fileSize - offset >= 12 else { break }
            let frameHead = try file.read(count: 12, at: UInt64(offset))
            let length = Int(UInt32(bigEndianBytes: frameHead[0..<4]))
            guard length >= 8 + HistoryFormat.nonceSize + HistoryFormat.tagSize, length <= HistoryFormat.maxRecordSize else {
                scan.findings.append(AuditFinding(.logMalformed, "bytes at offset \(offset) of log.vlt are not a record (length \(length))",
                                                  record: framed.count + 1))
                break
            }
            guard offset + 4 + length <= fileSize else { break }
            let claimed = UInt64(bigEndianBytes: frameHead[4..<12])
            let tag = try file.read(count: HistoryFormat.tagSize, at: UInt64(offset + 4 + length - HistoryFormat.tagSize))
            framed.append(Framed(offset: offset, end: offset + 4 + length, position: Int(clamping: claimed), tag: tag))
            offset = offset + 4 + length
        }
        return framed
    }

    /// Authenticates each record in its place after its predecessor, in its epoch or a later
    /// one; one that does not is a finding that says why (damaged, moved, chain broken, sealed
    /// under a retired key). Records before an `accept` are settled.
    private func authenticate(_ framed: [Framed], in file: OpenFile, keepRecords: Bool, into scan: inout HistoryScan) throws {
        var floor = keys.keys.min() ?? epoch
        for (i, f) in framed.enumerated() {
            let position = i + 1
            let previous = i == 0 ? Self.zeroTag : framed[i - 1].tag
            let (nonce, sealed) = try load(f, from: file)
            if let (e, record) = open(sealed, nonce: nonce, position: position, previousTag: previous, from: floor,
                                      documents: { keepRecords || HistoryScan.Lean.reads($0) }) {
                floor = e
                scan.entries.append(.init(position: position, record: scan.lean == nil ? record : nil, tag: f.tag, epoch: e))
                scan.lean?.apply(record, at: position)
                if record.operation == .accept {   // a password holder settled everything before it
                    scan.noted.removeAll()
                    scan.findings.removeAll { ($0.record ?? Int.max) < position }
                    scan.acceptedAt = position
                    continue
                }
                for a in record.anomalies {
                    scan.noted.append(AuditFinding(.init(rawValue: a.code), "record \(position) notes: \(a.message)", record: position))
                }
                continue
            }
            scan.entries.append(.init(position: position, record: nil, tag: f.tag, epoch: nil))
            if let finding = whyNot(sealed, nonce: nonce, frame: f, at: position, previous: previous, floor: floor, framed: framed, scan: scan) {
                scan.findings.append(finding)
            }
        }
    }

    /// Why a record does not open in its place: sealed under a retired key, authentic at another
    /// position, authentic but after another record, or not authentic at all (nil when an
    /// `accept` after it settled it).
    private func whyNot(_ sealed: [UInt8], nonce: [UInt8], frame f: Framed, at position: Int, previous: [UInt8], floor: UInt32,
                        framed: [Framed], scan: HistoryScan) -> AuditFinding? {
        if let old = keys.keys.filter({ $0 < floor }).first(where: { e in
            open(sealed, nonce: nonce, position: position, previousTag: previous, from: e).map { $0.0 < floor } ?? false }) {
            return AuditFinding(.logRecordSuperseded, "record \(position) is sealed under the key of epoch \(old), which a password change before it retired: someone who knew an old password wrote it",
                                record: position)
        }
        // Authentic elsewhere? Each record names its position in the clear (authenticated):
        // try it there, after each record of the log.
        let claimed = f.position
        let authenticElsewhere = claimed >= 1 && (claimed == 1
            ? open(sealed, nonce: nonce, position: 1, previousTag: Self.zeroTag, from: 0) != nil
            : framed.contains { p in open(sealed, nonce: nonce, position: claimed, previousTag: p.tag, from: 0) != nil })
        if let accepted = scan.acceptedAt, accepted > position { return nil }
        if authenticElsewhere && claimed != position {
            return AuditFinding(.logRecordMoved, "record \(position) belongs at position \(claimed): records were reordered, or some removed", record: position)
        }
        if authenticElsewhere {
            return AuditFinding(.logChainBroken, "record \(position) is authentic but does not follow record \(position - 1): a record before it was changed, moved or removed",
                                record: position)
        }
        return AuditFinding(.logRecordDamaged, "record \(position) fails authentication: it was altered, or comes from another log", record: position)
    }

    /// The log's end against its heads: cut inside a record, records cut off, a head naming
    /// another record or sealed under a retired key, a head or anchor missing.
    private func checkEnds(_ framed: [Framed], fileSize: Int, into scan: inout HistoryScan) {
        if scan.end < fileSize, scan.findings.allSatisfy({ $0.code != .logMalformed }) {
            let cut = [scan.storedHead, scan.anchor].compactMap { $0 }.map { $0.end > scan.end }.first ?? true
            if cut {
                scan.findings.append(AuditFinding(.logTorn, "log.vlt ends inside a record after record \(framed.count): it was cut"))
            }   // else: a torn append past the head (a crash mid-append); the next writer removes it
        }
        for (name, stored) in [("log.head", scan.storedHead), ("log.anchor", scan.anchor)] {
            guard let head = stored else { continue }
            if head.count > framed.count {
                scan.findings.append(AuditFinding(.logTruncated, "log.vlt holds \(framed.count) records, but \(name) says \(head.count): records were cut off"))
            } else if head.count > 0, Hex.encode(framed[head.count - 1].tag) != head.tag {
                scan.findings.append(AuditFinding(.logHeadMismatch, "record \(head.count) is not the one \(name) names: the log was replaced",
                                                  record: head.count))
            }
        }
        // A head is sealed in the epoch of the record it names (a crash between a record and its
        // head leaves a head of the epoch before, naming the record before): one sealed in
        // another, retired epoch was written with a retired key.
        for (name, head, e) in [("log.head", scan.storedHead, scan.headEpoch), ("log.anchor", scan.anchor, scan.anchorEpoch)] {
            guard let head, let e, e < epoch, head.count >= 1, head.count <= scan.entries.count else { continue }
            if let named = scan.entries[head.count - 1].epoch, named != e {
                scan.findings.append(AuditFinding(.logHeadSuperseded, "\(name) is sealed under the key of epoch \(e), which a password change retired: someone who knew an old password wrote it, or an old copy was put back"))
            }
        }
        if scan.storedHead == nil && !scan.findings.contains(where: { $0.code == .logHeadDamaged }) {
            scan.findings.append(AuditFinding(.logHeadMissing, "log.head is missing"))
        }
        // Only a vault that writes anchors misses one; the first append after an upgrade writes it.
        if scan.anchor == nil, promisesHistory, scan.storedHeadIsSealedState,
           !scan.findings.contains(where: { $0.code == .logAnchorDamaged }) {
            scan.findings.append(AuditFinding(.logAnchorMissing, "log.anchor is missing"))
        }
    }


    /// Opens a record under the log key of epoch `from` or a later one: the epoch and the record.
    /// - Parameter documents: whether a record of this operation needs its documents (they
    ///   are left out otherwise: a send names every document it sent).
    private func open(_ sealed: [UInt8], nonce: [UInt8], position: Int, previousTag: [UInt8], from: UInt32,
                      documents: (HistoryRecord.Operation) -> Bool = { _ in true }) -> (UInt32, HistoryRecord)? {
        let ad = associatedData(position: position, previousTag: previousTag)
        for e in keys.keys.sorted() where e >= from {
            if let plain = XChaCha20Poly1305.open(sealed, ad: ad, nonce: nonce, key: keys[e]!),
               let record = HistoryRecordReader.read(plain, documents: documents) ?? (try? JSONDecoder().decode(HistoryRecord.self, from: Data(plain))) {
                return (e, record)
            }
        }
        return nil
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
               let plain = XChaCha20Poly1305.open(Array(bytes[nonceEnd...]), ad: legacyHeadAD, nonce: Array(bytes[n..<nonceEnd]), key: legacy),
               let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain)) {
                scan.headEpoch = 0
                return head
            }
        } else if let (e, plain) = try? SealedState.openAnyEpoch(bytes, purpose: .logHead, role: "log.head", keys: epochKeys, vaultID: vaultID),
                  let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain)) {
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
              let (e, plain) = try? SealedState.openAnyEpoch(bytes, purpose: .logAnchor, role: "log.anchor", keys: epochKeys, vaultID: vaultID),
              let head = try? JSONDecoder().decode(StoredHead.self, from: Data(plain)) else {
            scan.findings.append(AuditFinding(.logAnchorDamaged, "log.anchor fails authentication"))
            return nil
        }
        scan.anchorEpoch = e
        return head
    }

    // MARK: Writing

    /// Appends `record` (the caller holds the writer lock). First makes the file whole: a new
    /// log gets its header, a torn append past the head (a crash) is cut off. What is wrong
    /// beyond that is not repaired — records are never rewritten — but noted in the new
    /// record's anomalies, so audits keep reporting it.
    /// - Returns: the new tail.
    @discardableResult
    func append(_ record: HistoryRecord, to tail: LogTail) throws -> LogTail {
        var record = record
        // What this append removes or replaces (a cut tail, a stale or missing head, an
        // unreadable file) is sealed into the record; damaged records stay in the file anyway.
        record.anomalies += tail.findings.filter { ![.logRecordDamaged, .logRecordMoved, .logChainBroken, .logRecordSuperseded].contains($0.code) }
            .map { HistoryRecord.Anomaly(code: $0.code.rawValue, message: $0.message) }
        let file: OpenFile
        var end = tail.end
        if !tail.exists || end == 0 {
            if tail.exists {   // unreadable from its first bytes: kept aside, never overwritten
                try FileSystem.rename(path, to: store.root + "/log.damaged-\(Int(Date().timeIntervalSince1970)).vlt")
            }
            try AtomicFile.write(HistoryFormat.fileHeader, to: path, random: random)
            end = HistoryFormat.fileHeader.count
        }
        file = try OpenFile.openOrCreate(path)
        defer { file.close() }
        if tail.exists && tail.fileSize > end { try file.truncate(to: UInt64(end)) }
        let position = (tail.exists && tail.end > 0 ? tail.count : 0) + 1
        let previous = position == 1 ? Self.zeroTag : tail.tag
        // The frame is made in one buffer, the record sealed in place: a send of 100,000
        // documents is a 15 MB record, and copies of it were most of that command's memory.
        let nonce = random.bytes(HistoryFormat.nonceSize)
        var frame = [UInt8]()
        frame.reserveCapacity(4 + 8 + nonce.count + 256 + record.documents.count * 170 + HistoryFormat.tagSize)
        frame.appendBigEndian(UInt32(0))   // the length, below
        frame.appendBigEndian(UInt64(position))
        frame += nonce
        let start = frame.count
        record.json(into: &frame)
        let plaintextCount = frame.count - start
        frame += [UInt8](repeating: 0, count: HistoryFormat.tagSize)
        let ad = associatedData(position: position, previousTag: previous)
        frame.withUnsafeMutableBytes { buffer in
            let region = UnsafeMutableRawBufferPointer(rebasing: buffer[start...])
            ad.withUnsafeBytes { a in nonce.withUnsafeBytes { n in key.withUnsafeBytes { k in
                // libsodium's AEAD encrypts in place (the plaintext and ciphertext may be the same bytes).
                XChaCha20Poly1305.seal(UnsafeRawBufferPointer(rebasing: region[..<plaintextCount]), into: region, ad: a, nonce: n, key: k)
            } } }
        }
        let length = UInt32(frame.count - 4)
        for i in 0..<4 { frame[i] = UInt8(truncatingIfNeeded: length >> (24 - 8 * UInt32(i))) }
        try file.write(frame, at: UInt64(end))
        try file.sync()
        let tag = Array(frame.suffix(HistoryFormat.tagSize))
        let head = StoredHead(count: position, end: end + frame.count, tag: Hex.encode(tag))
        try writeState(head, purpose: .logHead, role: "log.head", to: headPath)
        try writeState(head, purpose: .logAnchor, role: "log.anchor", to: anchorPath)
        return LogTail(exists: true, count: position, end: head.end, tag: tag, fileSize: head.end, findings: [])
    }

    /// The log's tail as `log.head` and `log.anchor` name it, checked against the file without
    /// reading its records: both sealed under the current key and equal, the file exactly as
    /// long as they say, and its last 16 bytes the tag they name. Nil when anything differs (a
    /// crash mid-append, an older vault's head, damage): the caller then reads the whole log.
    func verifiedTail() -> LogTail? {
        guard let headBytes = try? FileSystem.readFile(headPath, limit: 1 << 16),
              let anchorBytes = try? FileSystem.readFile(anchorPath, limit: 1 << 16),
              let (e1, h) = try? SealedState.openAnyEpoch(headBytes, purpose: .logHead, role: "log.head", keys: epochKeys, vaultID: vaultID),
              let (e2, a) = try? SealedState.openAnyEpoch(anchorBytes, purpose: .logAnchor, role: "log.anchor", keys: epochKeys, vaultID: vaultID),
              e1 == epoch, e2 == epoch,
              let head = try? JSONDecoder().decode(StoredHead.self, from: Data(h)),
              let anchor = try? JSONDecoder().decode(StoredHead.self, from: Data(a)), head == anchor,
              head.count >= 1, head.end > HistoryFormat.fileHeader.count + HistoryFormat.tagSize,
              let tag = Hex.decode(head.tag), tag.count == HistoryFormat.tagSize,
              let file = try? OpenFile.openForReading(path) else { return nil }
        defer { file.close() }
        guard let size = try? file.size(), size == UInt64(head.end),
              let last = try? file.read(count: HistoryFormat.tagSize, at: UInt64(head.end - HistoryFormat.tagSize)), last == tag,
              let first = try? file.read(count: HistoryFormat.fileHeader.count, at: 0), first == HistoryFormat.fileHeader else { return nil }
        return LogTail(exists: true, count: head.count, end: head.end, tag: tag, fileSize: head.end, findings: [])
    }

    /// The records after `after` up to `tail` (normally none or one: what the index has not
    /// applied yet), each authenticated in its place; nil when they do not follow (the log was
    /// replaced or cut since), and the caller reads the whole log.
    func records(after state: DocumentIndex.State, upTo tail: LogTail) -> [HistoryRecord]? {
        guard state.logEnd >= HistoryFormat.fileHeader.count, state.logEnd <= tail.end, state.logCount <= tail.count,
              let previous = Hex.decode(state.logTag) else { return nil }
        if state.logEnd == tail.end { return state.logCount == tail.count && previous == tail.tag ? [] : nil }
        guard tail.end - state.logEnd <= 256 << 20, let file = try? OpenFile.openForReading(path) else { return nil }
        defer { file.close() }
        guard let bytes = try? file.read(count: tail.end - state.logEnd, at: UInt64(state.logEnd)), bytes.count == tail.end - state.logEnd else { return nil }
        var out: [HistoryRecord] = []
        var offset = 0, position = state.logCount, tag = previous
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else { return nil }
            let length = Int(UInt32(bigEndianBytes: bytes[offset..<offset + 4]))
            guard length >= 8 + HistoryFormat.nonceSize + HistoryFormat.tagSize, offset + 4 + length <= bytes.count else { return nil }
            let body = offset + 12
            let sealed = Array(bytes[body + HistoryFormat.nonceSize..<offset + 4 + length])
            position += 1
            guard let (_, record) = open(sealed, nonce: Array(bytes[body..<body + HistoryFormat.nonceSize]), position: position,
                                         previousTag: tag, from: keys.keys.min() ?? epoch) else { return nil }
            out.append(record)
            tag = Array(sealed.suffix(HistoryFormat.tagSize))
            offset += 4 + length
        }
        return position == tail.count && tag == tail.tag ? out : nil
    }

    // MARK: Removals in progress

    /// Writes `remove.pending`: the documents a removal is about to unlink, sealed (so nobody
    /// without the password can make vault record a removal it did not do).
    func writePendingRemoval(_ documents: [HistoryRecord.Document]) throws {
        try writeState(documents, purpose: .pendingRemoval, role: "remove.pending", to: pendingRemovalPath)
    }

    /// What `remove.pending` holds: nothing when there is none, the documents of an interrupted
    /// removal when it authenticates under the current key, or why it was refused (a forged or
    /// damaged file, or one sealed under a superseded key, is never acted on; the audit reports it).
    func pendingRemovalState() -> (documents: [HistoryRecord.Document]?, refused: VaultError?) {
        guard FileSystem.kind(of: pendingRemovalPath) != .missing else { return (nil, nil) }
        do {
            let bytes = try FileSystem.readFile(pendingRemovalPath, limit: 64 << 20)
            let plain: [UInt8]
            let legacy = Array("VAULTRMP".utf8)
            if epoch == 0, bytes.starts(with: legacy), bytes.count > 8 + HistoryFormat.nonceSize,
               let p = XChaCha20Poly1305.open(Array(bytes[(8 + HistoryFormat.nonceSize)...]), ad: legacy + Array(vaultID.utf8),
                                              nonce: Array(bytes[8..<8 + HistoryFormat.nonceSize]), key: key) {
                plain = p
            } else {
                plain = try SealedState.open(bytes, purpose: .pendingRemoval, role: "remove.pending", keys: epochKeys, vaultID: vaultID,
                                             what: "remove.pending")
            }
            guard let documents = try? JSONDecoder().decode([HistoryRecord.Document].self, from: Data(plain)) else {
                return (nil, VaultError(.vaultDamaged, "remove.pending is malformed"))
            }
            return (documents, nil)
        } catch {
            return (nil, VaultError.from(error))
        }
    }

    /// The documents of a removal that was interrupted, if `remove.pending` authenticates.
    func pendingRemoval() -> [HistoryRecord.Document]? { pendingRemovalState().documents }

    private func writeState<T: Encodable>(_ value: T, purpose: SealedState.Purpose, role: String, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let sealed = try SealedState.seal(Array(try encoder.encode(value)), purpose: purpose, role: role, keys: epochKeys,
                                          vaultID: vaultID, random: random)
        try AtomicFile.write(sealed, to: path, random: random)
    }
}

// MARK: - The vault's side

extension Vault {
    /// Reads and checks the history (no lock needed: records are only ever appended).
    package func history() throws -> HistoryScan { try HistoryLog(vault: self).scan() }

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

    /// Fails unless this process can append to the history: the vault folder (where the log's
    /// heads are replaced), the log and the index must be writable. What a command that sends
    /// documents checks first, so that nothing goes out that the history cannot record.
    package func checkHistoryWritable() throws {
        for path in [store.root, store.root + "/log.vlt", store.root + "/" + DocumentIndex.fileName]
            where FileSystem.kind(of: path) != .missing && !Platform.isWritable(path) {
            throw VaultError(.io, "the history cannot be recorded: \(path) is not writable")
        }
    }

    /// Appends `record` to the history, under the writer lock.
    /// - Returns: the new head.
    @discardableResult
    package func record(_ record: HistoryRecord) throws -> HistoryHead {
        try store.withLock { try recordLocked(record) }
    }

    /// Appends `record`; the caller holds the writer lock. Before it, a vault without a log
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
    func recordLocked(_ record: HistoryRecord, pending: Set<DocumentID> = []) throws -> HistoryHead {
        try withIndex(locked: true) { index in
            let initial = record.operation == .`init` || record.operation == .clone
            var writer = try historyWriter(index: index, initial: initial)
            if record.operation != .remove, let interrupted = writer.log.pendingRemoval() {
                try finishRemoval(interrupted, writer: &writer, interrupted: true)
            }
            if !initial { try prelude(&writer, pending: pending) }
            try writer.append(record)
            return HistoryHead(count: writer.tail.count, tag: writer.tail.tag)
        }
    }

    /// What comes before a command's own record: a `begin` record for a vault that never had a
    /// history, or an `adopt` record for documents a killed command committed unrecorded.
    private func prelude(_ writer: inout HistoryWriter, pending: Set<DocumentID>) throws {
        if let scan = writer.scan, !scan.exists && scan.storedHead == nil && scan.anchor == nil && (config.isLegacy || store.source != nil) {
            // Only a vault/1 vault may never have had a history; from vault/2 on a missing
            // log stays a finding until a password holder accepts the loss.
            let objects = try store.objectIDs().subtracting(pending)
            try writer.append(HistoryRecord(.begin, documents: authenticatedDocuments(objects.sorted()),
                                            detail: "the vault had no history; these documents were present"))
        } else if writer.whole {
            let adopted = authenticatedDocuments(try writer.index.unlogged().filter { !pending.contains($0) })
            if !adopted.isEmpty {
                try writer.append(HistoryRecord(.adopt, documents: adopted, detail: "committed by a command that ended before recording them"))
            }
        }
    }

    /// The history, ready to append to, with the index caught up with it: the tail verified
    /// against the sealed head, and the records the index has not applied (a crash between a
    /// record and its application) applied. When the tail does not verify, the whole log is
    /// read and the index's view of it derived again.
    /// - Parameter initial: the record is the first of a new log (`init`, `clone`).
    func historyWriter(index: DocumentIndex, initial: Bool = false) throws -> HistoryWriter {
        let log = try HistoryLog(vault: self)
        if let tail = log.verifiedTail() {
            var state = try index.stateOrEmpty()
            if let missed = log.records(after: state, upTo: tail) {
                if !missed.isEmpty {
                    try index.write {
                        for (n, r) in missed.enumerated() { try apply(r, at: state.logCount + n + 1, to: index) }
                        state = try index.stateOrEmpty()
                        (state.logCount, state.logEnd, state.logTag) = (tail.count, tail.end, Hex.encode(tail.tag))
                        state.removed = try index.counts(documents: false).removed
                        try index.writeState(state)
                    }
                }
                return HistoryWriter(vault: self, log: log, tail: tail, index: index, whole: true, scan: nil)
            }
        }
        var scan = try log.scan(keepRecords: false)
        if initial && !scan.exists { scan = HistoryScan.settled(scan) }
        try index.write {
            try deriveHistory(index, from: scan, state: scan.documentState())
            var state = try index.stateOrEmpty()
            state.removed = try index.counts(documents: false).removed
            try index.writeState(state)
        }
        return HistoryWriter(vault: self, log: log, tail: LogTail(scan), index: index, whole: scan.findings.isEmpty, scan: scan)
    }

    /// What a record changes in the index: the documents it names are logged; those it removes
    /// are kept as removed (inside the caller's transaction).
    func apply(_ record: HistoryRecord, at position: Int, to index: DocumentIndex) throws {
        switch record.operation {
        case .add, .import, .adopt, .pull, .begin, .accept:
            try index.markLogged(record.documents.compactMap { DocumentID(hex: $0.id) })
        case .remove:
            for d in record.documents { try index.addRemoved(d, position: position) }
        case .upload:
            for destination in Destination.confirmed(by: record) {
                for d in record.documents {
                    guard let id = DocumentID(hex: d.id) else { continue }
                    try index.addDelivery(id, Delivery(destination: destination, record: position, timeMillis: record.timeMillis, detail: record.detail))
                }
            }
        case .`init`, .export, .passwd, .push, .clone, .upgrade:
            break
        }
    }

    /// Accepts what is wrong with the history (an audit that accepts the loss): appends an
    /// `accept` record naming the documents whose envelopes authenticate and the findings it
    /// settles. Audits report nothing from before it; the record itself stays in the chain.
    /// - Returns: the findings it settled.
    package func acceptHistoryLoss() throws -> [AuditFinding] {
        try store.withLock {
            try withIndex(locked: true) { index in
                let scan = try HistoryLog(vault: self).scan()
                let settled = scan.findings + scan.noted
                var writer = try historyWriter(index: index)
                writer.tail.findings = []
                let documents = authenticatedDocuments(try store.objectIDs().sorted())
                let codes = Array(Set(settled.map(\.code.rawValue))).sorted()
                try writer.append(HistoryRecord(.accept, documents: documents,
                                                detail: "a password holder accepted: " + (codes.isEmpty ? "nothing was wrong" : codes.joined(separator: ", "))))
                return settled
            }
        }
    }

    /// Removes documents (the caller holds the writer lock): `remove.pending` names them first,
    /// then the objects go, the index is updated and the removal recorded, and the pending file
    /// goes last. A crash anywhere is finished by the next writer (``finishRemoval``), so the
    /// history never says present what is gone, nor removed what is still there.
    func removeLocked(_ documents: [HistoryRecord.Document]) throws {
        try withIndex(locked: true) { index in
            var writer = try historyWriter(index: index)
            if let earlier = writer.log.pendingRemoval() { try finishRemoval(earlier, writer: &writer, interrupted: true) }
            try prelude(&writer, pending: [])
            try writer.log.writePendingRemoval(documents)
            try finishRemoval(documents, writer: &writer, interrupted: false)
        }
    }

    /// Unlinks whatever of `documents` is left, updates the index, appends the removal record
    /// (for an interrupted removal: unless the index shows it recorded already) and deletes
    /// `remove.pending`.
    func finishRemoval(_ documents: [HistoryRecord.Document], writer: inout HistoryWriter, interrupted: Bool) throws {
        let ids = documents.compactMap { DocumentID(hex: $0.id) }
        for id in ids where FileSystem.kind(of: store.objectPath(id)) != .missing { try FileSystem.remove(store.objectPath(id)) }
        try FileSystem.syncDirectory(store.objectsPath)
        let index = writer.index
        try index.write {
            for id in ids { try index.delete(id) }
            try commitIndexState(index)
        }
        var recorded = interrupted && !ids.isEmpty
        for id in ids where recorded { recorded = try index.isRemoved(id) }
        if !recorded {
            try writer.append(HistoryRecord(.remove, documents: documents,
                                            detail: interrupted ? "finished after the removing command was interrupted" : nil))
        }
        try FileSystem.remove(writer.log.pendingRemovalPath)
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
    package func refuseResurrected(_ records: [DocumentRecord]) throws {
        let back = try withIndex { index in try records.compactMap { r in try index.removal(of: r.id).map { (r, $0) } } }
        guard let (first, position) = back.first else { return }
        throw Self.resurrected(first, position: position, more: back.count - 1)
    }

    static func resurrected(_ first: DocumentRecord, position: Int, more: Int) -> VaultError {
        VaultError(.vaultDamaged,
                   "document \(first.id) (\(first.metadata.name)) was removed (history record \(position)) and its object is back"
                   + (more > 0 ? ", and \(more) more" : "") + "; nothing was sent",
                   remedy: .auditAndRemoveAgain(first.id))
    }
}

/// A history append in progress: the log's tail, and the index kept in step with each record.
struct HistoryWriter {
    let vault: Vault
    let log: HistoryLog
    var tail: LogTail
    let index: DocumentIndex
    /// True when the chain is whole (nothing is adopted otherwise).
    let whole: Bool
    /// The whole-log scan, when the tail did not verify and the log was read.
    let scan: HistoryScan?

    /// Appends `record` and applies it to the index, with the index's position in the history.
    mutating func append(_ record: HistoryRecord) throws {
        tail = try log.append(record, to: tail)
        let (index, vault, tail) = (self.index, self.vault, self.tail)
        try index.write {
            try vault.apply(record, at: tail.count, to: index)
            var state = try index.stateOrEmpty()
            (state.logCount, state.logEnd, state.logTag) = (tail.count, tail.end, Hex.encode(tail.tag))
            state.removed = try index.counts(documents: false).removed
            try index.writeState(state)
        }
    }
}
