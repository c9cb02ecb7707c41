import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An unlocked vault: the key-encryption key (one Argon2id run) and the vault key, with the
/// document operations. Every operation opens envelopes with the same keyring.
public final class Vault: @unchecked Sendable {
    // @unchecked: all stored properties are immutable after init; the keys are read-only.
    /// The directory.
    public let store: VaultStore
    let config: VaultConfig
    let keyring: Keyring
    let vaultKey: SecretBytes
    let random: any RandomSource

    init(store: VaultStore, config: VaultConfig, keyring: Keyring, vaultKey: SecretBytes, random: any RandomSource) {
        self.store = store
        self.config = config
        self.keyring = keyring
        self.vaultKey = vaultKey
        self.random = random
    }

    /// The vault's random id.
    public var id: String { config.id }
    /// The vault's Argon2id parameters.
    public var kdf: KDFParameters { keyring.kdf }

    // MARK: Adding

    /// Encrypts everything `input` yields into a new document.
    ///
    /// The envelope is written to a temporary file in `objects/` (locked, so a cleaner never
    /// takes it for an orphan), fsynced and renamed to `<id>.vlt` — the commit point — then the
    /// index is updated under the writer lock. A crash before the rename leaves only a temp file,
    /// removed by a later writer; a crash after it leaves a stale index, rebuilt on next use.
    /// - Parameters:
    ///   - contentType: the MIME type, or nil to detect it from the first bytes.
    ///   - progress: called with the plaintext bytes read so far.
    public func add(from input: FileDescriptor, name: String, contentType: String? = nil, tags: [String] = [],
                    now: Date = Date(), progress: ((UInt64) -> Void)? = nil) throws -> DocumentRecord {
        let id = DocumentID.random(using: random)
        let temp = "\(store.objectsPath)/.tmp-\(id.hex)"
        let file = try FileDescriptor.createExclusive(temp)
        _ = try file.lockExclusive()
        var committed = false
        defer { if !committed { try? FileSystem.remove(temp) } }

        let bufferSize = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 64)
        defer { Sodium.wipe(buffer); buffer.deallocate() }
        var n = try input.readFully(into: buffer)
        let type = contentType ?? ContentType.sniff(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        let template = DocumentMetadata(name: name, contentType: type, size: 0, sha256: [UInt8](repeating: 0, count: 32),
                                        addedAtMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)), tags: tags)
        let writer = try EnvelopeWriter(output: SequentialFileOutput(file: file), keyring: keyring, documentID: id, metadata: template, random: random)
        while n > 0 {
            try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            progress?(writer.plaintextCount)
            n = try input.read(into: buffer)
        }
        let metadata = try writer.finish()
        try file.sync()
        try FileSystem.rename(temp, to: store.objectPath(id))
        committed = true
        try FileSystem.syncDirectory(store.objectsPath)
        let record = DocumentRecord(id: id, metadata: metadata)
        try store.withLock {
            var index = try loadIndex().index
            index.records[id] = record
            try saveIndex(index)
            removeStaleTemporaries()
        }
        return record
    }

    // MARK: Listing and resolving

    /// Every document, in stable order (oldest first). Rebuilds the index if it is stale.
    /// - Returns: the records, and the objects that could not be read (with why).
    public func records() throws -> (records: [DocumentRecord], unreadable: [(DocumentID, VaultError)]) {
        var state = try loadIndex()
        if state.status != .current {
            state = try store.withLock {
                let fresh = try loadIndex()
                if fresh.status != .current { try saveIndex(fresh.index) }
                return fresh
            }
        }
        return (Array(state.index.records.values).stableOrder(), state.unreadable.sorted { $0.0 < $1.0 })
    }

    /// The document a user means by `query`: a unique id prefix (at least 4 hex digits) or an
    /// exact name.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` (naming the candidates).
    public func resolve(_ query: String, in records: [DocumentRecord]) throws -> DocumentRecord {
        let lower = query.lowercased()
        let isHex = lower.count >= 4 && lower.allSatisfy { $0.isHexDigit }
        var matches = records.filter { $0.metadata.name == query }
        if isHex { matches += records.filter { $0.id.hex.hasPrefix(lower) && $0.metadata.name != query } }
        switch matches.count {
        case 1: return matches[0]
        case 0:
            let hint = lower.count < 4 && lower.allSatisfy(\.isHexDigit) ? "an id prefix needs at least 4 characters" : "see 'vault list'"
            throw VaultError(.notFound, "no document matches '\(query)'", hint: hint)
        default:
            let names = matches.prefix(5).map { "\($0.id.hex.prefix(12)) \($0.metadata.name)" }.joined(separator: ", ")
            throw VaultError(.ambiguous, "'\(query)' matches \(matches.count) documents: \(names)",
                             hint: "use a longer id prefix")
        }
    }

    /// Opens a document's envelope for reading (header checked and authenticated). Errors,
    /// now and from the reader later, name the document. `threads` is how many threads open
    /// each batch of chunks (default: one per core).
    public func open(_ id: DocumentID, verifyDigest: Bool = false, threads: Int = Parallelism.allCores) throws -> EnvelopeReader {
        do {
            let reader = try openEnvelope(id, verifyDigest: verifyDigest, threads: threads)
            reader.context = "document \(id)"
            return reader
        } catch {
            throw VaultError.from(error).context("document \(id)")
        }
    }

    /// Opens an envelope; errors do not name the document (for callers that report ids themselves).
    func openEnvelope(_ id: DocumentID, verifyDigest: Bool = false, threads: Int = Parallelism.allCores) throws -> EnvelopeReader {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.openForReading(store.objectPath(id))
        } catch let e as VaultError where e.code == .notFound {
            throw VaultError(.notFound, "its object file is missing (was it removed?)")
        }
        return try EnvelopeReader(input: file, keyring: keyring, expectedID: id, verifyDigest: verifyDigest, threads: threads)
    }

    // MARK: Removing

    /// Deletes documents: unlinks their objects, then updates the index, under the writer lock.
    public func remove(_ ids: [DocumentID]) throws {
        try store.withLock {
            for id in ids { try FileSystem.remove(store.objectPath(id)) }
            try FileSystem.syncDirectory(store.objectsPath)
            var index = try loadIndex().index
            for id in ids { index.records[id] = nil }
            try saveIndex(index)
        }
    }

    // MARK: Index

    enum IndexStatus { case current, missing, damaged, stale }

    struct IndexState {
        var index: VaultIndex
        var status: IndexStatus
        var unreadable: [(DocumentID, VaultError)]
    }

    /// Loads the index and checks it names exactly the objects on disk; if not, rebuilds it in
    /// memory from the objects (keeping the records of objects it already knew).
    func loadIndex() throws -> IndexState {
        let ids = try store.objectIDs()
        var status = IndexStatus.current
        var index = VaultIndex(records: [:])
        if FileSystem.kind(of: store.indexPath) == .missing {
            status = .missing
        } else {
            do {
                index = try VaultIndex.open(try FileSystem.readFile(store.indexPath), vaultKey: vaultKey, vaultID: config.id)
            } catch {
                status = .damaged
            }
        }
        if status == .current && Set(index.records.keys) == ids { return IndexState(index: index, status: .current, unreadable: []) }
        if status == .current { status = .stale }
        var unreadable: [(DocumentID, VaultError)] = []
        index.records = index.records.filter { ids.contains($0.key) }
        for id in ids where index.records[id] == nil {
            do {
                let reader = try openEnvelope(id)
                index.records[id] = DocumentRecord(id: id, metadata: reader.metadata)
            } catch {
                unreadable.append((id, VaultError.from(error)))
            }
        }
        return IndexState(index: index, status: status, unreadable: unreadable)
    }

    func saveIndex(_ index: VaultIndex) throws {
        try FileSystem.writeAtomically(store.indexPath, index.sealed(vaultKey: vaultKey, vaultID: config.id, random: random),
                                       random: random)
    }

    /// Removes temporary files left by writers that died. Called with the writer lock held: a
    /// temp file whose own lock can be taken, and that has not changed for a minute, is an orphan.
    func removeStaleTemporaries() {
        for dir in [store.objectsPath, store.root] {
            guard let names = try? FileSystem.list(dir) else { continue }
            for name in names where name.hasPrefix(".tmp-") {
                let path = "\(dir)/\(name)"
                // Read-only and never O_CREAT: a temp file another writer has just renamed away
                // must not be re-created here.
                guard let f = try? FileDescriptor.openForReading(path), (try? f.lockExclusive(wait: false)) == true else { continue }
                var st = stat()
                if fstat(f.fd, &st) == 0, time(nil) - st.st_mtim.tv_sec > 60 { try? FileSystem.remove(path) }
            }
        }
    }
}
