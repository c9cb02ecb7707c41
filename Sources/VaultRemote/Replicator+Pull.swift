#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3

/// Pull: what the store holds that the vault lacks, fetched, checked and taken in.
extension Replicator {
    /// Fetches what the vault lacks: tombstones for documents it holds are opened (a forged
    /// one is reported and ignored) and applied; envelopes it has neither as object nor as a
    /// removal are downloaded into `objects/` under a temporary name, authenticated chunk by
    /// chunk with their id, and only then taken in. A damaged or foreign envelope is reported
    /// in ``PullReport/rejected`` and not taken.
    public func pull(progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }) async throws -> PullReport {
        try await pull(retiredEpoch: nil, progress: progress)
    }

    /// ``pull(progress:)``; with `retiredEpoch`, from a store that holds this vault under that
    /// epoch, which a password change here retired (a push carrying the change takes in first
    /// what the store has and this vault lacks).
    func pull(
        retiredEpoch: UInt32?, progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }
    ) async throws -> PullReport {
        var report = PullReport()
        let identity = try await retrying { try await checkIdentity(create: false) }
        if let behind = identity.behind, retiredEpoch != behind {
            // What the store holds under the retired epoch is taken in only by the push that
            // carries the change (a plain pull would refuse each such envelope).
            throw VaultError(
                .alreadyExists,
                "\(location) still holds this vault under the password changed here (key epoch \(behind))",
                hint: "push to it first: the push carries the change, and takes in what the store has")
        }
        let epoch = retiredEpoch
        vault.sweepTemporaries(objects: true)  // what a killed pull or clone was downloading
        let remote = try await retrying { try await remoteState() }
        let local = try vault.objectIDs()
        let removedHere = try vault.removedDocuments()
        // Only tombstones that open count: junk under removed/ removes and hides nothing. Those of
        // documents this vault removed already are not fetched again (their objects are not
        // wanted anyway): a pull costs the listing and what is new, not the store's history.
        let opened = try await openTombstones(
            remote.tombstones.filter { local.contains($0) || (remote.objects[$0] != nil && removedHere[$0] == nil) })
        report.refusedTombstones = opened.refused
        let stones = opened.valid.filter { local.contains($0.key) }.sorted { $0.key < $1.key }.map(\.value)
        try vault.applyTombstones(stones)
        report.removed = stones.map(\.id)
        // A captured document's metadata file is counted with its data file.
        let wanted = remote.objects.keys.filter {
            !local.contains($0) && opened.valid[$0] == nil && removedHere[$0] == nil
        }.sorted()
        var state = TransferProgress(
            objectsTotal: wanted.count,
            bytesTotal: wanted.reduce(0) { $0 + remote.objects[$1]! + (remote.captured[$1] ?? 0) })
        progress(state)
        var queue = wanted.makeIterator()
        do {
            try await withThrowingTaskGroup(of: (DocumentID, Result<DocumentRecord, VaultError>, UInt64).self) {
                group in
                func launch() -> Bool {
                    guard let id = queue.next() else { return false }
                    group.addTask {
                        try await self.retrying {
                            try await self.fetch(
                                id, size: remote.objects[id] ?? 0, metadataSize: remote.captured[id],
                                retiredEpoch: epoch)
                        }
                    }
                    return true
                }
                for _ in 0..<parallel where launch() {}
                while let (id, result, bytes) = try await group.next() {
                    switch result {
                    case .success(let record):
                        report.fetched.append(record)
                        report.fetchedBytes += bytes
                    case .failure(let e):
                        report.rejected.append(RejectedObject(key: "objects/\(id.hex).vlt", error: e))
                    }
                    state.objectsDone += 1
                    state.bytesDone += (remote.objects[id] ?? 0) + (remote.captured[id] ?? 0)
                    progress(state)
                    _ = launch()
                }
            }
        } catch {
            // What was taken in before the failure counts: the next pull does not fetch it again.
            try? vault.recordFetched(
                report.fetched, from: location.description, anomalies: Self.anomalies(report.refusedTombstones))
            throw error
        }
        try vault.recordFetched(
            report.fetched, from: location.description, anomalies: Self.anomalies(report.refusedTombstones))
        return report
    }

    /// Refused tombstones as history anomalies (`tombstone-refused`), so audits name them.
    package static func anomalies(_ refused: [RejectedObject]) -> [HistoryRecord.Anomaly] {
        refused.map {
            HistoryRecord.Anomaly(
                code: "tombstone-refused",
                message: "\($0.key) on the store is not a tombstone of this vault, and hid nothing: \($0.error.message)"
            )
        }
    }

    /// Fetches and opens the tombstones of `ids` (GETs of at most ``Tombstone/maxSize`` bytes):
    /// one counts only when it authenticates for its id under this vault's current key. The
    /// others (junk, foreign, forged, sealed under a retired key) are returned by key with why.
    package func openTombstones(
        _ ids: Set<DocumentID>
    ) async throws -> (valid: [DocumentID: Tombstone], refused: [RejectedObject]) {
        var valid: [DocumentID: Tombstone] = [:]
        var refused: [RejectedObject] = []
        for id in ids.sorted() {
            do {
                let bytes = try await retrying {
                    try await client.getObject(
                        bucket: location.bucket, key: location.tombstoneKey(id), range: nil, limit: Tombstone.maxSize)
                }
                valid[id] = try vault.openTombstone(bytes, id: id)
            } catch let e as VaultError where e.code.isDamage || e.code == .notFound {
                refused.append(RejectedObject(key: "removed/\(id.hex)", error: e))
            }
        }
        return (valid, refused)
    }

    /// Downloads one envelope into a temporary file and takes it in if it authenticates; with
    /// `metadataSize`, a captured document: its metadata file first, then its data file, taken
    /// in as a pair (``Vault/acceptFetchedCaptured(data:metadata:id:retiredEpoch:)``).
    /// Damage is a result (the pull goes on); a network or disk failure is thrown.
    func fetch(
        _ id: DocumentID, size: UInt64, metadataSize: UInt64? = nil, retiredEpoch: UInt32? = nil
    ) async throws -> (DocumentID, Result<DocumentRecord, VaultError>, UInt64) {
        var metadata: AtomicFile?
        if let metadataSize {
            let staged = try vault.stagingCapturedMetadata(for: id)
            switch try await download(location.capturedMetadataKey(id), size: metadataSize, into: staged) {
            case .failure(let e): return (id, .failure(e), metadataSize)
            case .success: metadata = staged
            }
        }
        let staged = try vault.stagingFile(for: id)
        let bytes: UInt64
        do {
            switch try await download(location.objectKey(id), size: size, into: staged) {
            case .failure(let e):
                metadata?.discard()
                return (id, .failure(e), size)
            case .success(let n): bytes = n
            }
        } catch {
            metadata?.discard()
            throw error
        }
        do {
            let record: DocumentRecord
            if let metadata {
                record = try vault.acceptFetchedCaptured(
                    data: staged, metadata: metadata, id: id, retiredEpoch: retiredEpoch)
            } else {
                record =
                    try retiredEpoch.map { try vault.acceptFetched(staged, id: id, retiredEpoch: $0) }
                    ?? vault.acceptFetched(staged, id: id)
            }
            return (id, .success(record), bytes + (metadataSize ?? 0))
        } catch let e as VaultError where e.code.isDamage {
            return (id, .failure(e), bytes)
        }
    }

    /// Downloads object `key` into `staged`, never more than the listing's `size` (a store that
    /// sends on and on fills no disk): the bytes, or the damage (`trailing-data`). The staged
    /// file is discarded on any failure.
    func download(
        _ key: String, size: UInt64, into staged: AtomicFile
    ) async throws -> Result<UInt64, VaultError> {
        let file = staged.file
        do {
            return .success(
                try await client.getObject(bucket: location.bucket, key: key, range: nil, expected: size) { part in
                    try part.withUnsafeReadableBytes { try file.write($0) }
                })
        } catch let e as VaultError where e.code == .trailingData {
            staged.discard()
            return .failure(e)
        } catch {
            staged.discard()
            throw error
        }
    }
}
