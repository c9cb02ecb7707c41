import CVaultSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX file descriptor that closes itself, with `VaultError`s that name the path.
///
/// Hand-written rather than Foundation's `FileHandle` because the vault needs `pread`/`pwrite`,
/// `fsync` on directories, `O_EXCL|O_NOFOLLOW` creation with an exact mode, `flock`, and
/// errors that keep `errno` (ENOSPC, EFBIG) for a clear message.
public final class FileDescriptor: @unchecked Sendable {
    // @unchecked: a descriptor is used by one thread at a time (the stream writer hands it to
    // its background queue and waits for that queue before touching it again).
    /// The raw descriptor.
    public let fd: Int32
    /// The path it was opened with, for messages.
    public let path: String
    private var closed = false

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Opens an existing file for reading. Refuses directories.
    public static func openForReading(_ path: String) throws -> FileDescriptor {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.posix("cannot open", path) }
        let f = FileDescriptor(fd: fd, path: path)
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            throw VaultError(.usage, "\(path) is a directory", hint: "use -r to add the files inside it")
        }
        return f
    }

    /// Creates a new file with `mode`; fails if it exists. Errors name the file `name`
    /// (default: `path`), so a temporary file's errors can name its destination.
    public static func createExclusive(_ path: String, mode: mode_t = 0o600, name: String? = nil) throws -> FileDescriptor {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw VaultError.posix("cannot create", name ?? path) }
        return FileDescriptor(fd: fd, path: name ?? path)
    }

    /// Opens (creating if needed) a file for reading and writing.
    public static func openOrCreate(_ path: String, mode: mode_t = 0o600) throws -> FileDescriptor {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw VaultError.posix("cannot open", path) }
        return FileDescriptor(fd: fd, path: path)
    }

    /// Wraps an inherited descriptor such as standard input; it is not closed.
    public static func standard(_ fd: Int32, name: String) -> FileDescriptor {
        let f = FileDescriptor(fd: fd, path: name)
        f.closed = true
        return f
    }

    deinit { if !closed { Glibc.close(fd) } }

    /// Closes the descriptor now.
    public func close() {
        if !closed { Glibc.close(fd); closed = true }
    }

    /// Reads at most `buffer.count` bytes; 0 at end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw VaultError.posix("cannot read", path) }
        }
    }

    /// Reads up to `count` bytes as an array (for headers and small files).
    public func read(upTo count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let n = try out.withUnsafeMutableBytes { (b) in try readFully(into: b) }
        out.removeLast(count - n)
        return out
    }

    /// Writes every byte, retrying short writes.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw VaultError.posix("cannot write", path)
            }
            done += n
        }
    }

    /// Writes an array.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b) in try write(b) }
    }

    /// Writes every byte at `offset` without moving the file position.
    public func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { (b) in
            var done = 0
            while done < b.count {
                let n = pwrite(fd, b.baseAddress! + done, b.count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw VaultError.posix("cannot write", path)
                }
                done += n
            }
        }
    }

    /// Moves the file position.
    public func seek(to offset: UInt64) throws {
        guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else { throw VaultError.posix("cannot seek in", path) }
    }

    /// Reserves disk space for `length` bytes without changing the file's size, so a full disk
    /// is reported before any work and the file system allocates the extents once (on ext4
    /// that also skips delayed-allocation bookkeeping on every write). File systems that cannot
    /// reserve space are left to allocate as they write.
    public func reserve(_ length: UInt64) throws {
        guard length > 0 else { return }
        while vault_reserve(fd, Int64(length)) != 0 {
            switch errno {
            case EINTR: continue
            case EOPNOTSUPP, ENOSYS, EINVAL: return
            default: throw VaultError.posix("cannot reserve \(length) bytes for", path)
            }
        }
    }

    /// Cuts the file to `size` bytes.
    public func truncate(to size: UInt64) throws {
        guard ftruncate(fd, off_t(size)) == 0 else { throw VaultError.posix("cannot truncate", path) }
    }

    /// Flushes the file's data and metadata to the device.
    public func sync() throws {
        guard fsync(fd) == 0 else { throw VaultError.posix("cannot sync", path) }
    }

    /// The file's size in bytes.
    public func size() throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw VaultError.posix("cannot stat", path) }
        return UInt64(st.st_size)
    }

    /// True if this is a regular file (not a pipe or terminal).
    public var isRegularFile: Bool {
        var st = stat()
        return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Takes an exclusive `flock`, waiting for it when `wait` is true. Returns false if it is
    /// held elsewhere and `wait` is false.
    public func lockExclusive(wait: Bool = true) throws -> Bool {
        while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw VaultError.posix("cannot lock", path)
        }
        return true
    }

    /// Releases a `flock`.
    public func unlock() { _ = flock(fd, LOCK_UN) }
}
