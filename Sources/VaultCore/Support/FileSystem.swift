#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths, directories, renames and links; crash-safe writes go through ``AtomicFile``.
public enum FileSystem {
    /// What is at a path.
    public enum Kind: Sendable { case missing, file, directory, other }

    /// What is at `path` (following symbolic links).
    public static func kind(of path: String) -> Kind {
        var st = stat()
        guard stat(path, &st) == 0 else { return .missing }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// Creates a directory with `mode` (exactly, regardless of umask).
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
        guard mkdir(path, mode) == 0 else { throw VaultError.posix("cannot create directory", path) }
        _ = chmod(path, mode)
    }

    /// Flushes a directory's entries (after a rename or unlink in it).
    public static func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.posix("cannot open directory", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw VaultError.posix("cannot sync directory", path) }
    }

    /// Atomically replaces `to` with `from`.
    public static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw VaultError.posix("cannot rename to", to) }
    }

    /// Links `from` to the new name `to`, failing if `to` exists (an atomic no-overwrite rename
    /// when followed by unlinking `from`).
    public static func link(_ from: String, to: String) throws {
        guard Glibc.link(from, to) == 0 else {
            if errno == EEXIST { throw VaultError(.alreadyExists, "\(to) already exists") }
            throw VaultError.posix("cannot create", to)
        }
    }

    /// Removes a file; a missing file is not an error.
    public static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw VaultError.posix("cannot remove", path) }
    }

    /// The names in a directory (without `.` and `..`).
    public static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw VaultError.posix("cannot list", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The directory part of a path ("." for a bare name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The modification time (seconds) of a `stat` result.
    public static func modificationTime(_ st: stat) -> time_t { st.st_mtim.tv_sec }

    /// Reads a whole (small) file.
    public static func readFile(_ path: String, limit: Int = 64 << 20) throws -> [UInt8] {
        let f = try FileDescriptor.openForReading(path)
        let size = try f.size()
        guard size <= UInt64(limit) else { throw VaultError(.vaultDamaged, "\(path) is unexpectedly large (\(size) bytes)") }
        return try f.read(upTo: Int(size) + 1)
    }
}
