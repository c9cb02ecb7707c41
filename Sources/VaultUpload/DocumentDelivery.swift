#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Delivering documents to one destination, as the command-line tool's upload does: the whole policy in one
/// place, so that an app delivers with the same behaviour as the command.
///
/// ``prepare()`` reads the vault's upload journals once and, in this order:
/// 1. records in the ledger what a journal alone says was confirmed (a kill between the
///    journal and the history);
/// 2. plans the runs: an interrupted run of the same command whose documents are all chosen is
///    finished first, as it was planned (no batch sent twice, tus and S3 offsets kept); then one
///    run of the chosen documents the destination has not confirmed (``Mode``), leaving out
///    with ``removeDelivered`` those this destination — and every destination the vault marks
///    required — has confirmed already;
/// 3. once the plan stands, removes those (a plan that fails removes nothing).
///
/// ``send(_:onEvent:)`` then sends the runs one after the other and merges what they did.
/// ``preview()`` plans the same runs without recording or removing anything.
///
/// Nothing is sent that the history cannot record, nothing removed-then-back (resurrected) is
/// sent, and documents go over plain `http://` only as ``UploadOptions/allowsCleartext`` says.
public struct DocumentDelivery: Sendable {
    /// Which runs a delivery makes.
    public enum Mode: Sendable, Equatable {
        /// Finish the interrupted runs of the same command, then send what the destination has
        /// not confirmed (the default).
        case undelivered
        /// Send every chosen document, also those confirmed; an interrupted run of the same
        /// documents and settings is continued.
        case everything
        /// A new run of every chosen document, never continuing an interrupted one.
        case newRun
        /// Only finish an interrupted run of the same command; fail when there is none.
        case resumeOnly
    }

    /// One run to make: its documents, and whether it continues an interrupted one.
    public struct Run: Sendable {
        /// The documents, in the order they are sent.
        public var documents: [DocumentRecord]
        /// True when it finishes an interrupted run.
        public var resuming: Bool
        /// The interrupted run's job, when it continues one.
        var job: String?
    }

    /// What a delivery will do (or, from ``preview()``, would do).
    public struct Plan: Sendable {
        /// The runs, in the order they are made (interrupted runs first).
        public var runs: [Run]
        /// Chosen documents this destination and every required one confirmed before: removed by
        /// ``prepare()`` (``preview()`` removes nothing). Empty without ``removeDelivered``.
        public var deliveredBefore: [DocumentRecord]
        /// The other destinations that must confirm a document before it is removed (read once,
        /// with the plan).
        var alsoRequired: [String] = []

        /// Every document the runs send, in order.
        public var documents: [DocumentRecord] { runs.flatMap(\.documents) }
    }

    /// The vault the documents are in.
    public let vault: Vault
    /// The chosen documents, in the order they go (stable order: oldest first).
    public var documents: [DocumentRecord]
    /// Where and how: the target, protocol, limits and retries.
    public var options: UploadOptions
    /// Which runs to make.
    public var mode: Mode
    /// Remove each document once this destination (and every required one) confirmed it, and
    /// the history recorded the confirmation.
    public var removeDelivered: Bool

    /// A delivery of `documents` from `vault` with `options`.
    public init(
        vault: Vault, documents: [DocumentRecord], options: UploadOptions, mode: Mode = .undelivered,
        removeDelivered: Bool = false
    ) {
        self.vault = vault
        self.documents = documents
        self.options = options
        self.mode = mode
        self.removeDelivered = removeDelivered
    }

    /// Records what journals alone confirmed, removes what was delivered before (with
    /// ``removeDelivered``), and plans the runs.
    /// - Throws: `VaultError.Code.notFound` in ``Mode/resumeOnly`` when there is no
    ///   interrupted run to finish (with a ``MismatchedRun`` as its cause when one was started with
    ///   other settings); `VaultError.Code.vaultDamaged` for a resurrected document;
    ///   the cleartext rule's and the history's errors. Nothing is sent.
    public func prepare() throws -> Plan {
        try plan(changing: true)
    }

    /// The plan ``prepare()`` would make, recording and removing nothing.
    public func preview() throws -> Plan {
        try plan(changing: false)
    }

    /// Sends the runs of `plan` one after the other; `onEvent` hears every run's events.
    /// - Returns: what the runs did, merged (nil when the plan has no run: everything chosen was
    ///   delivered before).
    public func send(
        _ plan: Plan, onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) async throws -> UploadSummary? {
        let required = plan.alsoRequired
        var total: UploadSummary?
        for run in plan.runs {
            // A fresh run of what is undelivered: a finished run of the same documents (one
            // refused as too large, say) is not "continued" into sending nothing.
            let controls = UploadRunControls(
                newRun: mode == .newRun, requireJournal: run.resuming,
                renewFinished: !run.resuming && mode != .everything,
                removeDelivered: removeDelivered, alsoRequired: required)
            let uploader = try Uploader(
                vault: vault, records: run.documents, options: options, controls: controls, job: run.job,
                onEvent: onEvent)
            uploader.journalsRecorded = true
            let summary = try await uploader.run()
            total = total.map { $0.adding(summary) } ?? summary
        }
        // Journals of uploads finished a week ago or more go (best effort: a journal that
        // cannot be removed now is removed by a later upload, or by ``UploadJournals/prune(in:abandonedAfter:now:)``).
        _ = try? UploadJournals.pruneFinished(in: vault)
        return total
    }

    // MARK: Planning

    private func plan(changing: Bool) throws -> Plan {
        try Uploader.refuseCleartext(options)
        try vault.refuseUnrecordedSend()
        // Every journal, read once for the whole plan.
        let journals = try UploadJournals.read(in: vault)
        if changing { try UploadJournals.recordConfirmedBatches(in: vault, journals: journals) }
        var deliveredBefore: [DocumentRecord] = []
        let required = removeDelivered ? try requiredElsewhere() : []
        if removeDelivered {
            // A document goes once this destination and every required one confirmed it; those
            // that qualify already (a kill after the confirmation, before the removal) go now.
            let ledger = try vault.ledger()
            let everywhere = [here] + required
            deliveredBefore = documents.filter { d in everywhere.allSatisfy { ledger[$0]?[d.id] != nil } }
        }
        let gone = Set(deliveredBefore.map(\.id))
        let chosen = gone.isEmpty ? documents : documents.filter { !gone.contains($0.id) }
        // An empty choice (an empty vault, or one the removal empties) has nothing to send.
        var runs: [Run] = []
        if !chosen.isEmpty {
            try vault.refuseResurrected(chosen)
            runs = try self.runs(of: chosen, journals: journals)
        }
        // Removed once the plan stands: a plan that fails removes nothing.
        if changing && !deliveredBefore.isEmpty { try vault.removeDocuments(deliveredBefore.map(\.id)) }
        return Plan(runs: runs, deliveredBefore: deliveredBefore, alsoRequired: required)
    }

    /// The runs of `chosen` that ``mode`` makes.
    private func runs(of chosen: [DocumentRecord], journals: [UploadJournals.Read]) throws -> [Run] {
        if mode == .everything || mode == .newRun { return [Run(documents: chosen, resuming: false)] }
        var runs: [Run] = []
        var resumed = Set<DocumentID>()
        for run in try UploadJournals.interruptedRuns(in: vault, options: options, among: chosen, journals: journals) {
            runs.append(Run(documents: run.records, resuming: true, job: run.job))
            resumed.formUnion(run.records.map(\.id))
        }
        if mode == .resumeOnly {
            guard runs.isEmpty else { return runs }
            // One may exist, started with other settings: the error says which differ.
            if let other = try UploadJournals.mismatchedRuns(in: vault, options: options, journals: journals).first {
                let differ = other.differences.map { "\($0.setting) \($0.then) (now: \($0.now))" }
                throw VaultError(
                    .notFound,
                    "the interrupted upload to \(options.target.redacted) (run \(other.runID.prefix(8))) "
                        + "was started with "
                        + (differ.isEmpty ? "other settings or documents" : differ.joined(separator: ", ")),
                    cause: other)
            }
            throw VaultError(
                .notFound, "there is no interrupted upload of these documents to \(options.target.redacted)")
        }
        let fresh = try vault.undelivered(chosen.filter { !resumed.contains($0.id) }, to: options.target.address)
        if !fresh.isEmpty { runs.append(Run(documents: fresh, resuming: false)) }
        return runs
    }

    /// The ledger's identity of this destination.
    private var here: String { options.destinationIdentity?.value ?? options.target.address }

    /// The destinations (identities) the vault marks required, other than this one: each must
    /// have confirmed a document before a removal by delivery frees it. A replica names none.
    private func requiredElsewhere() throws -> [String] {
        guard vault.store.source == nil else { return [] }
        let here = here
        return try DestinationList.load(vault).required.map(\.identity).filter { $0 != here }
    }
}

extension MismatchedRun: Error, CauseStatedInMessage {}

extension UploadSummary {
    /// This summary and `later`'s, as one: counts added, the later run's id.
    public func adding(_ later: UploadSummary) -> UploadSummary {
        var t = self
        t.runID = later.runID
        t.batches += later.batches
        t.alreadyConfirmed += later.alreadyConfirmed
        t.documents += later.documents
        t.documentIDs += later.documentIDs
        t.payloadBytes += later.payloadBytes
        t.retries += later.retries
        t.skipped += later.skipped
        t.resumedBytes += later.resumedBytes
        t.sentDocuments += later.sentDocuments
        t.sentBatches += later.sentBatches
        t.sentBytes += later.sentBytes
        t.tooLarge += later.tooLarge
        t.refused += later.refused
        t.unsendable += later.unsendable
        t.sealedTo = max(t.sealedTo, later.sealedTo)
        t.removed += later.removed
        return t
    }
}
