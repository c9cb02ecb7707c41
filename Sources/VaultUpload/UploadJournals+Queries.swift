#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What the upload journals of a vault say, read once and asked several questions: the runs
/// still worth finishing, the ones this command continues or does not (other settings), and
/// the batches they confirmed that the history has not recorded yet.
extension UploadJournals {
    /// What a journal keeps of the command that started its run (URL, method, wire format,
    /// limits): a run is continued only by a command of the same spec.
    static func spec(vault: Vault, options: UploadOptions) throws -> String {
        try UploadJournal.spec(
            vault: vault, target: jobTarget(options), method: options.target.method.rawValue,
            wire: options.wireDescription, limits: options.limits)
    }

    /// What names the target in a job: its URL, and for `s3://` its identity (the endpoint and
    /// region too: a run through one endpoint is not continued through another).
    static func jobTarget(_ options: UploadOptions) -> String {
        guard options.target.address.lowercased().hasPrefix("s3://") else { return options.target.address }
        return options.destinationIdentity?.value ?? options.target.address
    }

    /// An interrupted run that is still worth finishing: one whose unconfirmed batches hold no
    /// document its destination has confirmed since (through another run) — finishing one that
    /// does would deliver that document twice. The others are left to `prune`.
    static func unfinished(_ journal: UploadJournal, in vault: Vault) throws -> (unsent: [DocumentID], batches: Int)? {
        let open = journal.batches.filter { $0.status != .complete }
        let unsent = open.flatMap(\.documents)
        guard !open.isEmpty,
            let identity = journal.deliveryIdentity,
            try unsent.allSatisfy({ try vault.delivery(of: $0, at: identity) == nil })
        else { return nil }
        return (unsent, open.count)
    }

    /// The interrupted runs still worth finishing, by destination identity: how many, and
    /// their unconfirmed batches.
    package static func unfinishedRuns(
        in vault: Vault, journals: [UploadJournals.Read]
    ) throws -> [String: UnfinishedRuns] {
        var out: [String: UnfinishedRuns] = [:]
        for read in journals where read.entry.state == .interrupted {
            guard let journal = read.journal,
                let identity = journal.deliveryIdentity?.value,
                let left = try unfinished(journal, in: vault)
            else { continue }
            out[identity, default: UnfinishedRuns(runs: 0, batches: 0)].add(batches: left.batches)
        }
        return out
    }

    /// The interrupted runs `options` would finish, among `selected`: runs of the same command
    /// (URL, method, wire format, limits) whose unconfirmed batches hold only selected
    /// documents, none confirmed since by another run, with the selected documents of each
    /// (those of confirmed batches may have been removed since: they are not sent again).
    /// Journals that do not open are left alone.
    package static func interruptedRuns(
        in vault: Vault, options: UploadOptions, among selected: [DocumentRecord],
        journals: [UploadJournals.Read]
    ) throws -> [InterruptedRun] {
        let spec = try spec(vault: vault, options: options)
        let chosen = Dictionary(selected.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var runs: [InterruptedRun] = []
        var taken = Set<DocumentID>()
        for read in journals where read.entry.state == .interrupted {
            guard let journal = read.journal,
                let left = try unfinished(journal, in: vault)
            else { continue }
            let ids = Set(
                journal.batches.flatMap(\.documents) + journal.skipped.map(\.id))
            guard left.unsent.allSatisfy({ chosen[$0] != nil }) else { continue }
            guard taken.isDisjoint(with: ids) else { continue }
            let records = selected.filter { ids.contains($0.id) }
            if let s = journal.spec {
                guard s == spec else { continue }
            } else {
                let job = try Uploader.job(vault: vault, records: records, options: options)
                guard job == read.entry.job else { continue }
            }
            runs.append(InterruptedRun(job: read.entry.job, records: records))
            taken.formUnion(ids)
        }
        return runs
    }

    /// Interrupted runs to the destination `options` name that this command does not continue
    /// because they were started with other settings: each run's id and the settings that
    /// differ; no differences for a journal of an earlier version, which kept no settings.
    package static func mismatchedRuns(
        in vault: Vault, options: UploadOptions,
        journals: [UploadJournals.Read]
    ) throws -> [MismatchedRun] {
        let spec = try spec(vault: vault, options: options)
        let here = options.destinationIdentity?.value
        var out: [MismatchedRun] = []
        for read in journals where read.entry.state == .interrupted {
            guard let journal = read.journal,
                journal.deliveryIdentity?.value == here,
                journal.spec != spec,
                try unfinished(journal, in: vault) != nil
            else { continue }
            let now = options.settings
            var differences: [MismatchedRun.Difference] = []
            for (key, then) in (journal.settings ?? [:]).sorted(by: { $0.key < $1.key }) where now[key] != then {
                differences.append(.init(setting: key, then: then, now: now[key] ?? "none"))
            }
            out.append(MismatchedRun(runID: journal.runId, differences: differences))
        }
        return out
    }

    /// How a delivery record names the batch that confirmed it.
    static func deliveryDetail(
        run: String, batch: Int, of count: Int, status: Int?, duplicate: Bool = false, recovered: Bool = false
    ) -> String {
        "run \(run) batch \(batch)/\(count)" + (status.map { ": \($0)" } ?? "")
            + (duplicate ? " (the server had it already)" : "")
            + (recovered ? "; recorded from the upload journal" : "")
    }

    /// Records in the ledger every batch a journal of `vault` says was confirmed and the
    /// history does not have yet (a kill between the journal and the history). Documents
    /// removed since are not recorded again. Returns the batches recorded.
    @discardableResult
    package static func recordConfirmedBatches(in vault: Vault, journals: [UploadJournals.Read]) throws -> Int {
        var recorded = 0
        for read in journals where read.entry.state != .damaged && read.entry.confirmed > 0 {
            guard let journal = read.journal,
                let identity = journal.deliveryIdentity
            else { continue }
            for (i, batch) in journal.batches.enumerated() where batch.status == .complete {
                let ids = batch.documents
                let present = try vault.records(ids, skippingMissing: true)
                let missing = try vault.undelivered(present, at: identity)
                guard !missing.isEmpty else { continue }
                let detail = deliveryDetail(
                    run: journal.runId, batch: i + 1, of: journal.batches.count, status: batch.httpStatus,
                    recovered: true)
                try vault.recordDelivery(missing, at: identity, detail: detail)
                recorded += 1
            }
        }
        return recorded
    }
}

extension Uploader {
    /// The interrupted runs still worth finishing, by destination identity: how many, and
    /// their unconfirmed batches.
    public static func unfinishedRuns(in vault: Vault) throws -> [String: UnfinishedRuns] {
        try UploadJournals.unfinishedRuns(in: vault, journals: UploadJournals.read(in: vault))
    }

    /// The interrupted runs `options` would finish, among `selected`: runs of the same command
    /// (URL, method, wire format, limits) whose unconfirmed batches hold only selected
    /// documents, none confirmed since by another run, with the selected documents of each
    /// (those of confirmed batches may have been removed since: they are not sent again).
    /// Journals that do not open are left alone.
    public static func interruptedRuns(
        in vault: Vault, options: UploadOptions, among selected: [DocumentRecord]
    ) throws -> [InterruptedRun] {
        try UploadJournals.interruptedRuns(
            in: vault, options: options, among: selected, journals: UploadJournals.read(in: vault))
    }

    /// Interrupted runs to the destination `options` name that this command does not continue
    /// because they were started with other settings: each run's id and the settings that
    /// differ; no differences for a journal of an earlier version, which kept no settings.
    public static func mismatchedRuns(in vault: Vault, options: UploadOptions) throws -> [MismatchedRun] {
        try UploadJournals.mismatchedRuns(in: vault, options: options, journals: UploadJournals.read(in: vault))
    }

    /// Records in the ledger every batch a journal of `vault` says was confirmed and the
    /// history does not have yet (a kill between the journal and the history). Documents
    /// removed since are not recorded again. Returns the batches recorded.
    @discardableResult
    public static func recordConfirmedBatches(in vault: Vault) throws -> Int {
        try UploadJournals.recordConfirmedBatches(in: vault, journals: UploadJournals.read(in: vault))
    }
}
