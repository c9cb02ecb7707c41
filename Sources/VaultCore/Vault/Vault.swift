#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An unlocked vault: the key-encryption key (one Argon2id run) and the vault key, with the
/// document operations. Every operation opens envelopes with the same keyring.
///
/// One `Vault` may be shared by several tasks: reads (listing, reading, exporting) run side by
/// side; changes (adding, removing) take the vault's writer lock, on disk, and run one at a time,
/// also against other processes using the same folder.
public final class Vault: @unchecked Sendable {
    // @unchecked: all stored properties are immutable after init, the keys are read-only, and
    // the index connection is used only under `indexHolder.lock`.
    /// The directory.
    public let store: VaultStore
    let config: VaultConfig
    let keyring: Keyring
    /// The vault key of the current key epoch, and the earlier ones.
    let keys: EpochKeys
    package let random: any RandomSource
    /// The index connection (``withIndex(known:full:_:)``).
    let indexHolder = IndexHolder()

    init(store: VaultStore, config: VaultConfig, keyring: Keyring, keys: EpochKeys, random: any RandomSource) {
        self.store = store
        self.config = config
        self.keyring = keyring
        self.keys = keys
        self.random = random
        if store.source == nil { SessionLock.join(store) }
    }

    /// The current epoch's vault key.
    var vaultKey: SecretBytes { keys.current }

    /// A capture-only station's recipients: every document added is sealed to them, and nothing
    /// this vault holds opens it again (nil: an ordinary vault). Checked when `vault.json` was read.
    package var captureRecipients: [AgeRecipient]? { try? config.captureRecipients(path: store.configPath) }

    /// True for a capture-only station (``captureRecipients``).
    package var capturesOnly: Bool { config.capture != nil }

    /// True when a capture-only station keeps no document names (``CapturedDocument/sealedName``).
    package var captureSealsNames: Bool { config.captureSealsNames == true }

    /// The vault's key epoch: 0, then one more after each password change.
    public var keyEpoch: UInt32 { keys.epoch }

    /// True from `vault/3` on: the destination list is the projection of the history.
    var keepsDestinationsInHistory: Bool { config.format == VaultConfig.currentFormat }

    /// The vault's random id.
    public var id: String { config.id }
    /// The vault's Argon2id parameters.
    public var kdf: KDFParameters { keyring.kdf }

    /// A keyed digest (BLAKE2b under a subkey of the vault key) of `message`, as lower-case hex:
    /// for names and keys that vault stores or sends in the clear and that depend on document
    /// contents (upload job ids, Idempotency-Keys). Without the password nobody can compute one,
    /// so such a value cannot confirm a guessed document.
    /// - Parameter purpose: one subkey per purpose (e.g. 1: upload journal).
    package func keyedDigest(purpose: UInt64, _ message: [UInt8]) throws -> String {
        let key = try SubkeyDerivation.derive(from: vaultKey, id: purpose, context: Self.keyedDigestContext)
        return Hex.encode(KeyedHash.digest(message, key: key))
    }

    /// The `crypto_kdf` context of ``keyedDigest(purpose:_:)`` subkeys.
    static let keyedDigestContext = "vaultmac"

    // MARK: Adding

    /// Encrypts everything `input` yields into a new document, durably: when this returns, the
    /// envelope and its name are on disk and the index names it. For several documents in one
    /// go, an ``AddSession`` does the folder sync and the index update once.
    /// - Parameters:
    ///   - contentType: the MIME type, or nil to detect it from the first bytes (or, for an empty
    ///     input, from the name's extension).
    ///   - allowDuplicate: add it even when a document with the same SHA-256 is in the vault;
    ///     otherwise that is ``VaultError/Code/duplicate`` and nothing is added.
    ///   - progress: called with the plaintext bytes read so far.
    package func add(
        from input: any ByteSource, name: String, contentType: String? = nil, tags: [String] = [],
        allowDuplicate: Bool = false, now: Date = Date(), progress: ((UInt64) -> Void)? = nil
    ) throws -> DocumentRecord {
        let session = try AddSession(vault: self)
        let record = try session.add(
            from: input, name: name, contentType: contentType, tags: tags, allowDuplicate: allowDuplicate,
            now: now, progress: progress)
        try session.finish()
        return record
    }

    // MARK: Listing and resolving

    /// Every document, in stable order (oldest first), in one array. Commands that may meet a
    /// large vault use ``forEachRecord(_:)`` or ``select(_:)``.
    /// - Returns: the records, and the objects that could not be read (with why).
    package func records() throws -> (records: [DocumentRecord], unreadable: [(DocumentID, VaultError)]) {
        var all: [DocumentRecord] = []
        let unreadable = try forEachRecord { all.append($0) }
        return (all, unreadable)
    }

    /// Calls `body` with every document in stable order (oldest first), reading the index one
    /// row at a time: the first comes before the rest are read, and memory does not grow with
    /// the vault.
    /// - Returns: the objects that could not be read (with why).
    @discardableResult
    package func forEachRecord(_ body: (DocumentRecord) throws -> Void) throws -> [(DocumentID, VaultError)] {
        try withIndex(full: true) { index in
            try index.db.reading {
                try index.forEach(body)
                return try index.unreadable()
            }
        }
    }

    /// The documents `selection` names, in stable order: lookups by name, id prefix and tag
    /// read only the rows they match.
    package func select(_ selection: DocumentSelection) throws -> [DocumentRecord] {
        try lookingUp(full: selection.documents.isEmpty) { index in try selection.apply(to: IndexCatalog(index: index))
        }
    }

    /// Calls `body` with each document `selection` names, in stable order, reading the index one
    /// row at a time (named documents are resolved first: they are few). What ``select(_:)``
    /// returns, without holding it.
    /// - Parameter sending: refuse, after the pass, a document the history removed whose object
    ///   is back (see ``refuseResurrected(_:)``): such a document is not sent anywhere.
    /// - Throws: what ``select(_:)`` throws.
    package func forEachSelected(
        _ selection: DocumentSelection, sending: Bool = false, _ body: (DocumentRecord) throws -> Void
    ) throws {
        var called = false
        var back: [(DocumentRecord, Int)] = []
        var excluded = Set<DocumentID>()
        func visit(_ r: DocumentRecord, _ index: DocumentIndex) throws {
            if excluded.contains(r.id) { return }
            if sending, let position = try index.removal(of: r.id) {
                back.append((r, position))
                return
            }
            called = true
            try body(r)
        }
        func pass(_ index: DocumentIndex) throws {
            excluded = try selection.excludedIDs(in: IndexCatalog(index: index))
            if !selection.documents.isEmpty || selection.tags.count > 1 {
                for r in try selection.apply(to: IndexCatalog(index: index)) { try visit(r, index) }
            } else if let tag = selection.tags.first {
                var any = false
                try index.forEach(tagged: tag) {
                    any = true; try visit($0, index)
                }
                if !any { throw VaultError(.notFound, "no documents have the tag '\(tag)'") }
            } else {
                try index.forEach { try visit($0, index) }
            }
        }
        do {
            try withIndex(full: selection.documents.isEmpty) { index in try index.db.reading { try pass(index) } }
        } catch let e as VaultError where e.code == .notFound && !called && back.isEmpty && !selection.documents.isEmpty
        {
            // As lookingUp: nothing is reported missing before the rows are counted.
            try withIndex(full: true) { index in try index.db.reading { try pass(index) } }
        }
        if let (first, position) = back.first {
            throw Self.resurrected(first, position: position, more: back.count - 1)
        }
    }

    /// The records of `ids`, in this order, read from the index in one snapshot.
    /// - Parameter skippingMissing: leave out a document that is no longer in the vault, instead
    ///   of throwing ``VaultError/Code/notFound``.
    package func records(_ ids: [DocumentID], skippingMissing: Bool = false) throws -> [DocumentRecord] {
        try withIndex { index in
            try index.db.reading {
                try ids.compactMap { id in
                    guard let r = try index.record(id) else {
                        if skippingMissing { return nil }
                        throw VaultError(
                            .notFound, "document \(id) is no longer in the vault (was it removed meanwhile?)")
                    }
                    return r
                }
            }
        }
    }

    /// Runs `body` on the index as a catalog, in one snapshot (a front end's own lookups, such as
    /// the CLI's guess between a name and an id prefix), with ``lookingUp(full:_:)``'s recount.
    package func lookUp<R>(_ body: (any DocumentCatalog) throws -> R) throws -> R {
        try lookingUp(full: false) { index in try body(IndexCatalog(index: index)) }
    }

    /// Runs a lookup in one snapshot of the index. When it finds nothing, the document rows are
    /// counted and the lookup made again (after a rebuild, if rows were deleted): a row deleted
    /// from the index is never reported as a missing document.
    private func lookingUp<R>(full: Bool, _ body: (DocumentIndex) throws -> R) throws -> R {
        do {
            return try withIndex(full: full) { index in try index.db.reading { try body(index) } }
        } catch let e as VaultError where e.code == .notFound && !full {
            return try withIndex(full: true) { index in try index.db.reading { try body(index) } }
        }
    }

    /// The objects whose envelope could not be read (with why): not listed, not selected.
    package func unreadableObjects() throws -> [(DocumentID, VaultError)] {
        try withIndex { index in try index.unreadable() }
    }

    /// The document `id`, if the vault has it.
    package func record(_ id: DocumentID) throws -> DocumentRecord? {
        try withIndex { index in try index.record(id) }
    }

    /// The number of documents.
    package func documentCount() throws -> Int {
        try withIndex { index in try index.counts().documents }
    }

    /// Opens a document's envelope for reading (header checked and authenticated). Errors,
    /// now and from the reader later, name the document. `threads` is how many threads open
    /// each batch of chunks (default: one per core); `batching`, how many chunks a batch holds.
    package func open(
        _ id: DocumentID, verifyDigest: Bool = false, threads: Int = Parallelism.allCores,
        batching: ChunkBatching = .reading, startChunk: UInt64 = 0, readAhead: Bool = true
    ) throws -> EnvelopeReader {
        do {
            let reader = try openEnvelope(
                id, verifyDigest: verifyDigest, threads: threads, batching: batching, startChunk: startChunk,
                readAhead: readAhead)
            reader.context = "document \(id)"
            return reader
        } catch {
            throw VaultError.from(error).context("document \(id)")
        }
    }

    /// Random access to a document's plaintext: ``DocumentReader/read(at:count:)`` decrypts and
    /// authenticates only the chunks that cover the range, through a cache of at most
    /// `cacheBytes` of opened chunks.
    package func randomAccess(_ id: DocumentID, cacheBytes: Int = 4 << 20) throws -> DocumentReader {
        let first = try open(id, batching: ChunkBatching(chunks: 1), readAhead: false)
        return DocumentReader(metadata: first.metadata, cacheBytes: cacheBytes) { [self] start, chunks in
            do {
                let r = try openEnvelope(
                    id, threads: 1, batching: ChunkBatching(chunks: chunks), startChunk: start, readAhead: false)
                r.context = "document \(id)"
                return r
            } catch {
                throw VaultError.from(error).context("document \(id)")
            }
        }
    }

    /// Opens an envelope; errors do not name the document (for callers that report ids themselves).
    func openEnvelope(
        _ id: DocumentID, verifyDigest: Bool = false, threads: Int = Parallelism.allCores,
        batching: ChunkBatching = .reading, startChunk: UInt64 = 0, readAhead: Bool = true
    ) throws -> EnvelopeReader {
        // The one way to a document's contents: a capture-only station has none to open, and an
        // office opens what came captured with its identity only.
        if capturesOnly { throw CapturedDocument.refusal() }
        if holdsCaptured(id) { throw CapturedDocument.sealedAtOffice(id) }
        if let source = store.source {
            return try EnvelopeReader(
                input: try source.input(for: id, sequential: startChunk == 0 && readAhead), keyring: keyring,
                expectedID: id,
                verifyDigest: verifyDigest, threads: threads, batching: batching, startChunk: startChunk,
                readAhead: readAhead)
        }
        let file: OpenFile
        do {
            file = try OpenFile.openStored(store.objectPath(id))
        } catch let e as VaultError where e.code == .notFound {
            throw VaultError(.notFound, "its object file is missing (was it removed?)")
        }
        // Read once, front to back: the disk is kept reading ahead of the decryption.
        let input: any EnvelopeInput = startChunk == 0 && readAhead ? try ReadAheadFile(file) : file
        return try EnvelopeReader(
            input: input, keyring: keyring, expectedID: id, verifyDigest: verifyDigest, threads: threads,
            batching: batching, startChunk: startChunk, readAhead: readAhead)
    }

    // MARK: Removing

    /// Deletes documents, under the writer lock: names them in a sealed `remove.pending`, unlinks
    /// their objects, updates the index and records the removal in the history (a crash
    /// midway is finished by the next writer).
    package func removeDocuments(_ ids: [DocumentID]) throws {
        try store.withWriterLock { lock in
            let documents = try withIndex(lock) { index in
                try ids.map { id in
                    try index.record(id).map(HistoryRecord.Document.init)
                        ?? HistoryRecord.Document(id: id, name: "", sha256: "", size: 0)
                }
            }
            try remove(documents, lock)
        }
    }

    /// Removes temporary files that killed writers left in the vault's folder; with `objects`,
    /// in `objects/` too (which means reading all of it: done when the index is reconciled —
    /// a killed writer's temporary file changes the folder's stamp — and by audit and verify).
    package func sweepTemporaries(objects: Bool = false) {
        if objects { AtomicFile.sweep(store.objectsPath) }
        if objects && store.source == nil { sweepLoneCapturedMetadata() }
        AtomicFile.sweep(store.root)
        if FileSystem.kind(of: store.stagingPath) == .directory { AtomicFile.sweep(store.stagingPath) }
    }
}
