#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

/// What `vault upload` says: the summary line or JSON object, the dry run's list, the removals,
/// and the exit status for documents left out. The command parses and calls the library; this
/// renders what it did.
struct UploadReport {
    /// Where the batches went (named by its redacted address).
    var target: UploadTarget
    /// `--json`: one object on standard output instead of the lines.
    var json: Bool
    /// The summary line on standard error (not with `--quiet`).
    var printsSummary: Bool
    /// No progress was shown: the documents left out are warned of at the end.
    var warnsAtEnd: Bool
    /// `--remove-delivered`.
    var removeDelivered: Bool

    /// `upload --json`.
    struct Result: Encodable {
        var runId: String
        var target: String
        var batches: Int
        var alreadyConfirmed: Int
        var documents: Int
        var payloadBytes: UInt64
        var retries: Int
        var skipped: Int
        var resumedBytes: UInt64
        var seconds: Double
        /// What this command sent (a resumed run's earlier batches are not counted).
        var sentDocuments = 0
        var sentBatches = 0
        var sentBytes: UInt64 = 0
        /// Documents the server refused as too large (not delivered).
        var tooLarge: [String] = []
        /// Documents the server refused by their place in a batch (not delivered).
        var refused: [String] = []
        /// Documents left out before sending: no back office takes their names (not delivered).
        var unsendable: [String] = []
        /// Documents removed (`--remove-delivered`).
        var removed: [String] = []
    }

    /// `upload --dry-run --json`.
    struct DryRun: Encodable {
        struct Document: Encodable { var id, name: String; var size: UInt64 }
        struct Unsendable: Encodable { var id, name: String; var size: UInt64; var why: String }
        var dryRun = true
        var target: String
        var send: [Document]
        var resumes: Int
        var unsendable: [Unsendable]
        var remove: [Document]
    }

    /// Everything chosen was delivered there before (or nothing was chosen).
    func nothingSent(_ vault: VaultCore.Vault, freed: [DocumentRecord], excludesAll: () throws -> Bool) throws {
        if json {
            Terminal.out(
                JSONOutput.line(
                    Result(
                        runId: "", target: target.redacted, batches: 0, alreadyConfirmed: 0, documents: 0,
                        payloadBytes: 0, retries: 0, skipped: 0, resumedBytes: 0, seconds: 0,
                        removed: freed.map(\.id.hex))))
        }
        guard printsSummary && !json else { return }
        let excludedAll =
            try excludesAll() && freed.isEmpty
        let to = target.redacted
        Terminal.err(
            try vault.documentCount() == 0 && freed.isEmpty
                ? "vault: nothing to send to \(to): the vault is empty"
                : excludedAll
                    ? "vault: nothing to send to \(to): --exclude leaves out every selected document"
                    : "vault: nothing new to send to \(to): it has confirmed every selected document"
                        + (removeDelivered ? "" : " (--new-run sends them again)"))
    }

    /// The summary line (or JSON object), the removals, and the exit for documents left out.
    func report(
        _ summary: UploadSummary, vault: VaultCore.Vault, freed: [DocumentRecord],
        seconds: Double,
        leftOut: [String]
    ) throws {
        let tooLarge = try vault.records(summary.tooLarge, skippingMissing: true)
        let refused = try vault.records(summary.refused, skippingMissing: true)
        let unsendable = try vault.records(summary.unsendable, skippingMissing: true)
        let removedNow = summary.removed
        if json {
            Terminal.out(
                JSONOutput.line(
                    Result(
                        runId: summary.runID, target: target.redacted, batches: summary.batches,
                        alreadyConfirmed: summary.alreadyConfirmed, documents: summary.documents,
                        payloadBytes: summary.payloadBytes, retries: summary.retries, skipped: summary.skipped,
                        resumedBytes: summary.resumedBytes,
                        seconds: (seconds * 1000).rounded() / 1000, sentDocuments: summary.sentDocuments,
                        sentBatches: summary.sentBatches, sentBytes: summary.sentBytes,
                        tooLarge: tooLarge.map(\.id.hex), refused: refused.map(\.id.hex),
                        unsendable: unsendable.map(\.id.hex), removed: (freed + removedNow).map(\.id.hex))))
        }
        // Warnings first: in a log, the summary is the last line a reader looks for.
        if warnsAtEnd { for line in leftOut { Terminal.warn(line) } }
        if printsSummary && !json {
            Terminal.err(summaryLine(summary, freed: freed, seconds: seconds))
        }
        if removeDelivered && !removedNow.isEmpty && !json {
            Removal.report(removedNow, why: "delivered to \(target.redacted) now")
        }
        // Counted by the run's ids: a document left out and removed since is not "damaged".
        let damaged = summary.skipped - summary.tooLarge.count - summary.refused.count - summary.unsendable.count
        if let stop = leftOutError(
            summary, unsendable: unsendable, refused: refused, tooLarge: tooLarge, damaged: damaged,
            warned: !leftOut.isEmpty)
        {
            throw stop
        }
    }

    /// The exit status for documents the run left out (partial, naming them and why); nil
    /// when none was.
    func leftOutError(
        _ summary: UploadSummary, unsendable: [DocumentRecord], refused: [DocumentRecord],
        tooLarge: [DocumentRecord], damaged: Int, warned: Bool
    ) -> VaultError? {
        if !unsendable.isEmpty {
            let names = unsendable.prefix(5).map {
                "\($0.id.hex.prefix(12)) \(Terminal.printable($0.metadata.name))"
            }.joined(separator: ", ")
            let were = unsendable.count == 1 ? "was" : "were"
            let others = summary.sentDocuments > 0 ? "; the other documents were delivered" : ""
            return VaultError(
                .partial,
                "\(Plural.count(unsendable.count, "document")) \(were) not sent, as no back office takes "
                    + "\(unsendable.count == 1 ? "its name" : "their names"): \(names)",
                hint:
                    """
                        the warnings above say why\(others); get the file out and add it again with --name NAME \
                        (a relative path without control characters), or leave it out with --exclude ID
                        """)
        }
        if !refused.isEmpty {
            let names = refused.prefix(5).map { "\($0.id.hex.prefix(12)) \(Terminal.printable($0.metadata.name))" }
                .joined(separator: ", ")
            let were = refused.count == 1 ? "was" : "were"
            let more = [
                tooLarge.isEmpty ? nil : "\(tooLarge.count) too large for it",
                damaged > 0 ? "\(damaged) damaged left out" : nil
            ].compactMap { $0 }
            // The reasons were warned of by this command unless an earlier attempt at the
            // run (interrupted since) left the documents out.
            let why =
                !warned
                ? "an earlier attempt at this run left \(refused.count == 1 ? "it" : "them") out"
                : "the warnings above give the server's reasons"
            let others = summary.sentDocuments > 0 ? "; the other documents were delivered" : ""
            return VaultError(
                .partial,
                "\(Plural.count(refused.count, "document")) \(were) refused by the server and not delivered: "
                    + names + (more.isEmpty ? "" : "; " + more.joined(separator: ", ")),
                hint:
                    """
                        \(why)\(others); a later upload tries again, or leave \
                        \(refused.count == 1 ? "it" : "them") out with --exclude ID
                        """)
        }
        if !tooLarge.isEmpty {
            let names = tooLarge.prefix(5).map { "\($0.id.hex.prefix(12)) \(Terminal.printable($0.metadata.name))" }
                .joined(separator: ", ")
            let were = tooLarge.count == 1 ? "was" : "were"
            return VaultError(
                .partial,
                "\(Plural.count(tooLarge.count, "document")) \(were) too large for the server and not "
                    + "delivered: \(names)"
                    + (damaged > 0 ? "; \(damaged) damaged \(damaged == 1 ? "was" : "were") left out" : ""),
                hint:
                    """
                        the warnings above give the server's limit; the other documents were delivered; raise the \
                        limit, 
                        """
                    + "or leave \(tooLarge.count == 1 ? "it" : "them") out with --exclude ID")
        }
        if damaged > 0 {
            return VaultError(
                .partial, "\(Plural.count(damaged, "damaged document")) \(damaged == 1 ? "was" : "were") left out",
                hint: "run 'vault verify' for details")
        }
        return nil
    }

    /// What this command did, in one line: a resumed run's earlier batches were sent by another.
    func summaryLine(
        _ summary: UploadSummary, freed: [DocumentRecord], seconds: Double
    ) -> String {
        let finishedOnly =
            summary.sentBatches == 0 && summary.alreadyConfirmed == summary.batches && summary.batches > 0
        var line =
            finishedOnly
            ? """
                vault: nothing to send: all \(Plural.count(summary.batches, "batch")) of run \
                \(summary.runID.prefix(8)) 
                """
                + "were already confirmed"
            : "vault: uploaded \(Plural.count(summary.sentDocuments, "document")) in "
                + "\(Plural.count(summary.sentBatches, "batch")) (\(Terminal.size(summary.sentBytes))) to "
                + "\(target.redacted) in \(Seconds.tenths(seconds)) s, \(Plural.count(summary.retries, "retry"))"
                + (summary.sealedTo > 0 ? ", sealed to \(Plural.count(summary.sealedTo, "recipient"))" : "")
        if summary.sentBatches > 0 && summary.alreadyConfirmed > 0 {
            let were = summary.alreadyConfirmed == 1 ? "was" : "were"
            line +=
                "; finished run \(summary.runID.prefix(8)), whose other "
                + "\(Plural.count(summary.alreadyConfirmed, "batch")) \(were) confirmed before"
        }
        if summary.resumedBytes > 0 {
            let were = summary.resumedBytes == 1 ? "was" : "were"
            line += "; \(Terminal.size(summary.resumedBytes)) the server already had \(were) not sent again"
        }
        if removeDelivered {
            line += "; removed \(Plural.count(summary.removed.count, "document")) delivered now"
            if !freed.isEmpty { line += " and \(freed.count) delivered before" }
        }
        return line
    }

    /// `--dry-run`: what the runs would send and what would be removed, on standard output
    /// (or as one JSON object); nothing is sent, removed or recorded.
    func preview(_ plan: DocumentDelivery.Plan, shape: PayloadShape) {
        // What a new run would leave out for its name (an interrupted run's documents are sent
        // as its journal says, and a receiver refuses such a name by its place).
        let unsendable = plan.runs.filter { !$0.resuming }.flatMap {
            Uploader.undeliverable($0.documents, shape: shape)
        }
        let leaving = Set(unsendable.map(\.record.id))
        let documents = plan.documents.filter { !leaving.contains($0.id) }
        let removing = plan.deliveredBefore
        let resumes = plan.runs.filter(\.resuming).count
        func doc(_ r: DocumentRecord) -> DryRun.Document {
            .init(id: r.id.hex, name: r.metadata.name, size: r.metadata.size)
        }
        if json {
            Terminal.out(
                JSONOutput.line(
                    DryRun(
                        target: target.redacted, send: documents.map(doc), resumes: resumes,
                        unsendable: unsendable.map { r, why in
                            DryRun.Unsendable(
                                id: r.id.hex, name: r.metadata.name, size: r.metadata.size, why: "its name \(why)")
                        },
                        remove: removing.map(doc))))
            return
        }
        var out = ""
        for (r, why) in unsendable {
            out +=
                """
                    would leave out  \(r.id.hex.prefix(12))  \(Terminal.size(r.metadata.size))  \
                    \(Terminal.printable(r.metadata.name))  (its name \(why), which no back office takes)\n
                    """
        }
        for r in documents {
            out +=
                """
                    would send  \(r.id.hex.prefix(12))  \(Terminal.size(r.metadata.size))  \
                    \(Terminal.printable(r.metadata.name))\n
                    """
        }
        for r in removing {
            out +=
                "would remove  \(r.id.hex.prefix(12))  \(Terminal.size(r.metadata.size))  "
                + "\(Terminal.printable(r.metadata.name))  (delivered)\n"
        }
        Terminal.out(out)
        if printsSummary && !json {
            let bytes = documents.reduce(UInt64(0)) { $0 + $1.metadata.size }
            var line =
                "vault: dry run: would send \(Plural.count(documents.count, "document")) (\(Terminal.size(bytes))) "
                + "to \(target.redacted)"
            if resumes > 0 { line += ", finishing \(Plural.count(resumes, "interrupted run"))" }
            if !unsendable.isEmpty {
                line += ", leaving out \(Plural.count(unsendable.count, "document")) no back office takes by name"
            }
            if removeDelivered {
                line +=
                    """
                        ; would remove \(Plural.count(removing.count, "document")) delivered before, and each one \
                        sent once confirmed
                        """
            }
            Terminal.err(line + "; nothing was sent or removed")
        }
    }
}
