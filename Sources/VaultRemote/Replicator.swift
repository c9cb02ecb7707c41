#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import VaultCore
import VaultS3

/// Progress of a push or pull: objects and bytes.
public struct TransferProgress: Sendable {
    public var objectsDone = 0, objectsTotal = 0
    public var bytesDone: UInt64 = 0, bytesTotal: UInt64 = 0
}

/// What `push` did.
public struct PushReport: Sendable {
    /// The documents sent, and their envelopes' bytes.
    public var sent: [DocumentID] = []
    public var sentBytes: UInt64 = 0
    /// Tombstones written (removals made here that the store did not have).
    public var tombstones = 0
    /// Objects the store already had (not sent again).
    public var alreadyThere = 0
    /// True when this push wrote the store's `vault.json` (the first push to the prefix).
    public var created = false
    /// True when this push carried a password change made here to the store: its `vault.json`
    /// now holds the vault under the new password.
    public var passwordCarried = false
    /// Documents the store held and this vault lacked, taken in before a password change was
    /// carried (so that every envelope there could be replaced by one under the new key).
    public var fetchedForRotation = 0
    /// Objects under `removed/` that are not tombstones of this vault (junk, foreign, forged,
    /// or sealed under a retired key), with why: they hide nothing.
    public var refusedTombstones: [RejectedObject] = []
    /// For a vault that has served as a receiver: what of its key, stations and batches was
    /// carried to the store's receivers (nil for a vault that never was one).
    package var office: OfficeCarried?
}

/// What a push did with the back office a vault kept (``OfficeCarrier``).
package enum OfficeCarried: Sendable, Equatable {
    /// The key, and the station, operator and batch records the store lacked (counts), were written.
    case carried(stations: Int, batches: Int, operators: Int)
    /// The store held everything already.
    case alreadyThere
    /// The store's receivers sign with another key (hex): nothing was carried.
    case otherKey(String)
}

/// What a push carries to a store, beside the documents, for the back office a vault keeps: its
/// receivers' records, which this module does not know (VaultReceive keeps them, in a vault's
/// history or a store's receivers' log). The push is given one (``Replicator/push(progress:office:)``).
package protocol OfficeCarrier: Sendable {
    /// Carries the office `vault` served as a receiver (its key, stations, operators and
    /// batches) to the store, once its documents are there; nil for a vault that never served.
    func carry(_ vault: Vault, to replicator: Replicator) async throws -> OfficeCarried?
    /// Marks in the store's office records that its password changed (`detail`), once the new
    /// `vault.json` is there.
    func markPasswordChange(_ vault: Vault, on replicator: Replicator, detail: String) async throws
}

/// An object on the store that was not taken, and why (damaged, foreign, forged, or sealed
/// under a retired key).
public struct RejectedObject: Sendable {
    /// Its key under the vault's prefix (`objects/<id>.vlt`, `removed/<id>`).
    public var key: String
    /// Why it was not taken.
    public var error: VaultError

    /// The object at `key`, refused for `error`.
    public init(key: String, error: VaultError) {
        self.key = key
        self.error = error
    }
}

/// A new local replica, made by ``Replicator/clone(_:client:into:password:parallel:progress:)``.
public struct Clone: Sendable {
    /// The replica, unlocked.
    public var vault: Vault
    /// What the pull that filled it did.
    public var report: PullReport
}

/// What `pull` did.
public struct PullReport: Sendable {
    /// The documents taken in, and their envelopes' bytes.
    public var fetched: [DocumentRecord] = []
    public var fetchedBytes: UInt64 = 0
    /// Documents removed here because the store had their tombstones.
    public var removed: [DocumentID] = []
    /// Objects that were not taken (damaged or foreign), with why.
    public var rejected: [RejectedObject] = []
    /// Objects under `removed/` that are not tombstones of this vault, with why: they remove
    /// and hide nothing.
    public var refusedTombstones: [RejectedObject] = []
}

/// Replicates a vault to and from an S3-compatible store (docs/REMOTE.md).
///
/// Envelopes are immutable and named by random ids, so replicas never conflict on a write: a
/// push sends what the store's listing lacks, a pull fetches what the vault lacks, and both
/// resume after a kill by listing again (nothing finished is sent or fetched twice). Every
/// fetched envelope is authenticated chunk by chunk, with its id, before it counts.
public final class Replicator: Sendable {
    public let vault: Vault
    /// The store (an ``S3Client``, or any ``ObjectStore``).
    public let client: any ObjectStore
    public let location: RemoteLocation
    /// Objects in flight at once.
    public let parallel: Int
    /// Envelopes larger than this go by multipart upload, in parts of this size.
    public let partSize: Int
    /// How each store request is retried (one budget per request).
    public let policy: RetryPolicy

    public init(
        vault: Vault, client: any ObjectStore, location: RemoteLocation, parallel: Int = 4, partSize: Int = 8 << 20,
        policy: RetryPolicy = .store
    ) {
        self.vault = vault
        self.client = client
        self.location = location
        self.parallel = max(1, parallel)
        self.partSize = max(5 << 20, partSize)
        self.policy = policy
    }

    static let envelopeType = "application/octet-stream"

    // MARK: The store's state

    /// What the store holds, from two listings (every page).
    struct RemoteState {
        /// Envelopes and captured documents' data files (id → size).
        var objects: [DocumentID: UInt64] = [:]
        var tombstones: Set<DocumentID> = []
        /// Captured documents' metadata files (id → size).
        var captured: [DocumentID: UInt64] = [:]
    }

    /// The store's objects and tombstones.
    func remoteState() async throws -> RemoteState {
        async let objects = client.listObjects(bucket: location.bucket, prefix: location.objectsPrefix, pageSize: 1000)
        async let removed = client.listObjects(bucket: location.bucket, prefix: location.removedPrefix, pageSize: 1000)
        var state = RemoteState()
        for o in try await objects {
            if let id = location.objectID(o.key) {
                state.objects[id] = o.size
            } else if let id = location.capturedMetadataID(o.key) {
                state.captured[id] = o.size
            }
        }
        state.tombstones = Set(try await removed.compactMap { location.tombstoneID($0.key) })
        return state
    }

    /// The `id` field of a `vault.json`.
    static func vaultID(_ config: [UInt8]) -> String? {
        struct Config: Decodable { let id: String }
        return (try? JSONDecoder().decode(Config.self, from: Data(config)))?.id
    }

    /// Fails unless the store holds this vault (or, with `create`, nothing yet: then this
    /// vault's `vault.json` is written, never over another's). Returns whether it wrote it, and
    /// whether the store holds this vault under an epoch this vault retired (its password was
    /// changed here since: a push carries the change).
    func checkIdentity(create: Bool) async throws -> (created: Bool, behind: UInt32?) {
        let probe = Probe(client: client, location: location)
        var remote = try await probe.config()
        var created = false
        if remote == nil {
            guard create else {
                throw VaultError(.notFound, "no vault at \(location) (it has no vault.json)", remedy: .pushFirst)
            }
            created = try await client.putObjectIfAbsent(
                bucket: location.bucket, key: location.configKey, body: ByteBuffer(bytes: try vault.configBytes()),
                contentType: "application/json")
            if !created { remote = try await probe.config() }  // another station was first
        }
        guard let remote else { return (created, nil) }
        if Self.vaultID(remote) != vault.id {
            throw VaultError(
                .alreadyExists,
                """
                    \(location) holds another vault (id \(Self.vaultID(remote)?.prefix(12) ?? "unreadable"), this one \
                    is \(vault.id.prefix(12)))
                    """,
                hint: "push to an empty prefix, or clone that vault instead")
        }
        // A password change rewrites vault.json: the store may hold this vault's keys, an epoch
        // this vault retired (changed here: a push carries it), or a later one (changed at another
        // station: a pull takes it on, given the new password). Anything else would mix envelopes
        // sealed under keys its readers do not have.
        guard remote != (try vault.configBytes()) else { return (created, nil) }
        switch vault.relation(ofConfig: remote) {
        case .same: return (created, nil)
        case .earlier(let epoch): return (created, epoch)
        case .later:
            throw VaultError(
                .alreadyExists,
                """
                    the vault's password was changed at another station: \(location) holds it under a later key \
                    than this vault's
                    """,
                remedy: .takePasswordChange)
        case .other:
            throw VaultError(
                .alreadyExists,
                """
                    \(location) holds this vault under another password (its vault.json is not this vault's, nor of \
                    an earlier or later key epoch of it)
                    """,
                remedy: .pushToNewPrefixOrClone)
        }
    }

    /// The store's `vault.json` (nil when the prefix holds none).
    public func storeConfig() async throws -> [UInt8]? {
        try await retrying { try await Probe(client: client, location: location).config() }
    }

    // MARK: Push

    /// Sends the store what it lacks: tombstones of documents removed here (then the removed
    /// envelopes go from the store), and the envelopes of documents it has neither as object
    /// nor as tombstone. The first push to an empty prefix writes `vault.json` there.
    public func push(progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }) async throws -> PushReport {
        try await push(progress: progress, office: nil)
    }

    /// ``push(progress:)``, carrying the office the vault keeps with `office`.
    package func push(
        progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }, office: (any OfficeCarrier)?
    ) async throws -> PushReport {
        // A captured document's metadata file has no place in the store's layout yet.
        if vault.capturesOnly {
            throw CapturedDocument.refusal("this version cannot push it to a store yet", hint: "keep it in its folder")
        }
        var report = PushReport()
        let identity = try await retrying { try await checkIdentity(create: true) }
        report.created = identity.created
        if let epoch = identity.behind { report.fetchedForRotation = try await takeInBeforeCarrying(from: epoch) }
        let remote = try await retrying { try await remoteState() }
        let removed = try vault.removedDocuments()
        let local = try vault.objectIDs()
        let opened = try await pushTombstones(remote, removed: removed, local: local, into: &report)
        // After a password change here, every envelope the store holds goes again (under the new
        // key epoch), replacing the earlier epoch's.
        let missing =
            (identity.behind == nil ? local.subtracting(remote.objects.keys) : local)
            .subtracting(opened.keys).sorted()
        report.alreadyThere = local.count - missing.count
        var sizes: [DocumentID: UInt64] = [:]
        for id in missing {
            sizes[id] = (try? VaultCore.OpenFile.openStored(vault.objectPath(id)).size()) ?? 0
            if vault.holdsCaptured(id) {
                sizes[id]! += (try? VaultCore.OpenFile.openStored(vault.capturedMetadataPath(id)).size()) ?? 0
            }
        }
        var state = TransferProgress(objectsTotal: missing.count, bytesTotal: sizes.values.reduce(0, +))
        progress(state)
        var queue = missing.makeIterator()
        try await withThrowingTaskGroup(of: (DocumentID, UInt64).self) { group in
            func launch() -> Bool {
                guard let id = queue.next() else { return false }
                let replace = identity.behind != nil && remote.objects[id] != nil
                group.addTask { (id, try await self.retrying { try await self.sendObjects(id, replace: replace) }) }
                return true
            }
            for _ in 0..<parallel where launch() {}
            while let (id, bytes) = try await group.next() {
                report.sent.append(id)
                report.sentBytes += bytes
                state.objectsDone += 1
                state.bytesDone += bytes
                progress(state)
                _ = launch()
            }
        }
        if let epoch = identity.behind {
            try await finishCarrying(from: epoch, office: office)
            report.passwordCarried = true
        }
        // A receiver's vault: its key, stations and batches go to the store's receivers' log,
        // once its documents are there, so receivers serving the store go on where it left off.
        report.office = try await office?.carry(vault, to: self)
        return report
    }

    /// Tombstones of removals made here that the store lacks (or holds junk in place of) are
    /// written, and the removed envelopes deleted from it. Returns the store's tombstones that
    /// open (only those count: junk under removed/ hides no document from the store).
    private func pushTombstones(
        _ remote: RemoteState, removed: [DocumentID: HistoryRecord.Document], local: Set<DocumentID>,
        into report: inout PushReport
    ) async throws -> [DocumentID: Tombstone] {
        let opened = try await openTombstones(remote.tombstones.filter { local.contains($0) || removed[$0] != nil })
        report.refusedTombstones = opened.refused
        for (id, document) in removed.sorted(by: { $0.key < $1.key }) where opened.valid[id] == nil {
            let stone = try vault.sealTombstone(document)
            if remote.tombstones.contains(id) {
                // Junk in its place: replaced by the real one.
                try await retrying {
                    _ = try await client.putObject(
                        bucket: location.bucket, key: location.tombstoneKey(id), body: ByteBuffer(bytes: stone),
                        contentType: Self.envelopeType, metadata: [:])
                }
                report.tombstones += 1
            } else if try await retrying({
                try await client.putObjectIfAbsent(
                    bucket: location.bucket, key: location.tombstoneKey(id), body: ByteBuffer(bytes: stone),
                    contentType: Self.envelopeType)
            }) {
                report.tombstones += 1
            }
        }
        for id in removed.keys where remote.objects[id] != nil || remote.captured[id] != nil {
            try await retrying { try await client.deleteObject(bucket: location.bucket, key: location.objectKey(id)) }
            if remote.captured[id] != nil {
                try await retrying {
                    try await client.deleteObject(bucket: location.bucket, key: location.capturedMetadataKey(id))
                }
            }
        }
        return opened.valid
    }

    /// The password was changed here and the store still holds the vault under `epoch`: what
    /// it holds and this vault lacks is taken in first (authenticated under that epoch, as a
    /// pull before the change would have taken it, its header sealed again under the current
    /// key), so that every envelope there can then be replaced by one of the new epoch.
    /// Refused when, by this vault's history, the store saw the current epoch already: its
    /// `vault.json` was put back. Returns how many documents were taken in.
    private func takeInBeforeCarrying(from epoch: UInt32) async throws -> Int {
        guard try vault.mayCarryPasswordChange(to: location.description) else {
            throw VaultError(
                .alreadyExists,
                """
                    \(location) holds this vault under a password this vault retired, though it has seen the \
                    current one since: its vault.json was put back (by someone who knew the old password?)
                    """,
                hint: "check who can write to the store, then push to a new prefix")
        }
        return try await pull(retiredEpoch: epoch).fetched.count
    }

    /// Ends carrying a password change: the new `vault.json` goes last, once every envelope on
    /// the store is of the new epoch, and the receivers' log (if the store has one) is marked,
    /// so that no entry under the old key counts after it. Other stations' pulls then take it.
    private func finishCarrying(from epoch: UInt32, office: (any OfficeCarrier)?) async throws {
        try await retrying {
            _ = try await client.putObject(
                bucket: location.bucket, key: location.configKey, body: ByteBuffer(bytes: try vault.configBytes()),
                contentType: "application/json", metadata: [:])
        }
        try await office?.markPasswordChange(vault, on: self, detail: "key epoch \(epoch) → \(vault.keyEpoch)")
    }

    /// Sends one envelope as it is on disk: one PUT with `If-None-Match: *` when it fits a
    /// part, else a multipart upload after a HEAD (an object already there is left alone).
    /// - Parameter path: where the envelope is (by default the vault's own `objects/<id>.vlt`).
    /// - Parameter replace: write it over the store's copy (one of an earlier key epoch).
    /// - Parameter key: where it goes (by default `objects/<id>.vlt`).
    package func send(
        _ id: DocumentID, from path: String? = nil, key: String? = nil, replace: Bool = false
    ) async throws -> UInt64 {
        let file = try VaultCore.OpenFile.openStored(path ?? vault.objectPath(id))
        defer { file.close() }
        let size = try file.size()
        let key = key ?? location.objectKey(id)
        if size <= UInt64(partSize) {
            if replace {
                _ = try await client.putObject(
                    bucket: location.bucket, key: key, body: try Self.read(file, Int(size)),
                    contentType: Self.envelopeType, metadata: [:])
            } else {
                _ = try await client.putObjectIfAbsent(
                    bucket: location.bucket, key: key, body: try Self.read(file, Int(size)),
                    contentType: Self.envelopeType)
            }
            return size
        }
        if !replace, try await client.headObject(bucket: location.bucket, key: key) != nil { return size }
        let upload = try await client.createMultipartUpload(
            bucket: location.bucket, key: key, contentType: Self.envelopeType, metadata: [:])
        do {
            var parts: [UploadedPart] = []
            var offset: UInt64 = 0
            while offset < size {
                let body = try Self.read(file, Int(min(UInt64(partSize), size - offset)))
                let number = parts.count + 1
                let etag = try await client.uploadPart(
                    bucket: location.bucket, key: key, uploadID: upload, number: number, body: body)
                parts.append(UploadedPart(number: number, etag: etag))
                offset += UInt64(body.readableBytes)
            }
            try await client.completeMultipartUpload(bucket: location.bucket, key: key, uploadID: upload, parts: parts)
        } catch {
            try? await client.abortMultipartUpload(bucket: location.bucket, key: key, uploadID: upload)
            throw error
        }
        return size
    }

    /// Sends document `id`: its envelope, or a captured document's metadata file and then its
    /// data file (so a data file on the store always has its metadata file). Returns the bytes.
    func sendObjects(_ id: DocumentID, replace: Bool) async throws -> UInt64 {
        var bytes: UInt64 = 0
        if vault.holdsCaptured(id) {
            bytes += try await send(
                id, from: vault.capturedMetadataPath(id), key: location.capturedMetadataKey(id), replace: replace)
        }
        return bytes + (try await send(id, replace: replace))
    }

    /// The next `count` bytes of `file` in a buffer the HTTP client sends without a copy.
    static func read(_ file: VaultCore.OpenFile, _ count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
            var filled = 0
            while filled < count {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: space[filled..<count]))
                if n == 0 { throw VaultError(.io, "an object file ended early (was it changed while it was sent?)") }
                filled += n
            }
            return filled
        }
        return buffer
    }

    /// Runs `body` under the policy: again after a transient failure (a dropped connection,
    /// 5xx, SlowDown), at once for anything else. The client itself never retries.
    func retrying<T>(_ body: () async throws -> T) async throws -> T {
        try await policy.run(isTransient: VaultError.isTransientStoreFailure, body)
    }

    /// A `vault.json` is well under this; a store that sends more is not read further.
    public static let configLimit = 1 << 20

    // MARK: Clone

    /// Makes a new local replica at `store` of the vault at `location`: its `vault.json` is
    /// fetched and the password checked before anything is created, the store is recorded as
    /// the remote `origin`, then everything is pulled.
    public static func clone(
        _ location: RemoteLocation, client: any ObjectStore, into store: VaultStore, password: SecretBytes,
        parallel: Int = 4, progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }
    ) async throws -> Clone {
        let probe = Probe(client: client, location: location)
        guard let config = try await probe.config() else {
            throw VaultError(.notFound, "no vault at \(location) (it has no vault.json)", remedy: .pushFirst)
        }
        let vault = try store.createReplica(configBytes: config, password: password, source: location.description)
        // The store is the replica's `origin` from the start: a clone cut short is finished by a pull.
        var remotes = RemoteList()
        remotes.remotes.append(.init(name: "origin", url: location.description))
        try remotes.save(vault)
        let r = Replicator(vault: vault, client: client, location: location, parallel: parallel)
        return Clone(vault: vault, report: try await r.pull(progress: progress))
    }

    /// Reads a store's `vault.json` (nil when the prefix holds none), after checking the bucket
    /// exists: for push and pull, and before there is a local vault for clone and direct reads.
    struct Probe {
        let client: any ObjectStore
        let location: RemoteLocation

        func config() async throws -> [UInt8]? {
            guard try await client.bucketExists(location.bucket) else {
                throw VaultError(
                    .notFound, "NoSuchBucket: the bucket \(location.bucket) does not exist",
                    remedy: .checkBucketAndEndpoint)
            }
            do {
                return try await client.getObject(
                    bucket: location.bucket, key: location.configKey, range: nil, limit: Replicator.configLimit)
            } catch let e as VaultError where e.code == .notFound {
                return nil
            }
        }
    }
}
