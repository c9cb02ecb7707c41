#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a `tag` record does to its documents' tags: the tags added and those removed
/// (`vault tag`). The envelope keeps the tags a document was added with; the history is where
/// they change, so a change is sealed, chained and audited like any other, and the index's
/// tags are the envelope's with every change applied in order.
package struct TagChange: Codable, Sendable, Equatable, HistoryPayload {
    package static let operation = HistoryRecord.Operation.tag

    /// Tags added, and tags removed (never both).
    package private(set) var add: [String]
    package private(set) var remove: [String]

    /// A change; a tag both added and removed is refused, and each list is sorted and unique.
    /// - Throws: ``VaultError/Code/usage`` for an empty change, an empty or too long tag, or a
    ///   tag in both lists.
    package init(add: [String], remove: [String]) throws {
        self.add = Array(Set(add)).sorted()
        self.remove = Array(Set(remove)).sorted()
        guard !self.add.isEmpty || !self.remove.isEmpty else {
            throw VaultError(.usage, "a tag change adds or removes at least one tag")
        }
        for t in self.add + self.remove where t.isEmpty || t.utf8.count > DocumentMetadata.maxTagBytes {
            throw VaultError(.usage, "tags must be 1 to \(DocumentMetadata.maxTagBytes) bytes long")
        }
        for t in self.add where !Self.isPlain(t) {
            throw VaultError(
                .usage,
                """
                    the tag '\(t)' cannot be added: a tag has no control characters or commas, and does not begin or \
                    end with a space
                    """
            )
        }
        if let both = Set(self.add).intersection(self.remove).sorted().first {
            throw VaultError(.usage, "the tag '\(both)' cannot be added and removed at once")
        }
    }

    /// A tag that reads the same wherever tags are listed: no control or bidirectional
    /// characters, no comma (lists join with one), no space at either end.
    package static func isPlain(_ tag: String) -> Bool {
        !tag.unicodeScalars.contains {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                || (0x2066...0x2069).contains($0.value) || [0x061C, 0x200E, 0x200F].contains($0.value) || $0 == ","
        }
            && tag.first?.isWhitespace != true && tag.last?.isWhitespace != true
    }

    /// A record's change is one only as ``init(add:remove:)`` would make it.
    package var isValid: Bool { (try? TagChange(add: add, remove: remove)) == self }

    /// As a record's detail (sorted keys: the same change is the same bytes).
    package var detail: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? e.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// For people: `+2026 -inbox`.
    package var summary: String { (add.map { "+" + $0 } + remove.map { "-" + $0 }).joined(separator: " ") }

    /// `tags` with the change made: those removed go, those added are appended (in order).
    package func applied(to tags: [String]) -> [String] {
        let gone = Set(remove)
        var out = tags.filter { !gone.contains($0) }
        for t in add where !out.contains(t) { out.append(t) }
        return out
    }

    /// This change, then `next`: one change that does both.
    func then(_ next: TagChange) -> TagChange {
        var added = Set(add), removed = Set(remove)
        added.subtract(next.remove); added.formUnion(next.add)
        removed.subtract(next.add); removed.formUnion(next.remove)
        var c = self
        c.add = added.sorted()
        c.remove = removed.sorted()
        return c
    }

    /// The change a `tag` record names, if it is one.
    package static func of(_ record: HistoryRecord) -> TagChange? { record.payload(TagChange.self) }
}

extension DocumentMetadata {
    /// Whether `other` describes the same document: everything but the tags, which the history
    /// changes after the envelope was sealed (``TagChange``).
    package func sameDocument(as other: DocumentMetadata) -> Bool {
        var a = self, b = other
        a.tags = []
        b.tags = []
        return a == b
    }

    /// This metadata with `change` (if any) made to its tags.
    package func retagged(_ change: TagChange?) -> DocumentMetadata {
        guard let change else { return self }
        var m = self
        m.tags = change.applied(to: tags)
        return m
    }
}
