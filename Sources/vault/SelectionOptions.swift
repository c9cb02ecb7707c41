import ArgumentParser
import Synchronization
import VaultCore

/// The documents a batch command works on: those named, those with a tag, or all.
struct SelectionOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Documents (default: all), by id prefix or name.", valueName: "id-or-name"))
    var documents: [String] = []

    @Option(
        name: .customLong("tag"),
        help: ArgumentHelp("Only documents with this tag; repeat for documents with any of several.", valueName: "tag"))
    var tags: [String] = []

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp("Leave this document out (id prefix or name); repeat for several.", valueName: "id-or-name"))
    var excludes: [String] = []

    /// What the arguments select in `vault`: each name or id prefix typed resolved to the one
    /// document it means (``DocumentQuery``).
    func selection(in vault: VaultCore.Vault) throws -> DocumentSelection {
        var s = DocumentSelection(
            documents: try documents.map { try DocumentQuery.reference($0, in: vault) }, tags: tags)
        s.excluding = try excludes.compactMap { query in
            // Not in the vault (removed since the cron line was written): nothing to leave out,
            // which is no reason to stop a scheduled command. An ambiguous one still is.
            do {
                return try DocumentQuery.reference(query, in: vault)
            } catch let e as VaultError where e.code == .notFound {
                if Self.warned.withLock({ $0.insert(query).inserted }) {
                    Terminal.warn("--exclude \(query): \(e.message); there is nothing to leave out")
                }
                return nil
            }
        }
        return s
    }

    /// The `--exclude` queries warned about already (a command may resolve its selection twice).
    private static let warned = Mutex<Set<String>>([])

    /// True when the arguments name no documents and no tags (`--exclude` may still leave some out).
    var isEverything: Bool { documents.isEmpty && tags.isEmpty }

    /// The selected records in stable order (oldest first); at least one.
    /// - Throws: ``VaultError/Code/notFound`` when nothing is selected; resolution errors.
    /// - Throws: ``VaultError/Code/vaultDamaged`` when `sending` and a selected document was
    ///   removed according to the history but its object is back (it is never sent).
    func records(in vault: VaultCore.Vault, verb: String, sending: Bool = false) throws -> [DocumentRecord] {
        let selected = try vault.select(selection(in: vault))
        if selected.isEmpty { throw VaultError(.notFound, "there are no documents to \(verb)") }
        if sending { try vault.refuseResurrected(selected) }
        return selected
    }
}

extension VaultCore.Vault {
    /// Records what a sending command did, warning (not failing: the documents are out
    /// already) when the history cannot be written.
    func recordSent(
        _ operation: HistoryRecord.Operation, _ records: [DocumentRecord], sentIDs: [DocumentID],
        destinations: [String],
        skipped: Int, detail: String? = nil
    ) {
        let byID = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
        recordSent(
            operation, sent: sentIDs.compactMap { byID[$0] }.map(HistoryRecord.Document.init),
            destinations: destinations,
            skipped: skipped, detail: detail)
    }

    /// As above, with the sent documents' records read from the index by id (for a command that
    /// did not hold the records: a document removed meanwhile is left out).
    func recordSent(
        _ operation: HistoryRecord.Operation, sentIDs: [DocumentID], destinations: [String], skipped: Int,
        detail: String? = nil
    ) {
        var sent: [HistoryRecord.Document] = []
        sent.reserveCapacity(sentIDs.count)
        do {
            // A thousand records at a time: the record names every document, its records need not all be held too.
            let ids = sentIDs
            for start in stride(from: 0, to: ids.count, by: 1000) {
                sent += try records(Array(ids[start..<min(start + 1000, ids.count)]), skippingMissing: true).map(
                    HistoryRecord.Document.init)
            }
        } catch {
            Terminal.warn("the history could not record this \(operation.rawValue): \(VaultError.from(error).message)")
            return
        }
        recordSent(operation, sent: sent, destinations: destinations, skipped: skipped, detail: detail)
    }

    private func recordSent(
        _ operation: HistoryRecord.Operation, sent: [HistoryRecord.Document], destinations: [String],
        skipped: Int, detail: String?
    ) {
        do {
            try appendToHistory(
                HistoryRecord(
                    operation, outcome: skipped > 0 ? .partial : .ok, documents: sent, destinations: destinations,
                    detail: detail ?? (skipped > 0 ? "\(Plural.count(skipped, "damaged document")) left out" : nil)))
        } catch {
            Terminal.warn("the history could not record this \(operation.rawValue): \(VaultError.from(error).message)")
        }
    }
}
