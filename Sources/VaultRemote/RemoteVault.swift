import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3

/// Opens a vault kept on an S3-compatible store for reading in place, with no local replica:
/// listing, reading, verifying, exporting and uploading straight from `s3://BUCKET/PREFIX`.
///
/// The store is listed once (objects and tombstones: a document with a tombstone is gone), and
/// its envelopes are read through an ``S3ObjectSource`` (ranged GETs, a byte-limited cache). A
/// local cache folder per store keeps what a local vault keeps beside its objects: `vault.json`
/// (as fetched), the sealed index (rebuilt from the envelopes' headers only, and reused by the
/// next command), the history of what was sent, and upload journals. No plaintext is written.
public enum RemoteVault {
    /// A remote vault, opened: the vault read in place, the source of its objects, and the
    /// objects under `removed/` that are not tombstones of this vault, with why.
    public struct Opened: Sendable {
        /// The vault, unlocked, reading its documents from the store.
        public var vault: Vault
        /// Where its documents are read from (with what it fetched so far).
        public var source: S3ObjectSource
        /// Objects under `removed/` that are not tombstones of this vault (junk, foreign,
        /// forged, or sealed under a retired key): they hide nothing.
        public var refusedTombstones: [RejectedObject]
    }

    /// The cache folder of `location` at `endpoint` under `cacheRoot`.
    public static func cacheFolder(_ location: RemoteLocation, endpoint: URL, under cacheRoot: String) -> String {
        let digest = SHA256.hash(data: Data("\(endpoint.absoluteString)|\(location.description)".utf8))
        return cacheRoot + "/" + Hex.encode(Array(digest.prefix(12)))
    }

    /// Lists the store, fetches `vault.json`, unlocks it with `password` (one Argon2id run) and
    /// brings the index up to date from the headers of the documents it lacks (many in flight).
    /// - Returns: the vault, its object source, and the objects under `removed/` that are not
    ///   tombstones of this vault (junk, foreign, forged, or sealed under a retired key) with why:
    ///   they hide nothing, and the caller names them in a warning.
    public static func open(
        _ location: RemoteLocation, client: any ObjectStore, cacheRoot: String, password: SecretBytes,
        cacheBytes: Int = 64 << 20, policy: RetryPolicy = .store
    ) async throws -> Opened {
        guard
            let config = try await policy.run(
                isTransient: VaultError.isTransientStoreFailure,
                {
                    try await Replicator.Probe(client: client, location: location).config()
                })
        else {
            throw VaultError(.notFound, "no vault at \(location) (it has no vault.json)")
        }
        let (listed, captured, stones) = try await list(location, client: client, policy: policy)
        let unfiltered = S3ObjectSource(
            client: client, location: location, sizes: listed, captured: captured, cacheBytes: cacheBytes,
            policy: policy)

        let folder = cacheFolder(location, endpoint: client.endpoint, under: cacheRoot)
        // The cache root and any missing parent (e.g. ~/.cache), then the store's folder: 0700.
        var parents: [String] = []
        var dir = cacheRoot
        while !dir.isEmpty, dir != "/", FileSystem.kind(of: dir) == .missing {
            parents.insert(dir, at: 0)
            dir = FileSystem.directory(of: dir)
        }
        for dir in parents + [folder, folder + "/objects"] where FileSystem.kind(of: dir) == .missing {
            try FileSystem.makeDirectory(dir)
        }
        let configPath = folder + "/vault.json"
        let current = try? FileSystem.readFile(configPath, limit: 1 << 20)
        if current != config {
            if let current, Replicator.vaultID(current) != Replicator.vaultID(config) {
                // Another vault now lives at that prefix: its predecessor's index and history are not its own.
                for name in ["index.vlt", "log.vlt", "log.head"] where FileSystem.kind(of: folder + "/" + name) == .file
                {
                    try FileSystem.remove(folder + "/" + name)
                }
            }
            try AtomicFile.write(config, to: configPath)
        }
        let unlocked = try VaultStore(root: folder, source: unfiltered).unlock(password: password)
        return try await view(
            unlocked, listed: listed, captured: captured, stones: stones, client: client, location: location,
            cacheBytes: cacheBytes, policy: policy)
    }

    /// `vault`, opened before, as the store holds it now: listed again, so documents put there
    /// since (by receivers of the store) are read and indexed from their headers, and those
    /// removed since are gone.
    public static func reopened(
        _ vault: Vault, client: any ObjectStore, location: RemoteLocation, cacheBytes: Int = 64 << 20,
        policy: RetryPolicy = .store
    ) async throws -> Opened {
        let (listed, captured, stones) = try await list(location, client: client, policy: policy)
        return try await view(
            vault, listed: listed, captured: captured, stones: stones, client: client, location: location,
            cacheBytes: cacheBytes, policy: policy)
    }

    /// The store's objects (with sizes) and the ids its `removed/` names.
    private static func list(
        _ location: RemoteLocation, client: any ObjectStore, policy: RetryPolicy
    ) async throws -> (objects: [DocumentID: UInt64], captured: [DocumentID: UInt64], stones: Set<DocumentID>) {
        let retrying = {
            @Sendable (
                body: @Sendable () async throws -> [S3Client.ListedObject]
            ) async throws -> [S3Client.ListedObject] in
            try await policy.run(isTransient: VaultError.isTransientStoreFailure, body)
        }
        async let objects = retrying {
            try await client.listObjects(bucket: location.bucket, prefix: location.objectsPrefix, pageSize: 1000)
        }
        async let removed = retrying {
            try await client.listObjects(bucket: location.bucket, prefix: location.removedPrefix, pageSize: 1000)
        }
        let stones = Set(try await removed.compactMap { location.tombstoneID($0.key) })
        var listed: [DocumentID: UInt64] = [:]
        var captured: [DocumentID: UInt64] = [:]
        for o in try await objects {
            if let id = location.objectID(o.key) {
                listed[id] = o.size
            } else if let id = location.capturedMetadataID(o.key) {
                captured[id] = o.size
            }
        }
        return (listed, captured, stones)
    }

    /// `unlocked` reading the objects `listed` but those whose tombstone (of `stones`) opens
    /// under its key, with the headers of those its index lacks fetched.
    private static func view(
        _ unlocked: Vault, listed: [DocumentID: UInt64], captured: [DocumentID: UInt64], stones: Set<DocumentID>,
        client: any ObjectStore,
        location: RemoteLocation, cacheBytes: Int, policy: RetryPolicy
    ) async throws -> Opened {
        // A document is gone only when its tombstone opens under this vault's key.
        let opened = try await Replicator(vault: unlocked, client: client, location: location, policy: policy)
            .openTombstones(stones.filter { listed[$0] != nil })
        var sizes = listed
        for id in opened.valid.keys { sizes[id] = nil }
        let source = S3ObjectSource(
            client: client, location: location, sizes: sizes, captured: captured, cacheBytes: cacheBytes,
            policy: policy)
        let vault = unlocked.reading(from: source)
        try source.prefetchHeads(try vault.unindexedObjects())
        return Opened(vault: vault, source: source, refusedTombstones: opened.refused)
    }
}
