#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What a removal says: every command that deletes documents names what it deleted, and on a
/// terminal asks before deleting more than a few.
enum Removal {
    /// More than this many documents, on a terminal, are confirmed first.
    static let confirmAbove = 5

    /// One line on stderr: how many, how large, and their names (the first ten).
    static func report(_ records: [DocumentRecord], why: String) {
        guard !records.isEmpty else { return }
        Terminal.err("vault: removed \(summary(records))\(why.isEmpty ? "" : " " + why): \(names(records))")
    }

    /// `23 documents (4.5 MiB)`.
    static func summary(_ records: [DocumentRecord]) -> String {
        """
            \(Plural.count(records.count, "document")) \
            (\(Terminal.size(records.reduce(UInt64(0)) { $0 + $1.metadata.size })))
            """
    }

    /// The first ten names, then how many more.
    static func names(_ records: [DocumentRecord], first: Int = 10) -> String {
        let shown = records.prefix(first).map { Terminal.printable($0.metadata.name) }.joined(separator: ", ")
        return records.count > first ? shown + " and \(records.count - first) more" : shown
    }

    /// Asks on the terminal before `records` are removed, when they are more than a few and
    /// both standard input and standard error are a terminal; `yes` or a script (no terminal)
    /// goes on. Returns false when the user said no.
    static func confirm(_ records: [DocumentRecord], why: String, yes: Bool) -> Bool {
        guard !yes,
              records.count > confirmAbove,
              Terminal.isTTY(0),
              Terminal.isTTY(2) else { return true }
        Terminal.err("vault: about to remove \(summary(records))\(why.isEmpty ? "" : " " + why):")
        for r in records.prefix(20) {
            Terminal.err(
                "  \(r.id.hex.prefix(12))  \(Terminal.size(r.metadata.size))  \(Terminal.printable(r.metadata.name))")
        }
        if records.count > 20 { Terminal.err("  … and \(records.count - 20) more") }
        Terminal.raw("vault: remove them? [y/N] ")
        guard let answer = readLine(strippingNewline: true) else { return false }
        return ["y", "yes"].contains(answer.trimmingSpaces().lowercased())
    }
}
