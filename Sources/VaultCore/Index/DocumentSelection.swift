/// Which documents a command works on: those named (unique id prefixes of at least 4 hex
/// digits, or exact names), those with any of some tags, or all. The one place `list`, `get`, `remove`,
/// `verify`, `export` and `upload` resolve what the user typed. Pure: it works on the records.
public struct DocumentSelection: Sendable, Equatable {
    /// Id prefixes or names; empty means every document.
    public var queries: [String]
    /// Only documents with at least one of these tags (none: no tag filter).
    public var tags: [String]
    /// Documents left out of what the rest selects, named as `queries` are (each must match
    /// one document).
    public var excluding: [String] = []

    /// A selection; the default selects every document.
    public init(queries: [String] = [], tags: [String] = []) {
        self.queries = queries
        self.tags = tags
    }

    /// A selection of the documents named, with `tag` when given.
    public init(queries: [String] = [], tag: String?) {
        self.init(queries: queries, tags: tag.map { [$0] } ?? [])
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

    /// The ids `excluding` names (resolved as queries are).
    package func excludedIDs(in catalog: some DocumentCatalog) throws -> Set<DocumentID> {
        Set(try excluding.map { try Self.resolve($0, in: catalog).id })
    }

    private func including(_ catalog: some DocumentCatalog) throws -> [DocumentRecord] {
        var selected: [DocumentRecord]
        if !queries.isEmpty {
            var byID: [DocumentID: DocumentRecord] = [:]
            for q in queries {
                let r = try Self.resolve(q, in: catalog)
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
            throw VaultError(.notFound, tags.count == 1 ? "no documents have the tag '\(tags[0])'"
                                                        : "no documents have any of the tags " + tags.map { "'\($0)'" }.joined(separator: ", "))
        }
        return selected
    }

    /// The document a user means by `query`: a unique id prefix (at least 4 hex digits) or an
    /// exact name. An exact name wins over an id prefix that is also a name.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` (naming the candidates).
    public static func resolve(_ query: String, in records: [DocumentRecord]) throws -> DocumentRecord {
        try resolve(query, in: ListCatalog(records: records))
    }

    /// The document a user means by `query`, looked up in `catalog`.
    package static func resolve(_ query: String, in catalog: some DocumentCatalog) throws -> DocumentRecord {
        let lower = query.lowercased()
        let isHex = lower.count >= 4 && lower.allSatisfy { $0.isHexDigit }
        var matches = try catalog.records(named: query)
        if matches.isEmpty, let shown = unescape(query), shown != query { matches = try catalog.records(named: shown) }
        if isHex { matches += try catalog.records(idPrefix: lower).filter { $0.metadata.name != query } }
        switch matches.count {
        case 1: return matches[0]
        case 0:
            if lower.count < 4 && lower.allSatisfy(\.isHexDigit) {
                throw VaultError(.notFound, "no document matches '\(query)'", hint: "an id prefix needs at least 4 characters")
            }
            throw VaultError(.notFound, "no document matches '\(query)'", remedy: .listDocuments)
        default:
            let names = matches.prefix(5).map { "\($0.id.hex.prefix(12)) \($0.metadata.name)" }.joined(separator: ", ")
            throw VaultError(.ambiguous, "'\(query)' matches \(matches.count) documents: \(names)", hint: "use a longer id prefix")
        }
    }

    /// The name a user copied from a listing, where control characters are shown escaped
    /// (`\\n`, `\\r`, `\\t`, `\\xHH`): the name with them put back, or nil when `text` has no
    /// backslash. A name holding a backslash itself is looked up as typed first.
    static func unescape(_ text: String) -> String? {
        guard text.contains("\\") else { return nil }
        var out = String.UnicodeScalarView()
        var scalars = Array(text.unicodeScalars)[...]
        while let u = scalars.popFirst() {
            guard u == "\\", let next = scalars.first else { out.append(u); continue }
            switch next {
            case "n": out.append("\n"); scalars.removeFirst()
            case "r": out.append("\r"); scalars.removeFirst()
            case "t": out.append("\t"); scalars.removeFirst()
            case "x":
                let digits = String(String.UnicodeScalarView(scalars.dropFirst().prefix(2)))
                if digits.count == 2, let v = UInt32(digits, radix: 16), let scalar = Unicode.Scalar(v) {
                    out.append(scalar)
                    scalars.removeFirst(3)
                } else { out.append(u) }
            default: out.append(u)
            }
        }
        return String(out)
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
