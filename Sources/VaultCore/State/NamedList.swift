#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An entry of a ``NamedList``: a place known by a short name.
public protocol NamedListEntry: Codable, Sendable, Equatable {
    /// The entry's short name.
    var name: String { get }
    /// The key the list's entries are kept under in its JSON (`remotes`, `destinations`).
    static var listKey: String { get }
    /// What the list is called in messages (`remote`, `destination`).
    static var kind: String { get }
}

/// A vault's list of named places, sealed under the vault key: its remotes (replicas of the
/// vault, `remotes.vlt`) and its destinations (where documents are delivered). One type for
/// both: the same rule for names, the same sealed format, the same lookups, so that nobody
/// without the password can redirect either.
public struct NamedList<Entry: NamedListEntry>: Codable, Sendable, Equatable {
    /// The entries, in the order they were named.
    public var entries: [Entry] = []

    /// An empty list.
    public init() {}

    /// A list of `entries`.
    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// True for a name an entry may have: 1-64 of letters, digits, `-`, `_`, `.`, not starting
    /// with `.` (a URL is never a name: it has `:`).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                    || "-_.".unicodeScalars.contains($0)
            }
    }

    /// The entry named `name`, if any.
    public func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    private struct ListKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Reads `{"<listKey>": [entries]}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: ListKey.self)
        entries = try c.decode([Entry].self, forKey: ListKey(stringValue: Entry.listKey))
    }

    /// Writes `{"<listKey>": [entries]}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: ListKey.self)
        try c.encode(entries, forKey: ListKey(stringValue: Entry.listKey))
    }

    // MARK: The sealed file

    /// The list sealed in the file at `path` (a sealed state file of `purpose`, role `role`),
    /// empty when there is none; with `anyEpoch`, opened under any key of the vault's keyring.
    /// - Throws: ``VaultError/Code/vaultDamaged`` (remedy `damaged`) for a file that does not
    ///   open (edited, swapped, from another vault, sealed under a retired key) or is no list.
    package static func openSealed(
        _ vault: Vault, path: String, purpose: SealedState.Purpose, role: String, anyEpoch: Bool = false,
        damaged: VaultError.Remedy
    ) throws -> NamedList {
        guard FileSystem.kind(of: path) != .missing else { return NamedList() }
        let bytes = try FileSystem.readFile(path, limit: 1 << 20)
        let body: [UInt8]
        if anyEpoch {
            guard
                let (_, opened) = try SealedState.openAnyEpoch(
                    bytes, purpose: purpose, role: role, keys: vault.keys, vaultID: vault.config.id)
            else {
                throw VaultError(.vaultDamaged, "\(path) does not open under any of the vault's keys", remedy: damaged)
            }
            body = opened
        } else {
            body = try vault.openState(bytes, purpose: purpose, role: role, what: path)
        }
        guard let list = try? JSONDecoder().decode(NamedList.self, from: Data(body)) else {
            throw VaultError(.vaultDamaged, "\(path) is not a valid \(Entry.kind) list", remedy: damaged)
        }
        return list
    }

    /// Writes the list crash-safely to `path`, sealed (purpose `purpose`, role `role`).
    package func saveSealed(_ vault: Vault, to path: String, purpose: SealedState.Purpose, role: String) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try vault.sealState(Array(try e.encode(self)), purpose: purpose, role: role), to: path)
    }
}
