/// The result of ``Vault/verify(_:progress:)``.
package struct VerifyReport: Sendable {
    /// One document's outcome.
    package struct Entry: Sendable {
        /// The document id.
        package var id: DocumentID
        /// Its name, from the envelope if it opened, else from the index, else nil.
        package var name: String?
        /// Its plaintext size, when known.
        package var size: UInt64?
        /// Why it failed, or nil if every chunk and the digest verified.
        package var error: VaultError?
    }

    /// What was found about the index.
    package enum IndexState: String, Sendable {
        /// It authenticated and matched the objects.
        case ok
        /// It was missing or named other documents (normal after a crash); it was rebuilt.
        case rebuilt
        /// It failed authentication or disagreed with an envelope; it was rebuilt.
        case damaged
    }

    /// Per-document outcomes, in stable order.
    package var documents: [Entry]
    /// The index's state.
    package var index: IndexState
    /// The documents that failed.
    package var damaged: [Entry] { documents.filter { $0.error != nil } }
    /// True when every document and the index verified.
    package var isClean: Bool { damaged.isEmpty && index != .damaged }
}

extension Vault {
    /// Authenticates every chunk of each selected document (all when `ids` is nil), compares
    /// the plaintext's SHA-256 with the recorded one, and checks the index against what the
    /// envelopes say, rebuilding it when it is stale or damaged.
    /// - Parameter progress: called after each verified batch with (bytes done, bytes total).
    package func verify(_ ids: [DocumentID]? = nil, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> VerifyReport
    {
        let all = try records().records
        let status = indexHolder.lastStatus
        let selected = try ids ?? Array(store.objectIDs())
        let known = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = selected.sorted { a, b in
            let ka = known[a].map { $0.metadata.addedAtMillis } ?? .max,
                kb = known[b].map { $0.metadata.addedAtMillis } ?? .max
            return (ka, a) < (kb, b)
        }
        let total = ordered.reduce(UInt64(0)) { $0 + (known[$1]?.metadata.size ?? 0) }
        var done: UInt64 = 0
        var mismatch = false
        var entries: [VerifyReport.Entry] = []
        var indexState: VerifyReport.IndexState =
            switch status {
            case .current: .ok
            case .missing, .stale, .otherEpoch: .rebuilt
            case .damaged: .damaged
            }
        for id in ordered {
            var entry = VerifyReport.Entry(id: id, name: known[id]?.metadata.name, size: known[id]?.metadata.size)
            do {
                if holdsCaptured(id) {
                    // What a capture-only station (or an office without the identity) can check: its
                    // sealed files, as captured.
                    let base = done
                    let record = try checkCaptured(id) { progress?(base + $0, max(total, base + $0)) }
                    (entry.name, entry.size) = (record.metadata.name, record.metadata.size)
                    done = base + record.metadata.size
                    if let known = known[id], !known.metadata.sameDocument(as: record.metadata) {
                        indexState = .damaged; mismatch = true
                    }
                    entries.append(entry)
                    continue
                }
                let reader = try openEnvelope(id, verifyDigest: true)
                entry.name = reader.metadata.name
                entry.size = reader.metadata.size
                // Tags change in the history (`vault tag`), not in the envelope: audit checks them.
                if let record = known[id], !record.metadata.sameDocument(as: reader.metadata) {
                    indexState = .damaged; mismatch = true
                }
                while let batch = try reader.next() {
                    done += UInt64(batch.count)
                    progress?(done, max(total, done))
                }
            } catch {
                entry.error = VaultError.from(error)
            }
            entries.append(entry)
        }
        if mismatch { try rebuildIndexNow() }
        return VerifyReport(documents: entries, index: indexState)
    }
}
