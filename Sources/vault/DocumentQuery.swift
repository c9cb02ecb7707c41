import VaultCore
import VaultReceive

/// What a person typed to name a document: an exact name (also as a listing shows it, with
/// control characters escaped), or a unique id prefix of at least 4 hex digits. The guess is the
/// CLI's; the library takes typed references (``DocumentSelection/Reference``).
enum DocumentQuery {
    /// The document `query` means in `vault`: by its name or id, or at an office by the id its
    /// station reported, which the receipts in `office` (the office's records; by default, a
    /// folder's history) name.
    static func record(_ query: String, in vault: VaultCore.Vault, office: OfficeBook? = nil) throws -> DocumentRecord {
        do {
            return try vault.lookUp { catalog in try resolve(query, in: catalog) }
        } catch let e as VaultError where e.code == .notFound {
            // At an office, the id a station reported: its receipts name the office's document.
            guard let found = try receivedFromStation(query, in: vault, office: office) else { throw e }
            return found
        }
    }

    /// The document a receiver took that its station named `query` (an id prefix of at least
    /// 4 hex digits), or nil when no received document has such a station id.
    /// - Throws: ``VaultError/Code/ambiguous`` when several do (naming their stations).
    static func receivedFromStation(
        _ query: String, in vault: VaultCore.Vault, office: OfficeBook?
    ) throws -> DocumentRecord? {
        let lower = query.lowercased()
        guard lower.count >= 4, lower.allSatisfy(\.isHexDigit) else { return nil }
        let book = try office ?? FolderHome(vault: vault).book()
        let found = try book.received(stationIDPrefix: lower).filter { try vault.record($0.id) != nil }
        guard let first = found.first else { return nil }
        guard found.count == 1 else {
            let named = found.prefix(5).map {
                "\($0.id.hex.prefix(12)) (station \($0.station)'s \($0.stationID.hex.prefix(12)))"
            }
            throw VaultError(
                .ambiguous,
                "'\(query)' is the station id of \(found.count) documents: \(named.joined(separator: ", "))",
                hint: "use the office's id, or a longer prefix")
        }
        return try vault.lookUp { try resolve(first.id.hex, in: $0) }
    }

    /// A selection of the documents `queries` mean in `vault`, with `tags`.
    static func selection(
        _ queries: [String], tags: [String] = [], in vault: VaultCore.Vault, office: OfficeBook? = nil
    ) throws -> DocumentSelection {
        DocumentSelection(documents: try queries.map { try reference($0, in: vault, office: office) }, tags: tags)
    }

    /// `query` as a reference to the one document it means in `vault`.
    static func reference(
        _ query: String, in vault: VaultCore.Vault, office: OfficeBook? = nil
    ) throws -> DocumentSelection.Reference {
        .id(try record(query, in: vault, office: office).id)
    }

    /// The document a user means by `query`: a unique id prefix (at least 4 hex digits) or an
    /// exact name. An exact name wins over an id prefix that is also a name.
    /// - Throws: ``VaultError/Code/notFound`` or ``VaultError/Code/ambiguous`` (naming the candidates).
    static func resolve(_ query: String, in catalog: some DocumentCatalog) throws -> DocumentRecord {
        let lower = query.lowercased()
        let isHex = lower.count >= 4 && lower.allSatisfy { $0.isHexDigit }
        var matches = try catalog.records(named: query)
        if matches.isEmpty, let shown = unescape(query), shown != query { matches = try catalog.records(named: shown) }
        if isHex { matches += try catalog.records(idPrefix: lower).filter { $0.metadata.name != query } }
        if matches.isEmpty && lower.count < 4 && lower.allSatisfy(\.isHexDigit) {
            throw VaultError(
                .notFound, "no document matches '\(query)'", hint: "an id prefix needs at least 4 characters")
        }
        return try DocumentSelection.one(of: matches, matching: query)
    }

    /// The name a user copied from a listing, where control characters are shown escaped
    /// (`\\n`, `\\r`, `\\t`, `\\xHH`): the name with them put back, or nil when `text` has no
    /// backslash. A name holding a backslash itself is looked up as typed first.
    static func unescape(_ text: String) -> String? {
        guard text.contains("\\") else { return nil }
        var out = String.UnicodeScalarView()
        var scalars = Array(text.unicodeScalars)[...]
        while let u = scalars.popFirst() {
            guard u == "\\",
                  let next = scalars.first else { out.append(u); continue }
            switch next {
            case "n": out.append("\n"); scalars.removeFirst()
            case "r": out.append("\r"); scalars.removeFirst()
            case "t": out.append("\t"); scalars.removeFirst()
            case "x":
                let digits = String(String.UnicodeScalarView(scalars.dropFirst().prefix(2)))
                if digits.count == 2, let v = UInt32(digits, radix: 16), let scalar = Unicode.Scalar(v) {
                    out.append(scalar)
                    scalars.removeFirst(3)
                } else {
                    out.append(u)
                }
            default: out.append(u)
            }
        }
        return String(out)
    }
}
