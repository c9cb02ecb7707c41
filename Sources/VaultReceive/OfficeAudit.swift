#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// An audit of what an office on a store took: the receivers' log
/// is read whole and checked as a receiver starting checks it (a missing, foreign, reordered or
/// rewritten entry throws `vault-damaged`); its key file must be the key the log names; then
/// every `receive` entry is checked against what it claims:
/// - its receipt is one the receivers' key signed, for this station and batch key, naming as many
///   documents as the entry, with the SHA-256 and size the entry lists for each (`receipt-invalid`);
/// - every document it took is on the store and its envelope authenticates, with that size and
///   SHA-256 (`missing-object`, `object-differs`), unless a tombstone of this vault removed it;
///   with `deep`, every chunk is read and authenticated and the SHA-256 recomputed
///   (`damaged-object`).
package struct OfficeAudit: Sendable {
    /// What was audited.
    package struct Report: Sendable {
        package var entries = 0
        package var batches = 0
        package var documents = 0
        /// Downloads by operators of the browser view (`download` entries).
        package var downloads = 0
        package var findings: [AuditFinding] = []
    }

    /// A receipt that is not the receivers' signed statement of the entry's batch.
    package static let receiptInvalid = AuditFinding.Code(rawValue: "receipt-invalid")

    let home: StoreHome

    package init(home: StoreHome) { self.home = home }

    package func run(deep: Bool) async throws -> Report {
        let log = home.log
        var report = Report()
        let records = try await home.records().records
        report.entries = records.count
        report.downloads = records.filter { $0.operation == .download }.count
        let key = try await log.identity(create: false)
        let taken = records.filter { $0.operation == .receive }
        if key == nil, !taken.isEmpty {
            report.findings.append(
                AuditFinding(
                    .missingObject, "\(log.location)/receivers/key.vlt is missing: no receipt can be checked"))
        }
        for (n, record) in records.enumerated() where record.operation == .receive {
            report.batches += 1
            let entry = "entry \(n + 1) (receivers/log/\(zeroPadded(n + 1, 12)))"
            guard let batch = record.payload(ReceivedBatch.self) else {
                report.findings.append(AuditFinding(Self.receiptInvalid, "\(entry) does not say which batch it took"))
                continue
            }
            if let problem = Self.receiptProblem(batch, record, key: key?.publicKey) {
                let what = "\(entry), batch '\(batch.batch)' of \(batch.station): \(problem)"
                report.findings.append(AuditFinding(Self.receiptInvalid, what))
            }
            for d in record.documents {
                report.documents += 1
                report.findings += try await check(d, entry: entry, deep: deep)
            }
        }
        return report
    }

    /// Why the entry's receipt is not the receivers' signed statement of its batch, or nil.
    static func receiptProblem(_ batch: ReceivedBatch, _ record: OfficeRecord, key: [UInt8]?) -> String? {
        guard let answer = try? Receipt.answer(Array(batch.answer.utf8)) else { return "its receipt does not read" }
        if let key, !answer.isSigned(by: key) { return "its receipt is not signed by the receivers' key" }
        let r = answer.receipt
        guard r.station == batch.station, r.batch == batch.batch else {
            return "its receipt is of batch '\(r.batch)' of \(r.station)"
        }
        guard r.documents.count == record.documents.count else {
            return "its receipt names \(r.documents.count) documents, the entry \(record.documents.count)"
        }
        for (i, (signed, kept)) in zip(r.documents, record.documents).enumerated() where !kept.sha256.isEmpty {
            if Hex.encode(signed.sha256) != kept.sha256 || signed.size != kept.size {
                return "document \(i + 1) differs from what its receipt signs (SHA-256 or size)"
            }
        }
        return nil
    }

    /// The findings of one document an entry names.
    private func check(_ d: HistoryRecord.Document, entry: String, deep: Bool) async throws -> [AuditFinding] {
        guard let (record, vault) = try await home.document(d.id) else {
            if try await home.removed(d.id) { return [] }
            return [AuditFinding(.missingObject, "\(d.id) (\(entry)) is not on the store, and no tombstone removed it")]
        }
        if !d.sha256.isEmpty, Hex.encode(record.metadata.sha256) != d.sha256 || record.metadata.size != d.size {
            return [AuditFinding(.objectDiffers, "\(d.id) (\(entry)) is not the document the entry took")]
        }
        guard deep else { return [] }
        do {
            let reader = try vault.open(d.id, verifyDigest: true)
            while try reader.next() != nil {}
        } catch {
            return [AuditFinding(.damagedObject, "\(d.id) (\(entry)): \(VaultError.from(error).message)")]
        }
        return []
    }
}
