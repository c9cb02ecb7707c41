#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// A batch's confirmation: the receipt checked against what was sent, then the journal, the
/// delivery ledger and (with ``UploadRunControls/removeDelivered``) the removal.
extension Uploader {
    /// A confirmed batch: the journal says so first, then the history (the delivery ledger),
    /// and only then, when asked, its documents are removed. A kill between two steps leaves
    /// nothing unconfirmed removed, and the journal's word is recorded by the next upload
    /// (``recordConfirmedBatches(in:)``).
    /// The receipt `body` holds for batch `i`, checked, when the destination signs receipts:
    /// signed by its key, for this batch's key, naming exactly its documents (SHA-256 and size,
    /// in order) or, from a receiver that kept a sealed batch sealed, its sealed files (returned
    /// as ``HistoryRecord/sealed`` gives them). Nil when it does not sign receipts.
    /// - Throws: ``VaultError/Code/uploadRejected`` when the receipt is missing or not right.
    func checkReceipt(
        _ i: Int, _ answered: [UInt8], sealing: PayloadSealing?
    ) throws -> (receipt: String, sealed: [String]?)? {
        guard let key = receiptKey else { return nil }
        let n = journal.batches.count
        func refused(_ why: String) -> VaultError {
            VaultError(
                .uploadRejected, "batch \(i + 1)/\(n): \(why); it is not counted as delivered",
                hint: "check that the destination's receipt key is the receiver's")
        }
        let answer: Receipt.Answer
        var body = answered
        do {
            // A sealed batch's answer comes sealed under its documents' file keys: opened here,
            // and the plain answer is what the history keeps (what an audit checks).
            let batch = journal.batches[i]
            if let sealing,
                let opened = try SealedAnswer.open(
                    body, key: sealing.receiptKey(documents: batch.documents, batch: batch.key))
            {
                body = opened
            }
            answer = try Receipt.answer(body)
        } catch {
            throw refused("the receiver answered without a valid receipt (\(VaultError.from(error).message))")
        }
        guard answer.isSigned(by: key) else { throw refused("the receipt is not signed by the destination's key") }
        guard answer.receipt.batch == journal.batches[i].key else { throw refused("the receipt is for another batch") }
        let docs = batchRecords(journal.batches[i])
        // The payload names each document's id unless it is the strings shape; the receipt then
        // must name the same ids.
        let named = options.wire.name == .form || options.shape == .objects
        let signed = answer.receipt.documents
        let pairs = signed.map { "\(Hex.encode($0.sha256)):\($0.size)" }
        let byContents =
            signed.count == docs.count
            && zip(signed, docs).allSatisfy({ $0.sha256 == $1.metadata.sha256 && $0.size == $1.metadata.size })
        // A receiver that kept a sealed batch sealed signs one attempt's sealed files.
        let bySealedFiles = !byContents && journal.batches[i].sealedPairs.contains(pairs)
        guard byContents || bySealedFiles, !named || zip(signed, docs).allSatisfy({ $0.id == $1.id }) else {
            throw refused("the receipt names other documents than the batch's")
        }
        return (String(decoding: body, as: UTF8.self), bySealedFiles ? pairs : nil)
    }

    /// Keeps the sealed files an attempt at batch `i` sent whole (``PayloadSealing/notesPairs``),
    /// before its answer is acted on: a receipt for them, now or answered again later, is
    /// checked against them.
    func noteSealedPairs(_ i: Int, _ sealing: PayloadSealing?) throws {
        guard let sealing, sealing.notesPairs else { return }
        let pairs = journal.batches[i].documents.map(sealing.sealedPair)
        guard pairs.allSatisfy({ $0 != nil }) else { return }
        journal.batches[i].sealedPairs.append(pairs.map { "\(Hex.encode($0!.sha256)):\($0!.size)" })
        try journal.save(to: vault)
    }

    func confirm(_ i: Int, status: Int, duplicate: Bool, receipt: (receipt: String, sealed: [String]?)? = nil) throws {
        journal.batches[i].status = .complete
        journal.batches[i].confirmedAt = UTCTime(Date()).iso8601
        journal.batches[i].httpStatus = status
        try journal.save(to: vault)
        PausePoint.reached("upload.journal-confirmed")
        let documents = batchRecords(journal.batches[i])
        guard let identity = journal.deliveryIdentity ?? options.destinationIdentity else {
            throw VaultError(.usage, "'\(options.target.redacted)' is not a destination URL")
        }
        try vault.recordDelivery(
            documents, at: identity,
            detail: UploadJournals.deliveryDetail(
                run: journal.runId, batch: i + 1, of: journal.batches.count, status: status, duplicate: duplicate),
            receipt: receipt?.receipt, sealed: receipt?.sealed)
        PausePoint.reached("upload.delivery-recorded")
        sent.documents += documents.count
        sent.batches += 1
        sent.bytes += journal.batches[i].bytes
        if controls.removeDelivered {
            let ready = try documents.filter { d in
                try controls.alsoRequired.allSatisfy { try vault.delivery(of: d.id, to: $0) != nil }
            }
            // Only what the history itself confirms at every required destination goes.
            let unproven = Set(
                try vault.unprovenDeliveries(ready.map(\.id), at: controls.alsoRequired + [identity.value]).ids)
            let proven = ready.filter { !unproven.contains($0.id) }
            if !proven.isEmpty {
                try vault.removeDocuments(proven.map(\.id))
                removedIDs += proven
                PausePoint.reached("upload.removed")
            }
        }
        onEvent(.confirmed(batch: i + 1, of: journal.batches.count, status: status, duplicate: duplicate))
    }
}
