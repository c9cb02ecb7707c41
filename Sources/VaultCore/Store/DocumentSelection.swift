/// Which documents a command works on: those named (unique id prefixes of at least 4 hex
/// digits, or exact names), those with a tag, or all. The one place `list`, `get`, `remove`,
/// `verify`, `export` and `upload` resolve what the user typed. Pure: it works on the records.
public struct DocumentSelection: Sendable, Equatable {
    /// Id prefixes or names; empty means every document.
    public var queries: [String]
    /// Only documents with this tag.
    public var tag: String?

    /// A selection; the default selects every document.
    public init(queries: [String] = [], tag: String? = nil) {
        self.queries = queries
        self.tag = tag
    }

    /// The selected records, in the order of `records` (stable order: oldest first), each once.
    /// Naming documents and a tag selects the named documents that have the tag.
    /// - Throws: ``VaultError/Code/notFound`` for a query that matches nothing, or a tag that no
    ///   selected document has; ``VaultError/Code/ambiguous`` for a query that matches several.
    public func apply(to records: [DocumentRecord]) throws -> [DocumentRecord] {
        var selected = records
        if !queries.isEmpty {
            var ids = Set<DocumentID>()
            for q in queries { ids.insert(try Self.resolve(q, in: records).id) }
            selected = records.filter { ids.contains($0.id) }
        }
        if let tag {
            selected = selected.filter { $0.metadata.tags.contains(tag) }
            if selected.isEmpty { throw VaultError(.notFound, "no documents have the tag '\(tag)'") }
        }
        return selected
    }

    /// The document a user means by `query`: a unique id prefix (at least 4 hex digits) or an
    /// exact name. An exact name wins over an id prefix that is also a name.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` (naming the candidates).
    public static func resolve(_ query: String, in records: [DocumentRecord]) throws -> DocumentRecord {
        let lower = query.lowercased()
        let isHex = lower.count >= 4 && lower.allSatisfy { $0.isHexDigit }
        var matches = records.filter { $0.metadata.name == query }
        if isHex { matches += records.filter { $0.id.hex.hasPrefix(lower) && $0.metadata.name != query } }
        switch matches.count {
        case 1: return matches[0]
        case 0:
            let hint = lower.count < 4 && lower.allSatisfy(\.isHexDigit) ? "an id prefix needs at least 4 characters" : "see 'vault list'"
            throw VaultError(.notFound, "no document matches '\(query)'", hint: hint)
        default:
            let names = matches.prefix(5).map { "\($0.id.hex.prefix(12)) \($0.metadata.name)" }.joined(separator: ", ")
            throw VaultError(.ambiguous, "'\(query)' matches \(matches.count) documents: \(names)", hint: "use a longer id prefix")
        }
    }
}
