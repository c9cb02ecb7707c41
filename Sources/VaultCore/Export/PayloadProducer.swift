import Crypto
import Dispatch

/// A document that failed while its entry was being produced, with the payload offset where
/// its entry began (before its separating comma): cut the payload back to it to remove it.
package struct DocumentFailure: Error, Sendable {
    /// The document.
    package let record: DocumentRecord
    /// Why it failed.
    package let error: VaultError
    /// Payload offset where its entry began.
    package let startOffset: UInt64

    package init(record: DocumentRecord, error: VaultError, startOffset: UInt64) {
        self.record = record
        self.error = error
        self.startOffset = startOffset
    }
}

/// A block of payload bytes lent by a ``PayloadProducer``; give it back with ``release()``.
package final class PayloadBlock: @unchecked Sendable {
    // @unchecked: the bytes are written by the producer before the block is handed out and
    // only read afterwards; `release` hands ownership back through a semaphore.
    /// The bytes (valid until released).
    package private(set) var bytes: UnsafeRawBufferPointer
    /// Payload offset of the first byte.
    package let offset: UInt64
    private let free: DispatchSemaphore

    init(bytes: UnsafeRawBufferPointer, offset: UInt64, free: DispatchSemaphore) {
        self.bytes = bytes
        self.offset = offset
        self.free = free
    }

    /// Returns the buffer to the producer.
    package func release() { free.signal() }
}

/// Produces one batch payload block by block, in constant memory: opens each document,
/// takes its plaintext batch by batch as the chunks authenticate (decrypted on every core),
/// base64-encodes it (on every core) and frames it canonically.
///
/// Blocks come from a small ring; ``next()`` waits until the consumer has released the
/// block it is about to reuse, so a slow consumer (a disk, a network) holds the producer back
/// and memory stays bounded. A document that fails throws ``DocumentFailure``; bytes produced
/// before its entry began are always delivered first. After a failure, ``skipFailedDocument()``
/// continues with the next document (the consumer has cut its output back to the failure's
/// `startOffset`).
package final class PayloadProducer {
    private let vault: Vault
    private let records: [DocumentRecord]
    private let format: PayloadFormat
    private let onEvent: (ExportEvent) -> Void
    private let progress: ProgressCounter
    private let positionBase: Int
    private let threads: Int
    private let batching: ChunkBatching
    private let identities: [AgeIdentity]

    private let buffers: [UnsafeMutableRawBufferPointer]
    private let free: [DispatchSemaphore]
    private var ring = 0

    /// Where the producer stands. Framing bytes (`pending`) are written out before any step.
    private enum State {
        /// Between entries: the next document starts, or the payload closes.
        case between
        /// Inside a document's entry, reading it batch by batch.
        case inDocument(any PayloadDocumentReader)
        /// The closing framing is pending; then the payload is complete.
        case closing
        /// Every byte was produced.
        case finished
        /// A document failed; the bytes before its entry are out, the failure is thrown next.
        case failurePending(DocumentFailure)
        /// The failure was thrown; only ``skipFailedDocument(at:)`` goes on.
        case failed(DocumentFailure)
    }
    private var state = State.between
    private var pending: [UInt8] = []
    private var pendingAt = 0
    private var documentIndex = -1
    private var encoder: DataCoder
    private var entriesWritten = 0
    private var entryStart: UInt64 = 0
    private var verifiedOfDocument: UInt64 = 0
    private var emitted: UInt64 = 0
    /// Where to start, until the first call positions the producer there.
    private var startAt: UInt64?
    /// Output bytes of the current document's first decrypted group that lie before the start.
    private var skip = 0
    /// Chunks opened by readers that are done.
    private var openedBefore: UInt64 = 0

    /// Chunks decrypted (and authenticated) so far, over all documents.
    package var chunksOpened: UInt64 {
        if case .inDocument(let r) = state { return openedBefore + r.openedChunks }
        return openedBefore
    }

    /// Blocks in the ring: enough that encoding runs ahead while the consumer writes and hashes.
    static let ringDepth = 6
    /// Room for a whole batch's base64, and some framing, per block.
    private let blockSize: Int
    /// The most output one decrypted batch becomes (sealed and encoded, with an age file's prefix).
    private let batchOutput: Int
    /// Where a sealed batch's chunks go before base64 (sealed JSON only).
    private let scratch: UnsafeMutableRawBufferPointer?

    /// The ids of the documents whose entries are complete.
    package private(set) var written: [DocumentID] = []

    /// - Parameters:
    ///   - startOffset: the payload byte to start at (0: the whole payload). The producer finds
    ///     the part that holds it (``PayloadLayout``) and, inside a document's base64, the chunk
    ///     group that covers it, and decrypts from that group on only (never from the document's
    ///     start): a group's plaintext is whole base64 groups, so its base64 starts at a known
    ///     offset and the bytes before the start are dropped from the group's output.
    ///   - threads: how many threads decrypt and encode each batch. Give fewer than
    ///     ``Parallelism/allCores`` when the consumer has heavy work of its own (hashing, a network
    ///     stack): see ``Parallelism/besideOneStage``.
    ///   - batching: the chunks per decrypted batch, passed down to each document's reader; its
    ///     plaintext must be whole base64 groups (a multiple of 3 chunks) to be encoded in parallel.
    package convenience init(
        vault: Vault, records: [DocumentRecord], shape: PayloadShape, progress: ProgressCounter,
        positionBase: Int = 0, threads: Int = Parallelism.allCores, batching: ChunkBatching = .reading,
        startOffset: UInt64 = 0, onEvent: @escaping (ExportEvent) -> Void
    ) {
        self.init(
            vault: vault, records: records, format: .json(shape), progress: progress, positionBase: positionBase,
            threads: threads, batching: batching, startOffset: startOffset, onEvent: onEvent)
    }

    /// A producer of the payload of `records` in `format` (JSON with base64 data, or a form
    /// with raw data); the parameters are as above.
    /// - Parameter identities: the office's age identities, which open documents that came
    ///   captured (their records as ``Vault/exported(_:identities:)`` gives them; a plain
    ///   format only).
    package init(
        vault: Vault, records: [DocumentRecord], format: PayloadFormat, progress: ProgressCounter,
        positionBase: Int = 0, threads: Int = Parallelism.allCores, batching: ChunkBatching = .reading,
        startOffset: UInt64 = 0, identities: [AgeIdentity] = [], onEvent: @escaping (ExportEvent) -> Void
    ) {
        self.identities = identities
        precondition(batching.plaintextBytes % 3 == 0, "internal error: a chunk group must be whole base64 groups")
        self.vault = vault
        self.records = records
        self.format = format
        pending = format.opening(records)
        self.progress = progress
        self.positionBase = positionBase
        self.threads = threads
        self.batching = batching
        self.onEvent = onEvent
        encoder = DataCoder(format: format, threads: threads)
        if let sealing = format.sealing {
            let sealed = AgeFileSealer.maxOutput(for: batching.plaintextBytes)
            batchOutput =
                (format.encodesBase64 ? Base64StreamEncoder.maxOutput(for: sealed + sealing.headerLength + 16) : sealed)
                + sealing.headerLength + AgeFormat.nonceSize
            scratch = format.encodesBase64 ? .allocate(byteCount: sealed, alignment: 64) : nil
        } else {
            batchOutput = Base64StreamEncoder.maxOutput(for: batching.plaintextBytes)
            scratch = nil
        }
        blockSize = batchOutput + 64 << 10
        buffers = (0..<Self.ringDepth).map { [blockSize] _ in .allocate(byteCount: blockSize, alignment: 64) }
        free = (0..<Self.ringDepth).map { _ in DispatchSemaphore(value: 1) }
        if startOffset > 0 {
            startAt = startOffset
            emitted = startOffset
        }
    }

    /// Puts the producer at payload byte `offset`: the framing part's remaining bytes, or a
    /// document opened at the chunk group that covers the offset.
    private func position(at offset: UInt64) throws {
        let layout = PayloadLayout(records, format: format)
        guard let span = layout.span(containing: offset) else {
            precondition(
                offset == layout.length, "internal error: start \(offset) is past the payload's \(layout.length) bytes")
            state = .finished
            return
        }
        let into = Int(offset - span.offset)
        func before(_ i: Int) {
            documentIndex = i - 1
            entriesWritten = i
            written = records[..<i].map(\.id)
        }
        switch span.part {
        case .open:
            pendingAt = into
        case .head(let i):
            before(i)
            try startNextDocument(at: span.offset)
            pendingAt = into
        case .data(let i) where format.sealing != nil:
            // An age file's bytes are not a function of a plaintext group alone: the document is
            // sealed again from its start (the same keying, so the same bytes) and what lies
            // before the offset dropped.
            before(i)
            let head = layout.spans.last { $0.part == .head(i) }!
            try startNextDocument(at: head.offset)
            pending = []
            pendingAt = 0
            skip = into
        case .data(let i):
            before(i)
            let groupLength = format.dataLength(bytes: UInt64(batching.plaintextBytes))
            let group = UInt64(into) / groupLength
            let head = layout.spans.last { $0.part == .head(i) }!
            try startNextDocument(at: head.offset, fromChunk: group * UInt64(batching.chunks))
            pending = []
            pendingAt = 0
            skip = into - Int(group * groupLength)
            verifiedOfDocument = group * UInt64(batching.plaintextBytes)
        case .tail(let i):
            before(i + 1)
            documentIndex = i
            pending = format.tail(records[i])
            pendingAt = into
        case .close:
            before(records.count)
            documentIndex = records.count
            pending = format.closing
            pendingAt = into
            state = .closing
        }
    }

    /// Drops the first bytes of new output that lie before the start; returns what is kept.
    private func keep(_ n: Int, at fill: Int, in buffer: UnsafeMutableRawBufferPointer) -> Int {
        let d = min(skip, n)
        guard d > 0 else { return n }
        if n > d { (buffer.baseAddress! + fill).copyMemory(from: buffer.baseAddress! + fill + d, byteCount: n - d) }
        skip -= d
        return n - d
    }

    deinit {
        for s in free { s.wait(); s.signal() }
        for b in buffers { Sodium.wipe(b); b.deallocate() }
        scratch?.deallocate()
    }

    /// Payload bytes produced so far.
    package var offset: UInt64 { emitted }

    /// The next block, or nil when the payload is complete.
    /// - Throws: ``DocumentFailure`` when a document fails (after any bytes before it were delivered).
    package func next() throws -> PayloadBlock? {
        switch state {
        case .failurePending(let f): state = .failed(f); throw f
        case .failed: preconditionFailure("internal error: producer used after a failure without skipFailedDocument()")
        case .finished: return nil
        case .between, .inDocument, .closing: break
        }
        if let start = startAt {
            startAt = nil
            try position(at: start)
            if case .finished = state { return nil }
        }
        free[ring].wait()
        let buffer = buffers[ring]
        var fill = 0
        do {
            try produce(into: buffer, fill: &fill)
        } catch let f as DocumentFailure {
            // Deliver what came before the failed entry; throw on the next call.
            let keep = Int(max(0, Int64(f.startOffset) - Int64(emitted)))
            if keep == 0 { free[ring].signal(); state = .failed(f); throw f }
            state = .failurePending(f)
            fill = keep
        }
        let block = PayloadBlock(
            bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<fill]), offset: emitted, free: free[ring])
        emitted += UInt64(fill)
        ring = (ring + 1) % buffers.count
        return block
    }

    /// After a ``DocumentFailure``: forgets the failed document and goes on with the next.
    package func skipFailedDocument(at startOffset: UInt64) {
        guard case .failed(let f) = state else { preconditionFailure("internal error: nothing failed to skip") }
        onEvent(.documentSkipped(id: f.record.id, name: f.record.metadata.name, error: f.error))
        progress.skip(remaining: f.record.metadata.size - verifiedOfDocument)
        onEvent(.progress(done: progress.done, total: progress.total))
        encoder = DataCoder(format: format, threads: threads)
        pending = []
        pendingAt = 0
        emitted = startOffset
        state = .between
    }

    private func produce(into buffer: UnsafeMutableRawBufferPointer, fill: inout Int) throws {
        while true {
            // Framing bytes first.
            if pendingAt < pending.count {
                let n = min(pending.count - pendingAt, buffer.count - fill)
                pending.withUnsafeBytes { p in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[fill..<fill + n]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: p[pendingAt..<pendingAt + n]))
                }
                fill += n
                pendingAt += n
                if fill == buffer.count { return }
                continue
            }
            switch state {
            case .between:
                try startNextDocument(at: emitted + UInt64(fill))
            case .closing:
                state = .finished
                return
            case .inDocument(let reader):
                // Room for a whole decrypted batch's base64?
                if buffer.count - fill < batchOutput { return }
                let record = records[documentIndex]
                let batch: UnsafeRawBufferPointer?
                // Sealing: each chunk is sealed where it is decrypted, as it verifies.
                reader.onChunk = encoder.sealingJob(output: UnsafeMutableRawBufferPointer(rebasing: buffer[fill...]))
                defer { reader.onChunk = nil }
                do {
                    batch = try reader.next()
                } catch {
                    // The reader already names the document.
                    throw DocumentFailure(record: record, error: VaultError.from(error), startOffset: entryStart)
                }
                if let batch {
                    fill += keep(
                        encoder.encode(batch, into: UnsafeMutableRawBufferPointer(rebasing: buffer[fill...])), at: fill,
                        in: buffer)
                    verifiedOfDocument += UInt64(batch.count)
                    progress.add(UInt64(batch.count))
                    onEvent(.progress(done: progress.done, total: progress.total))
                } else {
                    fill += keep(
                        encoder.finish(into: UnsafeMutableRawBufferPointer(rebasing: buffer[fill...])), at: fill,
                        in: buffer)
                    openedBefore += reader.openedChunks
                    notePair(record)
                    if case .captured = format {
                        // The pair's size counts its metadata file too, sent in the head.
                        let rest = record.metadata.size - verifiedOfDocument
                        progress.add(rest)
                        verifiedOfDocument += rest
                        onEvent(.progress(done: progress.done, total: progress.total))
                    }
                    state = .between
                    pending = format.tail(record)
                    pendingAt = 0
                    entriesWritten += 1
                    written.append(record.id)
                    onEvent(.documentFinished(id: record.id))
                }
            case .finished, .failurePending, .failed:
                preconditionFailure("internal error: producing in a finished or failed state")
            }
        }
    }

    private func startNextDocument(at offset: UInt64, fromChunk: UInt64 = 0) throws {
        documentIndex += 1
        guard documentIndex < records.count else {
            pending = format.closing
            pendingAt = 0
            state = .closing
            return
        }
        let record = records[documentIndex]
        entryStart = offset
        verifiedOfDocument = 0
        onEvent(
            .documentStarted(
                id: record.id, name: record.metadata.name, size: record.metadata.size,
                position: positionBase + documentIndex + 1, of: progress.documents))
        if case .captured = format {
            try startCaptured(record, fromChunk: fromChunk)
            return
        }
        do {
            let r: any PayloadDocumentReader
            let metadata: DocumentMetadata
            if !identities.isEmpty && vault.holdsCaptured(record.id) {
                precondition(
                    fromChunk == 0 && format.sealing == nil, "internal error: a captured document resumed or sealed")
                let opening = try CapturedOpening(
                    vault: vault, id: record.id, identities: identities, batchBytes: batching.plaintextBytes)
                (r, metadata) = (opening, opening.metadata)
            } else {
                let envelope = try vault.open(record.id, threads: threads, batching: batching, startChunk: fromChunk)
                (r, metadata) = (envelope, envelope.metadata)
            }
            guard metadata.sameDocument(as: record.metadata) else {  // tags change in the history, not the envelope
                throw VaultError(
                    .vaultDamaged, "document \(record.id): its envelope disagrees with the index",
                    remedy: .rebuildIndex)
            }
            state = .inDocument(r)
            encoder = DataCoder(format: format, threads: threads)
            if let sealing = format.sealing {
                let sealer = try AgeFileSealer(
                    keying: sealing.keying(.data(record.id)), plaintextSize: record.metadata.size, threads: threads)
                encoder.seal(with: sealer, scratch: scratch, hashing: sealing.notesPairs)
            }
        } catch {
            throw DocumentFailure(record: record, error: VaultError.from(error), startOffset: entryStart)
        }
        // After a skipped document the next entry may be the first: count entries, not indexes.
        pending = format.head(record, first: entriesWritten == 0)
        pendingAt = 0
    }
}

extension PayloadProducer {
    /// Notes `record`'s sealed pair with the sealing, when it asks (``PayloadSealing/notesPairs``):
    /// its data file as it went out, and its metadata file (the sealing's, so the head's bytes).
    private func notePair(_ record: DocumentRecord) {
        guard case .sealed(let sealing) = format, sealing.notesPairs, let data = encoder.sealedFile else { return }
        let metadata = sealing.sealWhole(sealing.metadata(record), slot: .metadata(record.id))
        sealing.notePair(
            record.id, size: encoder.sealedBytes + UInt64(metadata.count),
            sha256: CapturedDocument.digest(data: data, metadata: metadata))
    }

    /// Starts a captured document: its metadata file is read (its record authenticated, and the
    /// same as the batch's) for the head, and its data file opened at chunk group `fromChunk`.
    private func startCaptured(_ record: DocumentRecord, fromChunk: UInt64) throws {
        let metadata: [UInt8]
        do {
            let stored = try vault.capturedMetadata(record.id)
            guard stored.record.metadata.sameDocument(as: record.metadata),
                case .captured(let files) = format, files.metadataLengths[record.id] == stored.metadata.count
            else {
                throw VaultError(
                    .vaultDamaged, "document \(record.id): its sealed files are not those captured",
                    remedy: .rebuildIndex)
            }
            metadata = stored.metadata
            let start = fromChunk * UInt64(batching.plaintextBytes / batching.chunks)
            state = .inDocument(
                try CapturedDataReader(
                    vault: vault, record: record, metadata: metadata, start: start,
                    batchBytes: batching.plaintextBytes))
            encoder = DataCoder(format: format, threads: threads)
        } catch {
            throw DocumentFailure(record: record, error: VaultError.from(error), startOffset: entryStart)
        }
        guard case .captured(let files) = format else { preconditionFailure("internal error: not captured") }
        pending = files.head(record, metadata: metadata, first: entriesWritten == 0)
        pendingAt = 0
    }
}
