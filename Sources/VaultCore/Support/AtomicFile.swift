import SystemPackage

/// A file written under a temporary name beside its destination and committed by a rename:
/// the one way vault writes a file (objects, the index, vault.json, journals, manifests,
/// batch payloads, documents read out to files).
///
/// The temporary name is `.vault-tmp-<pid>-<random>`. The file is registered with
/// ``Interrupts`` as it is created (an interrupt removes it), held under an `flock` while it is
/// written, and removed when the object goes away uncommitted. ``sweep(_:)`` removes the ones a
/// killed process left behind. Errors name the destination, not the temporary name.
package final class AtomicFile {
    /// The prefix of every temporary file vault creates.
    package static let temporaryPrefix = ".vault-tmp-"

    /// The open temporary file; errors from it name the destination.
    package let file: OpenFile
    /// Where the file goes on ``commit(replace:sync:)``.
    package let destination: String
    /// The temporary file's path.
    package let temporaryPath: String
    private let directory: String
    private var token: Interrupts.Token?

    /// Creates the temporary file (with `permissions`) in `destination`'s directory, or in
    /// `staging` (a folder on the same file system) when given: so that writing it does not
    /// change the destination folder until the commit (the vault's `objects/`, whose stamp the
    /// index keeps).
    package init(
        destination: String, staging: String? = nil, permissions: FilePermissions = .ownerReadWrite,
        random: any RandomSource = SystemRandom()
    ) throws {
        self.destination = destination
        directory = FileSystem.directory(of: destination)
        let temporaryPath =
            "\(staging ?? directory)/\(Self.temporaryPrefix)\(Platform.processID)-\(Hex.encode(random.bytes(8)))"
        self.temporaryPath = temporaryPath
        let (token, made) = try Interrupts.create(temporaryPath) {
            try OpenFile.createExclusive(temporaryPath, permissions: permissions, name: destination)
        }
        file = made
        do {
            _ = try file.lockExclusive()
        } catch {
            try? Platform.unlink(temporaryPath)
            Interrupts.unregister(token)
            throw error
        }
        self.token = token
    }

    deinit { discard() }

    /// Puts the file in place. With `sync`, the data is flushed first and the directory after,
    /// so the file survives a power cut once this returns.
    /// - Parameter replace: replace an existing destination; otherwise fail with
    ///   ``VaultError/Code/alreadyExists`` and keep it.
    package func commit(replace: Bool, sync: Bool = true) throws {
        guard let token else { preconditionFailure("internal error: \(destination) committed twice") }
        if sync { try file.sync() }
        if replace {
            try FileSystem.rename(temporaryPath, to: destination)
        } else {
            try FileSystem.link(temporaryPath, to: destination)
            try FileSystem.remove(temporaryPath)
        }
        Interrupts.unregister(token)
        self.token = nil
        file.close()
        if sync { try FileSystem.syncDirectory(directory) }
    }

    /// Removes the temporary file (nothing happens if it was committed).
    package func discard() {
        guard let token else { return }
        try? Platform.unlink(temporaryPath)
        Interrupts.unregister(token)
        self.token = nil
        file.close()
    }

    /// Writes `bytes` to `path` crash-safely, replacing what is there.
    package static func write(
        _ bytes: [UInt8], to path: String, permissions: FilePermissions = .ownerReadWrite,
        random: any RandomSource = SystemRandom()
    ) throws {
        let f = try AtomicFile(destination: path, permissions: permissions, random: random)
        try f.file.write(bytes)
        try f.commit(replace: true)
    }

    /// How old an unlocked temporary file of a live process must be before it counts as left over.
    static let abandonedAfter = 60

    /// Removes temporary files in `directory` that a killed writer left behind: those whose
    /// `flock` can be taken and whose process is gone (or that are older than a minute, in case
    /// its pid was reused). Files of this process and of running writers are left alone.
    package static func sweep(_ directory: String) {
        guard let names = try? FileSystem.list(directory) else { return }
        for name in names where name.hasPrefix(temporaryPrefix) {
            let path = "\(directory)/\(name)"
            // Only names vault makes, `.vault-tmp-<pid>-<random>`: a file of someone else's that
            // happens to start so is not ours to remove.
            let parts = name.dropFirst(temporaryPrefix.count).split(separator: "-", maxSplits: 1)
            guard parts.count == 2,
                  let pid = Int32(parts[0]),
                  !parts[1].isEmpty,
                  parts[1].allSatisfy(\.isHexDigit) else { continue }
            if pid == Platform.processID { continue }
            // Read-only, never O_CREAT: a file just renamed away stays away. Non-blocking: not a FIFO's reader.
            guard
                let fd = try? SystemPackage.FileDescriptor.open(
                    FilePath(path), .readOnly, options: [.noFollow, .nonBlocking, .closeOnExec])
            else { continue }
            defer { try? fd.close() }
            // Locked: a writer is at work.
            guard (try? Platform.lock(fd, wait: false)) == true,
                  let st = try? fd.stat(),
                  st.type == .regular else {
                continue
            }
            let gone = !Platform.processExists(pid)
            if gone || Platform.now - Platform.modificationTime(st) > abandonedAfter { try? Platform.unlink(path) }
        }
    }
}
