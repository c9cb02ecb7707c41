#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Vault {
    /// Changes the tags of the documents `ids` names: one `tag` record naming those whose tags
    /// change, applied to the index as it is appended (the envelopes keep the tags they were
    /// added with; ``TagChange``). A vault of an earlier format is upgraded first (a `tag` record
    /// is of this format). Returns the documents' records as they are now.
    /// - Throws: ``VaultError/Code/notFound`` for a document not in the vault;
    ///   ``VaultError/Code/usage`` when a document would have more tags than it may.
    package func retag(_ ids: [DocumentID], _ change: TagChange) throws -> [DocumentRecord] {
        let vault = keepsDestinationsInHistory ? self : try upgradeFormat()
        let before = try vault.records(ids)
        let changing = before.filter { $0.metadata.retagged(change) != $0.metadata }
        for r in changing { try r.metadata.retagged(change).validate() }
        if !changing.isEmpty {
            try vault.appendToHistory(
                HistoryRecord(.tag, documents: changing.map(HistoryRecord.Document.init), detail: change.detail))
        }
        return try vault.records(ids)
    }
}
