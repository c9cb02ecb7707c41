#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

    var path: String { store.path(.log) }
    var headPath: String { store.path(.logHead) }
    var anchorPath: String { store.path(.logAnchor) }
    var pendingRemovalPath: String { store.path(.pendingRemoval) }

    init(vault: Vault) throws {
        store = vault.store
        var keys: [UInt32: SecretBytes] = [:]
        for e in vault.keys.epochs {
            keys[e] = try SubkeyDerivation.derive(
                from: vault.keys.key(epoch: e)!, id: HistoryFormat.subkeyID, context: HistoryFormat.subkeyContext)
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

    // MARK: Reading records

    /// A record's place in the file and its tag; its nonce and seal are read when needed, so a
    /// scan holds one record at a time, not the file (62 MB for 100,000 records).
    struct Framed { var offset: Int; var end: Int; var position: Int; var tag: [UInt8] }

    /// The bytes of a frame before its nonce: the record's length (4) and its claimed position (8).
    static let frameHeaderSize = 4 + 8

    /// Reads a framed record's nonce and seal.
    func load(_ f: Framed, from file: OpenFile) throws -> (nonce: [UInt8], sealed: [UInt8]) {
        let start = f.offset + Self.frameHeaderSize
        let body = try file.read(count: f.end - start, at: UInt64(start))
        guard body.count == f.end - start else { throw VaultError(.vaultDamaged, "log.vlt changed while it was read") }
        return (Array(body[..<HistoryFormat.nonceSize]), Array(body[HistoryFormat.nonceSize...]))
    }

    /// The log's framing from `offset` (the file's first record by default) to `end`: each
    /// record's offsets, claimed position and tag, from lengths alone (no keys). Stops at the
    /// first length that cannot be a record's (noted in `findings`, counting records from
    /// `first`) or at a record that runs past `end`.
    func frames(
        of file: OpenFile, from offset: Int = HistoryFormat.fileHeader.count, to end: Int, first: Int = 1,
        findings: inout [AuditFinding]
    ) throws -> [Framed] {
        var framed: [Framed] = []
        var offset = offset
        while offset < end {
            guard end - offset >= Self.frameHeaderSize else { break }
            let frameHead = try file.read(count: Self.frameHeaderSize, at: UInt64(offset))
            let length = Int(UInt32(bigEndianBytes: frameHead[0..<4]))
            guard length >= 8 + HistoryFormat.nonceSize + HistoryFormat.tagSize,
                  length <= HistoryFormat.maxRecordSize else {
                findings.append(
                    AuditFinding(
                        .logMalformed, "bytes at offset \(offset) of log.vlt are not a record (length \(length))",
                        record: first + framed.count))
                break
            }
            guard offset + 4 + length <= end else { break }
            let claimed = UInt64(bigEndianBytes: frameHead[4..<12])
            let tag = try file.read(
                count: HistoryFormat.tagSize, at: UInt64(offset + 4 + length - HistoryFormat.tagSize))
            framed.append(Framed(offset: offset, end: offset + 4 + length, position: Int(clamping: claimed), tag: tag))
            offset = offset + 4 + length
        }
        return framed
    }

    /// Opens the framed record `f` as record `position`, after the record tagged `previous`,
    /// under the log key of epoch `floor` or a later one — the one rule every reader of the log
    /// applies, record after record: the epochs of a log never go down, so a record sealed under a
    /// key a password change retired does not open after one of a later epoch.
    /// - Returns: the epoch it opened in (the next record's floor) and the record; nil when it
    ///   does not open in its place.
    func authenticate(
        _ f: Framed, at position: Int, after previous: [UInt8], floor: UInt32, in file: OpenFile,
        documents: (HistoryRecord.Operation) -> Bool = { _ in true }
    ) throws -> (epoch: UInt32, record: HistoryRecord)? {
        let (nonce, sealed) = try load(f, from: file)
        guard
            let (e, record) = open(
                sealed, nonce: nonce, position: position, previousTag: previous, from: floor, documents: documents),
            Self.fits(position: position, tag: f.tag, epoch: e, retiredAt: epochKeys.retiredAt)
        else { return nil }
        return (e, record)
    }

    /// Whether a record of epoch `e` may stand at `position` with `tag`: not after the record
    /// the password change that retired `e` saw last, and that record itself the same one.
    static func fits(position: Int, tag: [UInt8], epoch e: UInt32, retiredAt: [UInt32: LogAnchor]) -> Bool {
        guard let anchor = retiredAt[e] else { return true }
        return position < anchor.count || (position == anchor.count && tag == anchor.tag)
    }

    /// Opens a record under the log key of epoch `from` or a later one: the epoch and the record.
    /// - Parameter documents: whether a record of this operation needs its documents (they
    ///   are left out otherwise: a send names every document it sent).
    func open(
        _ sealed: [UInt8], nonce: [UInt8], position: Int, previousTag: [UInt8], from: UInt32,
        documents: (HistoryRecord.Operation) -> Bool = { _ in true }
    ) -> (UInt32, HistoryRecord)? {
        let ad = associatedData(position: position, previousTag: previousTag)
        for e in keys.keys.sorted() where e >= from {
            if let plain = XChaCha20Poly1305.open(sealed, ad: ad, nonce: nonce, key: keys[e]!),
                let record = HistoryRecordReader.read(plain, documents: documents)
                    ?? (try? JSONDecoder().decode(HistoryRecord.self, from: Data(plain)))
            {
                return (e, record)
            }
        }
        return nil
    }

    // MARK: Writing

    /// Appends `record` (the caller holds the writer lock). First makes the file whole: a new
    /// log gets its header, a torn append past the head (a crash) is cut off. What is wrong
    /// beyond that is not repaired — records are never rewritten — but noted in the new
    /// record's anomalies, so audits keep reporting it.
    /// - Returns: the new tail.
    @discardableResult
    func append(_ record: HistoryRecord, to tail: LogTail) throws -> LogTail {
        try append([record], to: tail)[0]
    }

    /// Appends `records` in order, as ``append(_:to:)`` appends one, in one write, one fsync and
    /// one new head: a receiver's group of batches costs the disk what one batch does. A write
    /// or sync that fails cuts the file back to where it was. A crash before the head is written
    /// may leave whole records past it, which the next whole-log read takes as it takes a single
    /// record written before a crash: each record is a whole batch, and none was answered yet.
    /// - Returns: the tail after each record.
    func append(_ records: [HistoryRecord], to tail: LogTail) throws -> [LogTail] {
        precondition(!records.isEmpty, "internal error: an append of no record")
        var end = tail.end
        if !tail.exists || end == 0 {
            if tail.exists {  // unreadable from its first bytes: kept aside, never overwritten
                try FileSystem.rename(path, to: store.root + "/log.damaged-\(Int(Date().timeIntervalSince1970)).vlt")
            }
            try AtomicFile.write(HistoryFormat.fileHeader, to: path, random: random)
            end = HistoryFormat.fileHeader.count
        }
        let file = try OpenFile.openOrCreate(path)
        defer { file.close() }
        if tail.exists && tail.fileSize > end { try file.truncate(to: UInt64(end)) }
        var position = (tail.exists && tail.end > 0 ? tail.count : 0) + 1
        var previous = position == 1 ? Self.zeroTag : tail.tag
        // The frames are made in one buffer, each record sealed in place: a send of 100,000
        // documents is a 15 MB record, and copies of it were most of that command's memory.
        var frames = [UInt8]()
        frames.reserveCapacity(records.reduce(0) { $0 + 300 + $1.documents.count * 170 })
        var tails: [LogTail] = []
        for (i, record) in records.enumerated() {
            var record = record
            if i == 0 {
                // What this append removes or replaces (a cut tail, a stale or missing head, an
                // unreadable file) is sealed into the record; damaged records stay in the file anyway.
                record.anomalies += tail.findings.filter {
                    ![.logRecordDamaged, .logRecordMoved, .logChainBroken, .logRecordSuperseded].contains($0.code)
                }
                .map { HistoryRecord.Anomaly(code: $0.code.rawValue, message: $0.message) }
            }
            seal(record, position: position, previous: previous, into: &frames)
            previous = Array(frames.suffix(HistoryFormat.tagSize))
            tails.append(
                LogTail(
                    exists: true, count: position, end: end + frames.count, tag: previous,
                    fileSize: end + frames.count, findings: []))
            position += 1
        }
        do {
            try file.write(frames, at: UInt64(end))
            try file.sync()
        } catch {
            // A write or sync that failed part way (a full disk) may leave whole records past
            // the head, which a later whole-log read would take: they are cut off now, so that
            // a group whose commit failed keeps none of its batches (each was told it failed).
            try? file.truncate(to: UInt64(end))
            try? file.sync()
            throw error
        }
        let last = tails[tails.count - 1]
        let head = StoredHead(count: last.count, end: last.end, tag: Hex.encode(last.tag))
        try writeState(head, as: .logHead)
        try writeState(head, as: .logAnchor)
        return tails
    }

    /// Appends `record`'s frame to `frames`: its length, position and nonce, then the record
    /// sealed in place under the log key, bound to its position and the tag before it.
    private func seal(_ record: HistoryRecord, position: Int, previous: [UInt8], into frames: inout [UInt8]) {
        let frameStart = frames.count
        let nonce = random.bytes(HistoryFormat.nonceSize)
        frames.appendBigEndian(UInt32(0))  // the length, below
        frames.appendBigEndian(UInt64(position))
        frames += nonce
        let start = frames.count
        record.json(into: &frames)
        let plaintextCount = frames.count - start
        frames += [UInt8](repeating: 0, count: HistoryFormat.tagSize)
        let ad = associatedData(position: position, previousTag: previous)
        frames.withUnsafeMutableBytes { buffer in
            let region = UnsafeMutableRawBufferPointer(rebasing: buffer[start...])
            ad.withUnsafeBytes { a in
                nonce.withUnsafeBytes { n in
                    key.withUnsafeBytes { k in
                        // libsodium's AEAD encrypts in place (the plaintext and ciphertext may be the same bytes).
                        XChaCha20Poly1305.seal(
                            UnsafeRawBufferPointer(rebasing: region[..<plaintextCount]), into: region, ad: a, nonce: n,
                            key: k)
                    }
                }
            }
        }
        let length = UInt32(frames.count - frameStart - 4)
        for i in 0..<4 { frames[frameStart + i] = UInt8(truncatingIfNeeded: length >> (24 - 8 * UInt32(i))) }
    }

    /// The log's tail as `log.head` and `log.anchor` name it, checked against the file without
    /// reading its records: both sealed under the current key and equal, the file exactly as
    /// long as they say, and its last 16 bytes the tag they name. Nil when anything differs (a
    /// crash mid-append, an older vault's head, damage): the caller then reads the whole log.
    func verifiedTail() -> LogTail? {
        guard let headBytes = try? FileSystem.readFile(headPath, limit: 1 << 16),
            let anchorBytes = try? FileSystem.readFile(anchorPath, limit: 1 << 16),
            let (e1, h) = try? SealedState.openAnyEpoch(
                headBytes, purpose: .logHead, role: VaultFile.logHead.name, keys: epochKeys, vaultID: vaultID),
            let (e2, a) = try? SealedState.openAnyEpoch(
                anchorBytes, purpose: .logAnchor, role: VaultFile.logAnchor.name, keys: epochKeys, vaultID: vaultID),
            e1 == epoch, e2 == epoch,
            let head = try? JSONDecoder().decode(StoredHead.self, from: Data(h)),
            let anchor = try? JSONDecoder().decode(StoredHead.self, from: Data(a)), head == anchor,
            head.count >= 1, head.end > HistoryFormat.fileHeader.count + HistoryFormat.tagSize,
            let tag = Hex.decode(head.tag), tag.count == HistoryFormat.tagSize,
            let file = try? OpenFile.openStored(path)
        else { return nil }
        defer { file.close() }
        guard let size = try? file.size(),
              size == UInt64(head.end),
              let last = try? file.read(count: HistoryFormat.tagSize, at: UInt64(head.end - HistoryFormat.tagSize)),
              last == tag,
              let first = try? file.read(count: HistoryFormat.fileHeader.count, at: 0),
              first == HistoryFormat.fileHeader else { return nil }
        return LogTail(exists: true, count: head.count, end: head.end, tag: tag, fileSize: head.end, findings: [])
    }

    /// The records after `after` up to `tail` (normally none or one: what the index has not
    /// applied yet), each authenticated in its place by ``authenticate(_:at:after:floor:in:documents:)``
    /// from the epoch the index's last record was of (the scan's rule: no record after one of a
    /// later epoch opens under an earlier key), and the epoch of the last; nil when they do not
    /// follow (the log was replaced or cut since, a record does not open, or the index does not
    /// know its floor), and the caller reads the whole log.
    func records(after state: DocumentIndex.State, upTo tail: LogTail) -> (records: [HistoryRecord], epoch: UInt32)? {
        guard state.logEnd >= HistoryFormat.fileHeader.count,
              state.logEnd <= tail.end,
              state.logCount <= tail.count,
              let previous = Hex.decode(state.logTag),
              let known = state.logEpoch else { return nil }
        if state.logEnd == tail.end { return state.logCount == tail.count && previous == tail.tag ? ([], known) : nil }
        guard tail.end - state.logEnd <= 256 << 20,
              let file = try? OpenFile.openStored(path) else { return nil }
        defer { file.close() }
        var findings: [AuditFinding] = []
        guard
            let framed = try? frames(
                of: file, from: state.logEnd, to: tail.end, first: state.logCount + 1, findings: &findings),
            findings.isEmpty, state.logCount + framed.count == tail.count, framed.last?.end == tail.end,
            framed.last?.tag == tail.tag
        else { return nil }
        var out: [HistoryRecord] = []
        var tag = previous, floor = known
        for (i, f) in framed.enumerated() {
            guard let opened = try? authenticate(f, at: state.logCount + i + 1, after: tag, floor: floor, in: file)
            else { return nil }
            out.append(opened.record)
            (tag, floor) = (f.tag, opened.epoch)
        }
        return (out, floor)
    }

    /// Writes `value` sealed as `file` (its purpose, its name as the role), crash-safely.
    func writeState<T: Encodable>(_ value: T, as file: VaultFile) throws {
        guard let purpose = file.sealedPurpose else {
            preconditionFailure("internal error: \(file.name) is not a sealed state file")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let sealed = try SealedState.seal(
            Array(try encoder.encode(value)), purpose: purpose, role: file.name, keys: epochKeys,
            vaultID: vaultID, random: random)
        try AtomicFile.write(sealed, to: store.path(file), random: random)
    }
}
