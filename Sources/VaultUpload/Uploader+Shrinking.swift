#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// A batch that changes on the way: split in two (413), a damaged document skipped, a document
/// the server refused left out; the others still go.
extension Uploader {
    /// 413: the batch becomes two halves (never sent: new keys), or, for one document, that
    /// document leaves the run — named, with the server's limit, and not delivered, so a later
    /// run tries it again — and the other batches still go, as rclone and restic go on past a
    /// file that fails. Returns true when batch `i` left the run.
    func split(_ i: Int, reason: String, serverSays: String) async throws -> Bool {
        let docs = batchRecords(journal.batches[i])
        guard docs.count > 1 else {
            let d = docs[0]
            let error = VaultError(
                .uploadRejected,
                """
                it makes a \(journal.batches[i].bytes)-byte payload, larger than the server accepts \
                (\(reason))\(serverSays)
                """
            )
            return try await leave(d, outOf: i, for: error)
        }
        await sender.abandon(journal.batches[i].wire)
        let half = docs.count / 2
        journal.batches.replaceSubrange(
            i...i,
            with: [Array(docs[..<half]), Array(docs[half...])].map { part in
                UploadJournal.Batch(documents: part.map(\.id), bytes: 0, status: .pending, attempts: 0, key: "")
            })
        try rekey(from: i)
        try journal.save(to: vault)
        onEvent(.split(batch: i + 1, into: [i + 1, i + 2]))
        return false
    }

    /// A document failed authentication: it is cut out of the batch (whose payload changes, so
    /// what the server holds of it is given up), or the upload stops.
    func skip(_ i: Int, _ f: DocumentFailure) async throws {
        guard options.skipBad else { throw f.error }
        await sender.abandon(journal.batches[i].wire)
        journal.batches[i].wire = .none
        journal.batches[i].documents.removeAll { $0 == f.record.id }
        journal.skipped.append(.init(id: f.record.id, code: f.error.code.rawValue))
        runProgress.skip(remaining: f.record.metadata.size)
        try rekey(from: i)
        try journal.save(to: vault)
        onEvent(.skipped(id: f.record.id, name: f.record.metadata.name, error: f.error))
    }

    /// The server refused batch `i` for the document at `place` (from 1): that document leaves
    /// the run — named, with the server's reason, and not delivered, so a later run tries it
    /// again — and the batch's other documents are sent again, each alone. A
    /// place that is not in the batch refuses the whole batch (`otherwise`). Each refusal takes
    /// one document out, so a server that refuses every one ends the run after as many
    /// requests. Returns true when batch `i` left the run (it held that document alone).
    func leaveOut(
        _ i: Int, place: Int, reason: String, otherwise: VaultError, remedy: VaultError.Remedy? = nil
    ) async throws -> Bool {
        let docs = batchRecords(journal.batches[i])
        guard place >= 1 && place <= docs.count else {
            try journal.save(to: vault)
            throw otherwise
        }
        let error = VaultError(.documentRefused, "the server refused it \(reason)", remedy: remedy)
        if try await leave(docs[place - 1], outOf: i, for: error) { return true }
        // The rest go one document a request: each is sent at most twice (in this batch, then
        // alone) whatever else the server refuses. Sent again together, a large scan went once
        // more for every refused document beside it.
        let rest = journal.batches[i].documents
        if rest.count > 1 {
            journal.batches.replaceSubrange(
                i...i,
                with: rest.map {
                    UploadJournal.Batch(documents: [$0], bytes: 0, status: .pending, attempts: 0, key: "")
                })
            try rekey(from: i)
            try journal.save(to: vault)
        }
        return false
    }

    /// Takes document `d` out of batch `i` and out of the run for `error` — named, and not
    /// delivered, so a later run tries it again — with the batch when `d` was all it held
    /// (then returns true); the batches from `i` on get their new keys.
    func leave(_ d: DocumentRecord, outOf i: Int, for error: VaultError) async throws -> Bool {
        await sender.abandon(journal.batches[i].wire)
        journal.batches[i].wire = .none
        let alone = batchRecords(journal.batches[i]).count == 1
        if alone { journal.batches.remove(at: i) } else { journal.batches[i].documents.removeAll { $0 == d.id } }
        journal.skipped.append(.init(id: d.id, code: error.code.rawValue))
        runProgress.skip(remaining: d.metadata.size)
        if i < journal.batches.count { try rekey(from: i) }
        prefix = nil
        try journal.save(to: vault)
        onEvent(.skipped(id: d.id, name: d.metadata.name, error: error))
        return alone
    }
}
