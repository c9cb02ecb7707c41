#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The journal a run continues or begins, and the lock that keeps one upload of a job at a time.
extension Uploader {
    /// The job's lock file (its folder made when missing).
    func lockPath() throws -> String {
        let dir = vault.store.path(.uploads)
        if FileSystem.kind(of: dir) == .missing { try FileSystem.makeDirectory(dir) }
        return UploadJournal.lockPath(in: vault.store, job: job)
    }

    func openJournal() throws -> UploadJournal {
        if !controls.newRun, let existing = try UploadJournal.load(from: vault, job: job),
            !(controls.renewFinished && existing.batches.allSatisfy({ $0.status == .complete }))
        {
            // Every document still to send must be in the selection (those of confirmed batches
            // may have been removed since).
            for b in existing.batches where b.status != .complete {
                for id in b.documents where records[id] == nil {
                    throw VaultError(
                        .vaultDamaged, "the upload journal names document \(id), which is not in this selection")
                }
            }
            return existing
        }
        if controls.requireJournal {
            throw VaultError(
                .notFound, "there is no interrupted upload of these documents to \(options.target.redacted)")
        }
        // What a back office would refuse by its name is known now: it leaves before anything is
        // sent, instead of costing its batch a refusal and a resend.
        leftOutAtStart = Self.undeliverable(order, shape: options.shape).map { d, why in
            (d, VaultError(.nameNotDeliverable, "its name \(why), which no back office takes; it was not sent"))
        }
        let leaving = Set(leftOutAtStart.map(\.record.id))
        let sending = order.filter { !leaving.contains($0.id) }
        // A run whose every document was left out has no batch (the planner gives one empty batch).
        let planned =
            sending.isEmpty
            ? [] : try BatchPlanner.plan(sending, limits: options.limits, format: try self.format(batch: 1, of: 1))
        let runID = UUID().uuidString.lowercased()
        let now = UTCTime(Date()).iso8601
        journal = UploadJournal(
            job: job, runId: runID, target: options.target.redacted, created: now, updated: now, batches: [])
        journal.identity = options.destinationIdentity?.value
        journal.spec = try UploadJournals.spec(vault: vault, options: options)
        journal.settings = options.settings
        journal.batches = try planned.map { b in
            UploadJournal.Batch(
                documents: b.records.map(\.id), bytes: b.length, status: .pending, attempts: 0,
                key: try UploadJournal.idempotencyKey(vault: vault, runID: runID, index: b.index, records: b.records))
        }
        journal.skipped = leftOutAtStart.map { .init(id: $0.record.id, code: $0.error.code.rawValue) }
        try rekey(from: 0)  // exact lengths (a form's manifest names its batch number)
        try journal.save(to: vault)
        return journal
    }
}
