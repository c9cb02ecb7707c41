/// One document as the index and `list` know it.
public struct DocumentRecord: Codable, Sendable, Equatable {
    /// The document's id.
    public var id: DocumentID
    /// Its authenticated metadata.
    public var metadata: DocumentMetadata

    /// Creates a record.
    public init(id: DocumentID, metadata: DocumentMetadata) {
        self.id = id
        self.metadata = metadata
    }
}

/// The order `list`, `export` and `verify` use: oldest first, then by id.
extension Array where Element == DocumentRecord {
    /// Records sorted by time added, then id.
    public func stableOrder() -> [DocumentRecord] {
        sorted { ($0.metadata.addedAtMillis, $0.id) < ($1.metadata.addedAtMillis, $1.id) }
    }
}
