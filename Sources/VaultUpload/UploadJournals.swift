import Foundation
import VaultCore

/// The upload journals of a vault (`uploads/<job>.json`): listing them, and removing the ones
/// that are done with. They hold no secret, so this needs no password.
public enum UploadJournals {
    /// Where a journal stands.
    public enum State: String, Codable, Sendable {
        /// Every batch is confirmed.
        case complete
        /// Some batch was attempted and not every one is confirmed: the same command resumes it.
        case interrupted
        /// Nothing was sent yet.
        case pending
    }

    /// One journal, summarized.
    public struct Entry: Codable, Sendable {
        /// The job (the journal's file name without `.json`).
        public var job: String
        /// Its run id.
        public var runId: String
        /// Where it goes (scheme, host, port, path).
        public var target: String
        /// Its state.
        public var state: State
        /// Batches in the run, and how many are confirmed.
        public var batches: Int
        public var confirmed: Int
        /// Documents in the run, and the payload bytes.
        public var documents: Int
        public var payloadBytes: UInt64
        /// Created and last updated (ISO 8601).
        public var created: String
        public var updated: String
    }

    /// Every journal in `store`, oldest first. A journal that cannot be read is an error naming it.
    public static func list(in store: VaultStore) throws -> [Entry] {
        let dir = store.root + "/uploads"
        guard FileSystem.kind(of: dir) == .directory else { return [] }
        return try FileSystem.list(dir).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.map { name in
            let job = String(name.dropLast(5))
            guard let j = try UploadJournal.load(from: store, job: job) else {
                throw VaultError(.notFound, "the upload journal \(dir)/\(name) disappeared")
            }
            let confirmed = j.batches.filter { $0.status == .complete }.count
            let state: State = confirmed == j.batches.count ? .complete : j.batches.contains { $0.attempts > 0 } ? .interrupted : .pending
            return Entry(job: job, runId: j.runId, target: j.target, state: state, batches: j.batches.count, confirmed: confirmed,
                         documents: j.batches.reduce(0) { $0 + $1.documents.count }, payloadBytes: j.batches.reduce(0) { $0 + $1.bytes },
                         created: j.created, updated: j.updated)
        }.sorted { ($0.created, $0.job) < ($1.created, $1.job) }
    }

    /// Removes the journals (and their lock files) of complete uploads, and of unfinished ones
    /// not updated for `abandonedAfter` seconds. A journal whose upload is running (its lock is
    /// held) is kept. Returns the entries removed.
    public static func prune(in store: VaultStore, abandonedAfter: TimeInterval, now: Date = Date()) throws -> [Entry] {
        let dir = store.root + "/uploads"
        let iso = ISO8601DateFormatter()
        var removed: [Entry] = []
        for entry in try list(in: store) {
            let age = iso.date(from: entry.updated).map { now.timeIntervalSince($0) } ?? .infinity
            guard entry.state == .complete || age >= abandonedAfter else { continue }
            let lockPath = UploadJournal.lockPath(in: store, job: entry.job)
            if FileSystem.kind(of: lockPath) == .file {
                let lock = try FileDescriptor.openOrCreate(lockPath)
                guard try lock.lockExclusive(wait: false) else { continue }   // an upload of this job is running
                try FileSystem.remove(UploadJournal.path(in: store, job: entry.job))
                try FileSystem.remove(lockPath)
            } else {
                try FileSystem.remove(UploadJournal.path(in: store, job: entry.job))
            }
            removed.append(entry)
        }
        if !removed.isEmpty { try FileSystem.syncDirectory(dir) }
        return removed
    }
}
