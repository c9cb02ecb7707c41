#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Where a remote vault lives on an S3-compatible store: `s3://BUCKET/PREFIX`.
///
/// Layout under the prefix (docs/FORMAT.md, "Remote layout"): `vault.json` (the vault's
/// public parameters and wrapped key, as on disk), `objects/<id>.vlt` (the envelopes, byte for
/// byte) and `removed/<id>` (sealed tombstones).
public struct RemoteLocation: Sendable, Equatable, CustomStringConvertible {
    public var bucket: String
    /// The key prefix, without leading or trailing `/` (may be empty).
    public var prefix: String

    /// True when `value` is an `s3://` URL rather than a folder: its scheme in any case, as
    /// URL schemes are (`S3://b/p` was taken for a folder named `S3:`).
    public static func isURL(_ value: String) -> Bool { value.prefix(5).lowercased() == "s3://" }

    /// Parses `s3://BUCKET/PREFIX` (the scheme in any case).
    /// - Throws: ``VaultError/Code/usage`` for anything else.
    public init(url: String) throws {
        guard Self.isURL(url),
            let c = URLComponents(string: url),
            let host = c.host,
            !host.isEmpty,
            c.query == nil,
            c.fragment == nil,
            c.user == nil
        else {
            throw VaultError(.usage, "'\(url)' is not an s3://BUCKET/PREFIX URL")
        }
        bucket = host
        prefix = c.path.trimming("/")
    }

    public var description: String { prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)" }

    package func key(_ rest: String) -> String { prefix.isEmpty ? rest : prefix + "/" + rest }
    var configKey: String { key("vault.json") }
    var objectsPrefix: String { key("objects/") }
    var removedPrefix: String { key("removed/") }
    package func objectKey(_ id: DocumentID) -> String { key("objects/\(id.hex).vlt") }
    func tombstoneKey(_ id: DocumentID) -> String { key("removed/\(id.hex)") }
    /// A captured document's metadata file, beside its data (`objects/<id>.meta.vlt`).
    package func capturedMetadataKey(_ id: DocumentID) -> String {
        key("objects/" + CapturedDocument.metadataFileName(id))
    }

    /// The document id of a captured document's metadata key, or nil for another key.
    func capturedMetadataID(_ key: String) -> DocumentID? {
        guard key.hasPrefix(objectsPrefix), key.hasSuffix(".meta.vlt") else { return nil }
        return DocumentID(hex: String(key.dropFirst(objectsPrefix.count).dropLast(9)))
    }

    /// The document id of an object key, or nil for a key that is not `objects/<id>.vlt`.
    func objectID(_ key: String) -> DocumentID? {
        guard key.hasPrefix(objectsPrefix),
            key.hasSuffix(".vlt")
        else { return nil }
        return DocumentID(hex: String(key.dropFirst(objectsPrefix.count).dropLast(4)))
    }

    /// The document id of a tombstone key.
    func tombstoneID(_ key: String) -> DocumentID? {
        guard key.hasPrefix(removedPrefix) else { return nil }
        return DocumentID(hex: String(key.dropFirst(removedPrefix.count)))
    }
}

/// The remotes a vault knows (sealed in `remotes.vlt` in the vault folder, 0600): names and URLs only;
/// credentials come from the AWS variables each time.
public typealias RemoteList = NamedList<RemoteEntry>

/// A remote of ``RemoteList``: a name and the `s3://BUCKET/PREFIX` URL of the store.
public struct RemoteEntry: NamedListEntry {
    /// The list's JSON key.
    public static let listKey = "remotes"
    /// What the list is called in messages.
    public static let kind = "remote"
    /// The remote's short name.
    public var name: String
    /// The store's URL, `s3://BUCKET/PREFIX`.
    public var url: String

    /// A remote `name` at `url`.
    public init(name: String, url: String) {
        self.name = name
        self.url = url
    }
}

extension NamedList where Entry == RemoteEntry {
    /// A remote of the list.
    public typealias Remote = RemoteEntry

    /// The remotes, in the order they were named.
    public var remotes: [RemoteEntry] {
        get { entries }
        set { entries = newValue }
    }

    /// The sealed list (a sealed state file, purpose remote list, role `remotes.vlt`): the
    /// stores pushes, pulls and direct reads go to, so nobody without the password can
    /// redirect them.
    package static func path(_ store: VaultStore) -> String { store.path(.remotes) }
    /// Where versions before sealed state kept the list, as plain JSON (moved into the sealed
    /// list when the vault's format is upgraded; refused after that).
    static func legacyPath(_ store: VaultStore) -> String { store.path(.legacyRemotes) }
    package static var role: String { "remotes.vlt" }

    /// The vault's remotes (none when it has no list).
    /// - Throws: ``VaultError/Code/vaultDamaged`` for a list that does not open (edited, swapped,
    ///   from another vault or sealed under a retired key), or an unsealed `remotes.json`.
    public static func load(_ vault: Vault) throws -> RemoteList {
        let path = path(vault.store)
        guard FileSystem.kind(of: path) != .missing else {
            if FileSystem.kind(of: legacyPath(vault.store)) != .missing {
                throw VaultError(
                    .vaultDamaged,
                    """
                    \(legacyPath(vault.store)) is an unsealed remote list (written by an earlier version of \
                    vault, or by someone else): it is not trusted
                    """,
                    remedy: .addRemotesAgain)
            }
            return RemoteList()
        }
        return try openSealed(vault, path: path, purpose: .remotes, role: role, damaged: .addRemotesAgain)
    }

    /// Writes the list crash-safely, sealed.
    public func save(_ vault: Vault) throws {
        try saveSealed(vault, to: Self.path(vault.store), purpose: .remotes, role: Self.role)
    }

    /// A store a command named: the remote's name (nil for a URL given as it is) and where it is.
    public struct Resolved: Sendable {
        /// The remote's name, or nil for an `s3://` URL given as it is.
        public var name: String?
        /// Where the store is.
        public var location: RemoteLocation
    }

    /// The location `nameOrURL` names: an `s3://` URL as it is, else a remote's name; with
    /// nil, the vault's only remote.
    public func resolve(_ nameOrURL: String?) throws -> Resolved {
        if let n = nameOrURL, RemoteLocation.isURL(n) {
            return Resolved(name: nil, location: try RemoteLocation(url: n))
        }
        if let n = nameOrURL {
            guard let r = remotes.first(where: { $0.name == n }) else {
                guard remotes.isEmpty else {
                    throw VaultError(
                        .notFound, "no remote named '\(n)'",
                        hint: "known: \(remotes.map(\.name).joined(separator: ", "))")
                }
                throw VaultError(.notFound, "no remote named '\(n)'", remedy: .addRemote)
            }
            return Resolved(name: r.name, location: try RemoteLocation(url: r.url))
        }
        switch remotes.count {
        case 0: throw VaultError(.usage, "this vault has no remote", remedy: .addRemote)
        case 1: return Resolved(name: remotes[0].name, location: try RemoteLocation(url: remotes[0].url))
        default:
            throw VaultError(
                .usage,
                "this vault has \(remotes.count) remotes; name one (\(remotes.map(\.name).joined(separator: ", ")))")
        }
    }
}
