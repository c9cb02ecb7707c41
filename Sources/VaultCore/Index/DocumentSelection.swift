/// Which documents an operation works on: those referred to (by id, id prefix or exact name),
/// those with any of some tags, or all. Typed: what a person typed is turned into references by
/// the front end (the CLI guesses between a name and an id prefix), not here. Pure: it works on
/// the records.
public struct DocumentSelection: Sendable, Equatable {
    /// One document, as an operation refers to it.
    public enum Reference: Sendable, Hashable {
        /// The document with this id.
        case id(DocumentID)
        /// The one document whose id starts with these hex digits (at least 4, any case).
        case idPrefix(String)
        /// The one document with exactly this name.
        case name(String)
    }

    /// The documents referred to; empty means every document.
    public var documents: [Reference]
    /// Only documents with at least one of these tags (none: no tag filter).
    public var tags: [String]
    /// Documents left out of what the rest selects (each must match one document).
    public var excluding: [Reference] = []

    /// A selection; the default selects every document.
    public init(documents: [Reference] = [], tags: [String] = []) {
        self.documents = documents
        self.tags = tags
    }

    /// The selected records, in the order of `records` (stable order: oldest first), each once.
    /// Naming documents and tags selects the named documents that have one of the tags.
    /// - Throws: ``VaultError/Code/notFound`` for a query that matches nothing, or a tag that no
    ///   selected document has; ``VaultError/Code/ambiguous`` for a query that matches several.
    public func apply(to records: [DocumentRecord]) throws -> [DocumentRecord] {
        try apply(to: ListCatalog(records: records))
    }

    /// The selected records from `catalog`, in stable order, each once: only the documents the
    /// queries or the tag match are read.
    package func apply(to catalog: some DocumentCatalog) throws -> [DocumentRecord] {
        let left = try excludedIDs(in: catalog)
        let selected = try including(catalog)
        return left.isEmpty ? selected : selected.filter { !left.contains($0.id) }
    }

    /// The ids `excluding` refers to.
    package func excludedIDs(in catalog: some DocumentCatalog) throws -> Set<DocumentID> {
        Set(try excluding.map { try Self.resolve($0, in: catalog).id })
    }

    private func including(_ catalog: some DocumentCatalog) throws -> [DocumentRecord] {
        var selected: [DocumentRecord]
        if !documents.isEmpty {
            var byID: [DocumentID: DocumentRecord] = [:]
            for reference in documents {
                let r = try Self.resolve(reference, in: catalog)
                byID[r.id] = r
            }
            selected = Array(byID.values).stableOrder()
            if !tags.isEmpty { selected = selected.filter { !Set($0.metadata.tags).isDisjoint(with: tags) } }
        } else if tags.count == 1 {
            selected = try catalog.records(tagged: tags[0])
        } else if !tags.isEmpty {
            var byID: [DocumentID: DocumentRecord] = [:]
            for tag in Set(tags) { for r in try catalog.records(tagged: tag) { byID[r.id] = r } }
            selected = Array(byID.values).stableOrder()
        } else {
            selected = try catalog.allRecords()
        }
        if !tags.isEmpty, selected.isEmpty {
            throw VaultError(
                .notFound,
                tags.count == 1
                    ? "no documents have the tag '\(tags[0])'"
                    : "no documents have any of the tags " + tags.map { "'\($0)'" }.joined(separator: ", "))
        }
        return selected
    }

    /// The one document `reference` refers to in `records`.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` (naming the candidates).
    public static func resolve(_ reference: Reference, in records: [DocumentRecord]) throws -> DocumentRecord {
        try resolve(reference, in: ListCatalog(records: records))
    }

    /// The one document `reference` refers to, looked up in `catalog`.
    package static func resolve(_ reference: Reference, in catalog: some DocumentCatalog) throws -> DocumentRecord {
        switch reference {
        case .id(let id):
            guard let r = try catalog.records(idPrefix: id.hex).first(where: { $0.id == id }) else {
                throw VaultError(.notFound, "there is no document \(id)", remedy: .listDocuments)
            }
            return r
        case .idPrefix(let prefix):
            let lower = prefix.lowercased()
            guard lower.count >= 4,
                  lower.allSatisfy(\.isHexDigit) else {
                throw VaultError(
                    .notFound, "no document matches '\(prefix)'", hint: "an id prefix needs at least 4 characters")
            }
            return try one(of: try catalog.records(idPrefix: lower), matching: prefix)
        case .name(let name):
            return try one(of: try catalog.records(named: name), matching: name)
        }
    }

    /// The one record of `matches`, those `query` matched.
    /// - Throws: ``VaultError/Code/notFound`` for none, ``VaultError/Code/ambiguous`` for several.
    package static func one(of matches: [DocumentRecord], matching query: String) throws -> DocumentRecord {
        switch matches.count {
        case 1: return matches[0]
        case 0: throw VaultError(.notFound, "no document matches '\(query)'", remedy: .listDocuments)
        default:
            let names = matches.prefix(5).map { "\($0.id.hex.prefix(12)) \($0.metadata.name)" }.joined(separator: ", ")
            throw VaultError(
                .ambiguous, "'\(query)' matches \(matches.count) documents: \(names)", hint: "use a longer id prefix")
        }
    }
}

/// Where a ``DocumentSelection`` looks documents up: the vault's index, or a list in memory.
package protocol DocumentCatalog {
    /// The documents named exactly `name`, in stable order.
    func records(named name: String) throws -> [DocumentRecord]
    /// The documents whose id starts with `prefix` (lower-case hex), in stable order.
    func records(idPrefix prefix: String) throws -> [DocumentRecord]
    /// The documents with tag `tag`, in stable order.
    func records(tagged tag: String) throws -> [DocumentRecord]
    /// Every document, in stable order.
    func allRecords() throws -> [DocumentRecord]
}

/// Records in memory as a catalog (in stable order).
package struct ListCatalog: DocumentCatalog {
    let records: [DocumentRecord]
    /// A catalog of `records`.
    package init(records: [DocumentRecord]) { self.records = records.stableOrder() }
    package func records(named name: String) -> [DocumentRecord] { records.filter { $0.metadata.name == name } }
    package func records(idPrefix prefix: String) -> [DocumentRecord] { records.filter { $0.id.hex.hasPrefix(prefix) } }
    package func records(tagged tag: String) -> [DocumentRecord] { records.filter { $0.metadata.tags.contains(tag) } }
    package func allRecords() -> [DocumentRecord] { records }
}

/// The index as a catalog: each lookup reads the rows it matches.
struct IndexCatalog: DocumentCatalog {
    let index: DocumentIndex
    func records(named name: String) throws -> [DocumentRecord] { try index.records(named: name) }
    func records(idPrefix prefix: String) throws -> [DocumentRecord] { try index.records(idPrefix: prefix) }
    func records(tagged tag: String) throws -> [DocumentRecord] { try index.records(tagged: tag) }
    func allRecords() throws -> [DocumentRecord] {
        var all: [DocumentRecord] = []
        try index.forEach { all.append($0) }
        return all
    }
}
