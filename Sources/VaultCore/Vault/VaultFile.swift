import SystemPackage

/// The files of a vault folder, in one table (as restic's `layout_default.go` names a
/// repository's): each one's name in the folder, its mode, and for a sealed state file its
/// purpose (``SealedState``; its role is its name, which is part of what is sealed, so a file
/// opens only as the file it was written as).
///
/// Files named by an id (`objects/<id>.vlt`, `uploads/<job>.journal`) are found through their
/// folder's entry: ``VaultStore/objectPath(_:)``, and VaultUpload's journal paths.
package enum VaultFile: CaseIterable, Sendable {
    /// `vault.json`: the format, the vault id, the Argon2id parameters and salt, the wrapped
    /// vault key and the keyring of earlier key epochs. Its presence makes the folder a vault.
    case config
    /// `objects/`: one envelope per document (`<id>.vlt`), the truth about what the vault holds.
    case objects
    /// `staging/`: objects being written, renamed into `objects/` on commit.
    case staging
    /// `index.db`: the index, a projection of the history and the objects (sealed rows).
    case index
    /// `index.vlt`: the index of the versions before `index.db`, read once and removed.
    case legacyIndex
    /// `lock`: writers hold an exclusive `flock` on it.
    case lock
    /// `session.lock`: every process with the vault unlocked holds a shared `flock` on it; a
    /// password change takes it exclusively (``SessionLock``).
    case sessionLock
    /// `log.vlt`: the history, sealed and chained records.
    case log
    /// `log.head` and `log.anchor`: two sealed copies of the history's tail.
    case logHead, logAnchor
    /// `remove.pending`: the documents of a removal in progress (sealed).
    case pendingRemoval
    /// `passwd.journal`: a password change in progress (public bytes and a checksum).
    case passwordJournal
    /// `remotes.vlt`: the named remote stores (sealed).
    case remotes
    /// `remotes.json`: the remote list of `vault/1`, sealed as `remotes.vlt` by the upgrade.
    case legacyRemotes
    /// `destinations.vlt`: the named destinations (sealed).
    case destinations
    /// `uploads/`: the upload journals (`<job>.journal`, sealed) and their locks.
    case uploads
    /// `intake.pending`: the documents of a received batch being committed (sealed): a batch
    /// a crash interrupted is taken out again by the next command, so none is ever half kept.
    case pendingIntake
    /// `receiver.vlt`: a receiver's signing key (sealed), for `vault receive`.
    case receiver
    /// `receiver.lock`: the receiver serving this vault holds an exclusive `flock` on it (one
    /// receiver per vault: two would each take a resent batch).
    case receiverLock

    /// The name in the vault folder.
    package var name: String {
        switch self {
        case .config: "vault.json"
        case .objects: "objects"
        case .staging: "staging"
        case .index: "index.db"
        case .legacyIndex: "index.vlt"
        case .lock: "lock"
        case .sessionLock: "session.lock"
        case .log: "log.vlt"
        case .logHead: "log.head"
        case .logAnchor: "log.anchor"
        case .pendingRemoval: "remove.pending"
        case .passwordJournal: "passwd.journal"
        case .remotes: "remotes.vlt"
        case .legacyRemotes: "remotes.json"
        case .destinations: "destinations.vlt"
        case .uploads: "uploads"
        case .pendingIntake: "intake.pending"
        case .receiver: "receiver.vlt"
        case .receiverLock: "receiver.lock"
        }
    }

    /// True for a folder.
    package var isFolder: Bool { self == .objects || self == .staging || self == .uploads }

    /// Its mode: folders 0700, files 0600.
    package var permissions: FilePermissions { isFolder ? .ownerReadWriteExecute : .ownerReadWrite }

    /// The purpose of a sealed state file of this name (its role is its name); nil for a file
    /// that is not one (the envelopes, the log, the index database, `vault.json`, ...).
    package var sealedPurpose: SealedState.Purpose? {
        switch self {
        case .logHead: .logHead
        case .logAnchor: .logAnchor
        case .pendingRemoval: .pendingRemoval
        case .remotes: .remotes
        case .destinations: .destinations
        case .legacyIndex: .index
        case .pendingIntake: .pendingIntake
        case .receiver: .receiver
        default: nil
        }
    }
}

extension VaultStore {
    /// Where `file` is in this vault.
    package func path(_ file: VaultFile) -> String { root + "/" + file.name }
}
