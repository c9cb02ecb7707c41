import SystemPackage

/// Paths, directories, renames and links; crash-safe writes go through ``AtomicFile``.
package enum FileSystem {
    /// What is at a path.
    package enum Kind: Sendable { case missing, file, directory, other }

    /// What is at `path` (following symbolic links).
    package static func kind(of path: String) -> Kind { kind(of: path, following: true) }

    /// What `path` itself is when `following` is false: a symbolic link (even to nothing) is
    /// `.other`.
    package static func kind(of path: String, following: Bool) -> Kind {
        guard let st = try? FilePath(path).stat(followTargetSymlink: following) else { return .missing }
        switch st.type {
        case .regular: return .file
        case .directory: return .directory
        default: return .other
        }
    }

    /// Bytes that may still be written on the file system holding `path` (nil when it cannot
    /// be told).
    package static func freeSpace(at path: String) -> UInt64? { Platform.freeBytes(path) }

    /// Creates a directory with `permissions` (exactly, regardless of umask).
    package static func makeDirectory(_ path: String, permissions: FilePermissions = .ownerReadWriteExecute) throws {
        do { try Platform.makeDirectory(path, permissions: permissions) } catch {
            throw VaultError.posix("cannot create directory", path, error)
        }
    }

    /// Creates a directory and any missing parents (each with `permissions`); returns the
    /// folders it made, outermost first.
    @discardableResult
    package static func makeDirectories(
        _ path: String, permissions: FilePermissions = .ownerReadWriteExecute
    ) throws -> [String] {
        var missing: [String] = []
        var dir = withoutTrailingSlashes(path)
        while kind(of: dir) == .missing && !dir.isEmpty && dir != "/" && dir != "." {
            missing.insert(dir, at: 0)
            dir = directory(of: dir)
        }
        for d in missing { try makeDirectory(d, permissions: permissions) }
        return missing
    }

    /// Removes `path` if it is an empty directory; anything in it keeps it.
    package static func removeIfEmpty(_ path: String) {
        try? Platform.removeEmptyDirectory(path)
    }

    /// Sets a path's permissions.
    package static func setPermissions(_ path: String, _ permissions: FilePermissions) throws {
        do { try Platform.setPermissions(path, permissions) } catch {
            throw VaultError.posix("cannot set permissions on", path, error)
        }
    }

    /// Flushes a directory's entries (after a rename or unlink in it).
    package static func syncDirectory(_ path: String) throws {
        do {
            let fd = try SystemPackage.FileDescriptor.open(
                FilePath(path), .readOnly, options: [.directory, .closeOnExec])
            defer { try? fd.close() }
            try Platform.sync(fd)
        } catch {
            throw VaultError.posix("cannot sync directory", path, error)
        }
    }

    /// Atomically replaces `to` with `from`.
    package static func rename(_ from: String, to: String) throws {
        do { try Platform.rename(from, to: to) } catch { throw VaultError.posix("cannot rename to", to, error) }
    }

    /// Links `from` to the new name `to`, failing if `to` exists (an atomic no-overwrite rename
    /// when followed by unlinking `from`).
    package static func link(_ from: String, to: String) throws {
        do { try Platform.link(from, to: to) } catch {
            if error == .fileExists { throw VaultError(.alreadyExists, "\(to) already exists") }
            throw VaultError.posix("cannot create", to, error)
        }
    }

    /// Removes a file; a missing file is not an error.
    package static func remove(_ path: String) throws {
        do { try Platform.unlink(path) } catch { throw VaultError.posix("cannot remove", path, error) }
    }

    /// The names in a directory (without `.` and `..`).
    package static func list(_ path: String) throws -> [String] {
        do { return try Platform.list(path) } catch { throw VaultError.posix("cannot list", path, error) }
    }

    /// The entries of `path`, each with its name when that is valid UTF-8 (nil otherwise: such a
    /// file cannot be named in a vault) and a printable rendering to report it by.
    package static func listChecked(_ path: String) throws -> [(name: String?, shown: String)] {
        do { return try Platform.listChecked(path) } catch { throw VaultError.posix("cannot list", path, error) }
    }

    /// The directory part of a path ("." for a bare name).
    package static func directory(of path: String) -> String {
        let path = withoutTrailingSlashes(path)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `path` without trailing slashes (`outbox/` and `outbox//` name `outbox`; `/` stays).
    package static func withoutTrailingSlashes(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }

    /// Reads a whole (small) file.
    package static func readFile(_ path: String, limit: Int = 64 << 20) throws -> [UInt8] {
        let f = try OpenFile.openStored(path)
        let size = try f.size()
        guard size <= UInt64(limit) else {
            throw VaultError(.vaultDamaged, "\(path) is unexpectedly large (\(size) bytes)")
        }
        return try f.read(upTo: Int(size) + 1)
    }
}
