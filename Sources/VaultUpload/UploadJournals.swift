#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The upload journals of a vault (`uploads/<job>.journal`, sealed): listing them, and removing
/// the ones that are done with or cannot be trusted. Opening them needs the vault key.
package enum UploadJournals {
    /// Where a journal stands.
    package enum State: String, Codable, Sendable {
        /// Every batch is confirmed.
        case complete
        /// Some batch was attempted and not every one is confirmed: the same command resumes it.
        case interrupted
        /// Nothing was sent yet.
        case pending
        /// It does not open (edited, swapped, cut, foreign, sealed under a retired key, or an
        /// unsealed journal of an earlier version): never trusted; `prune` removes it.
        case damaged
    }

    /// One journal, summarized.
    package struct Entry: Codable, Sendable {
        /// The job (the journal's file name without `.json`).
        package var job: String
        /// Its run id.
        package var runId: String
        /// Where it goes (scheme, host, port, path).
        package var target: String
        /// Its state.
        package var state: State
        /// Batches in the run, and how many are confirmed.
        package var batches: Int
        package var confirmed: Int
        /// Documents in the run, and the payload bytes.
        package var documents: Int
        package var payloadBytes: UInt64
        /// Created and last updated (ISO 8601).
        package var created: String
        package var updated: String
        /// For a damaged journal: why it is not trusted.
        package var problem: String?
    }

    /// A journal as read: its summary, and the journal itself when it opened.
    package struct Read: Sendable {
        /// The summary (`damaged` when the journal did not open).
        package var entry: Entry
        /// The journal, nil when it did not open.
        package var journal: UploadJournal?
    }

    /// Every journal of `vault`, oldest first; one that does not open is listed as damaged.
    package static func list(in vault: Vault) throws -> [Entry] { try read(in: vault).map(\.entry) }

    /// Every journal of `vault`, each read once, oldest first: what an upload plans from.
    package static func read(in vault: Vault) throws -> [Read] {
        let store = vault.store
        let dir = store.path(.uploads)
        guard FileSystem.kind(of: dir) == .directory else { return [] }
        let names = try FileSystem.list(dir).filter {
            ($0.hasSuffix(".journal") || $0.hasSuffix(".json")) && !$0.hasPrefix(".")
        }
        return names.map { name in
            let job = String(name[..<name.lastIndex(of: ".")!])
            let mtime = UTCTime(
                (try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.modificationDate] as? Date)
                    ?? Date(timeIntervalSince1970: 0)).iso8601
            func damaged(_ why: String) -> Read {
                Read(
                    entry: Entry(
                        job: job, runId: "", target: "", state: .damaged, batches: 0, confirmed: 0, documents: 0,
                        payloadBytes: 0, created: mtime, updated: mtime, problem: why), journal: nil)
            }
            if name.hasSuffix(".json") {
                return damaged(
                    "an unsealed journal (written by an earlier version of vault, or by someone else): not trusted")
            }
            do {
                guard let j = try UploadJournal.load(from: vault, job: job, listing: true) else {
                    return damaged("it disappeared")
                }
                let confirmed = j.batches.filter { $0.status == .complete }.count
                let state: State =
                    confirmed == j.batches.count
                    ? .complete : j.batches.contains { $0.attempts > 0 } ? .interrupted : .pending
                let entry = Entry(
                    job: job, runId: j.runId, target: j.target, state: state, batches: j.batches.count,
                    confirmed: confirmed, documents: j.batches.reduce(0) { $0 + $1.documents.count },
                    payloadBytes: j.batches.reduce(0) { $0 + $1.bytes }, created: j.created, updated: j.updated)
                return Read(entry: entry, journal: j)
            } catch {
                return damaged(VaultError.from(error).message)
            }
        }.sorted { ($0.entry.created, $0.entry.job) < ($1.entry.created, $1.entry.job) }
    }

    /// One journal whole, as pretty-printed JSON (after it authenticated).
    package static func show(job given: String, in vault: Vault) throws -> String {
        let job = try resolve(given, in: vault)
        guard let journal = try UploadJournal.load(from: vault, job: job) else {
            throw VaultError(.notFound, "there is no upload journal of job \(job)")
        }
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try e.encode(journal), as: UTF8.self) + "\n"
    }

    /// The job a unique prefix (4 or more hex digits) names, as for documents.
    static func resolve(_ given: String, in vault: Vault) throws -> String {
        let prefix = given.lowercased()
        guard (4...32).contains(prefix.count),
              prefix.allSatisfy(\.isHexDigit) else {
            throw VaultError(.usage, "'\(given.prefix(64))' is not an upload job (4 to 32 hex digits)")
        }
        if prefix.count == 32 { return prefix }
        let matches = try list(in: vault).map(\.job).filter { $0.hasPrefix(prefix) }
        switch matches.count {
        case 0: throw VaultError(.notFound, "there is no upload journal of job \(prefix)")
        case 1: return matches[0]
        default:
            throw VaultError(
                .ambiguous, "'\(prefix)' matches \(matches.count) upload jobs", hint: "use a longer prefix")
        }
    }

    /// Removes the journals (and their lock files) of complete uploads, of damaged ones, and of
    /// unfinished ones not updated for `abandonedAfter` seconds. A journal whose upload is
    /// running (its lock is held) is kept. Returns the entries removed.
    package static func prune(in vault: Vault, abandonedAfter: TimeInterval, now: Date = Date()) throws -> [Entry] {
        try remove(in: vault, now: now) { entry, age in
            entry.state == .complete || entry.state == .damaged || age >= abandonedAfter
        }
    }

    /// How long the journal of a finished upload is kept (to be shown) before an upload removes
    /// it (docs/UPLOAD.md): a week, so a day of scheduled uploads does not leave its journals
    /// behind for good.
    package static let finishedKept: TimeInterval = 7 * 86_400

    /// Removes the journals of complete uploads last updated ``finishedKept`` ago or more (what
    /// every upload does when it ends); unfinished and damaged ones are left to
    /// ``prune(in:abandonedAfter:now:)``.
    @discardableResult
    package static func pruneFinished(in vault: Vault, now: Date = Date()) throws -> [Entry] {
        try remove(in: vault, now: now) { entry, age in entry.state == .complete && age >= finishedKept }
    }

    /// Removes the journal of `job` (and its change log and lock file) while its upload holds
    /// the lock: a run that stopped having reached nothing of the server leaves nothing to
    /// finish, and is not counted as an interrupted upload.
    package static func discard(job: String, in vault: Vault) throws {
        let store = vault.store
        for path in [
            UploadJournal.path(in: store, job: job), UploadJournal.legacyPath(in: store, job: job),
            UploadJournal.logPath(in: store, job: job), UploadJournal.lockPath(in: store, job: job)
        ] where FileSystem.kind(of: path) == .file {
            try FileSystem.remove(path)
        }
        try FileSystem.syncDirectory(store.path(.uploads))
    }

    /// Removes the journals (and their lock files) `chosen` picks, given each one's age in
    /// seconds, except one whose upload is running (its lock is held).
    private static func remove(
        in vault: Vault, now: Date, _ chosen: (Entry, TimeInterval) -> Bool
    ) throws -> [Entry] {
        let store = vault.store
        let dir = store.path(.uploads)
        var removed: [Entry] = []
        for entry in try list(in: vault) {
            let age = UTCTime.parseISO8601(entry.updated).map { now.timeIntervalSince($0) } ?? .infinity
            guard chosen(entry, age) else { continue }
            let file =
                FileSystem.kind(of: UploadJournal.path(in: store, job: entry.job)) == .file
                ? UploadJournal.path(in: store, job: entry.job) : UploadJournal.legacyPath(in: store, job: entry.job)
            let lockPath = UploadJournal.lockPath(in: store, job: entry.job)
            let log = UploadJournal.logPath(in: store, job: entry.job)
            if FileSystem.kind(of: lockPath) == .file {
                let lock = try OpenFile.openOrCreate(lockPath)
                guard try lock.lockExclusive(wait: false) else { continue }  // an upload of this job is running
                try FileSystem.remove(file)
                try FileSystem.remove(log)
                try FileSystem.remove(lockPath)
            } else {
                try FileSystem.remove(file)
                try FileSystem.remove(log)
            }
            removed.append(entry)
        }
        if !removed.isEmpty { try FileSystem.syncDirectory(dir) }
        return removed
    }
}
