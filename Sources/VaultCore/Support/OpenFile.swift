import SystemPackage

/// A file descriptor (swift-system's) that closes itself, with `VaultError`s that name the path.
///
/// A thin layer rather than Foundation's `FileHandle`, because the vault needs positioned
/// writes, `fsync` on directories, `O_EXCL|O_NOFOLLOW` creation with exact permissions, `flock`,
/// space reservation, and errors that keep their `Errno` (ENOSPC, EFBIG) for a clear message.
/// The calls swift-system lacks are in ``Platform``.
package final class OpenFile: @unchecked Sendable {
    // @unchecked: a descriptor is used by one thread at a time (the stream writer hands it to
    // its background queue and waits for that queue before touching it again).
    /// The swift-system descriptor.
    package let descriptor: SystemPackage.FileDescriptor
    /// The path it was opened with, for messages.
    package let path: String
    private var closed = false

    private init(_ descriptor: SystemPackage.FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Opens an existing file for reading. Refuses directories.
    /// Advises the kernel that this file will be read once, front to back (best effort).
    package func adviseSequential() { Platform.adviseSequential(descriptor) }

    /// Asks the kernel to start reading `length` bytes from `offset` now (best effort).
    package func adviseWillNeed(offset: UInt64, length: UInt64) {
        Platform.adviseWillNeed(descriptor, offset: offset, length: length)
    }

    /// When this is a pipe, grows its buffer to up to 1 MiB (Linux; the unprivileged maximum
    /// by default), so a fast writer and reader do not switch every 64 KiB.
    @discardableResult
    package func growPipeBuffer() -> Int? { Platform.growPipe(descriptor, to: 1 << 20) }

    package static func openForReading(_ path: String) throws -> OpenFile {
        let f: OpenFile
        do {
            f = OpenFile(try .open(FilePath(path), .readOnly, options: [.closeOnExec]), path: path)
        } catch {
            throw VaultError.posix("cannot open", path, error)
        }
        if (try? f.descriptor.stat())?.type == .directory {
            throw VaultError(.usage, "\(path) is a directory", remedy: .addRecursively)
        }
        return f
    }

    /// Opens a file of the vault folder (an object, the log, a state file) for reading the way
    /// an attacker who can write to the folder cannot turn against vault: without following a
    /// symbolic link (the user named the vault, not what a link in it points to), without
    /// blocking (a FIFO put in a file's place would hang the open), and only if the descriptor
    /// is of a regular file (`fstat` on what was opened, not `stat` on the path).
    /// - Throws: ``VaultError/Code/vaultDamaged`` for a link, a FIFO, a device or a directory.
    package static func openStored(_ path: String) throws -> OpenFile {
        try openRegular(path, refusal: .vaultDamaged, why: "not a file vault wrote")
    }

    /// Opens `path` for reading only if it is a regular file, without following a symbolic link
    /// and without blocking: what ``openStored(_:)`` does, for files vault found rather than was
    /// given (the files in a folder an add walks), refused with `refusal` naming `why`.
    package static func openRegular(_ path: String, refusal: VaultError.Code, why: String) throws -> OpenFile {
        let f: OpenFile
        do {
            f = OpenFile(
                try .open(FilePath(path), .readOnly, options: [.closeOnExec, .noFollow, .nonBlocking]), path: path)
        } catch Errno.tooManySymbolicLinkLevels {
            throw VaultError(refusal, "\(path) is a symbolic link, \(why): it is not followed")
        } catch {
            throw VaultError.posix("cannot open", path, error)
        }
        guard let kind = try? f.descriptor.stat().type,
              kind == .regular else {
            f.close()
            throw VaultError(
                refusal, "\(path) is not a regular file (a pipe, a device or a folder), \(why): it is not read")
        }
        return f
    }

    /// Creates a new file with `permissions`; fails if it exists. Errors name the file `name`
    /// (default: `path`), so a temporary file's errors can name its destination.
    package static func createExclusive(
        _ path: String, permissions: FilePermissions = .ownerReadWrite,
        name: String? = nil
    ) throws -> OpenFile {
        do {
            return OpenFile(
                try .open(
                    FilePath(path), .readWrite, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                    permissions: permissions), path: name ?? path)
        } catch {
            throw VaultError.posix("cannot create", name ?? path, error)
        }
    }

    /// Opens an existing file for reading and writing in place (never creates one).
    package static func openExisting(_ path: String) throws -> OpenFile {
        do {
            return OpenFile(try .open(FilePath(path), .readWrite, options: [.noFollow, .closeOnExec]), path: path)
        } catch {
            throw VaultError.posix("cannot open", path, error)
        }
    }

    /// Opens (creating if needed) a file for reading and writing.
    package static func openOrCreate(_ path: String, permissions: FilePermissions = .ownerReadWrite) throws -> OpenFile
    {
        do {
            return OpenFile(
                try .open(
                    FilePath(path), .readWrite, options: [.create, .noFollow, .closeOnExec],
                    permissions: permissions), path: path)
        } catch {
            throw VaultError.posix("cannot open", path, error)
        }
    }

    /// Wraps an inherited descriptor such as standard input (0); it is not closed.
    package static func standard(_ fd: Int32, name: String) -> OpenFile {
        let f = OpenFile(SystemPackage.FileDescriptor(rawValue: fd), path: name)
        f.closed = true
        return f
    }

    deinit { if !closed { try? descriptor.close() } }

    /// Closes the descriptor now.
    package func close() {
        if !closed { try? descriptor.close(); closed = true }
    }

    /// Reads at most `buffer.count` bytes; 0 at end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        do { return try descriptor.read(into: buffer) } catch { throw VaultError.posix("cannot read", path, error) }
    }

    /// Reads up to `count` bytes as an array (for headers and small files).
    package func read(upTo count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let n = try out.withUnsafeMutableBytes { (b) in try readFully(into: b) }
        out.removeLast(count - n)
        return out
    }

    /// Reads `count` bytes at `offset` without moving the file position (fewer at end of file).
    package func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n: Int
            do {
                n = try out.withUnsafeMutableBytes { b in
                    try descriptor.read(
                        fromAbsoluteOffset: Int64(offset) + Int64(done),
                        into: UnsafeMutableRawBufferPointer(rebasing: b[done...]))
                }
            } catch { throw VaultError.posix("cannot read", path, error) }
            if n == 0 { break }
            done += n
        }
        out.removeLast(count - done)
        return out
    }

    /// Writes every byte, retrying short writes.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        do { _ = try descriptor.writeAll(bytes) } catch { throw VaultError.posix("cannot write", path, error) }
    }

    /// Writes an array.
    package func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b) in try write(b) }
    }

    /// Writes every byte at `offset` without moving the file position.
    package func write(_ bytes: [UInt8], at offset: UInt64) throws {
        do { _ = try descriptor.writeAll(toAbsoluteOffset: Int64(offset), bytes) } catch {
            throw VaultError.posix("cannot write", path, error)
        }
    }

    /// Moves the file position.
    package func seek(to offset: UInt64) throws {
        do { _ = try descriptor.seek(offset: Int64(offset), from: .start) } catch {
            throw VaultError.posix("cannot seek in", path, error)
        }
    }

    /// Reserves disk space for `length` bytes without changing the file's size, so a full disk
    /// is reported before any work and the file system allocates the extents once (on ext4
    /// that also skips delayed-allocation bookkeeping on every write). File systems that cannot
    /// reserve space are left to allocate as they write.
    package func reserve(_ length: UInt64) throws {
        guard length > 0 else { return }
        do { _ = try Platform.reserve(descriptor, Int64(length)) } catch {
            throw VaultError.posix("cannot reserve \(length) bytes for", path, error)
        }
    }

    /// Cuts the file to `size` bytes.
    package func truncate(to size: UInt64) throws {
        do { try descriptor.resize(to: Int64(size)) } catch { throw VaultError.posix("cannot truncate", path, error) }
    }

    /// Flushes the file's data and metadata to the device.
    package func sync() throws {
        do { try Platform.sync(descriptor) } catch { throw VaultError.posix("cannot sync", path, error) }
    }

    /// The file's size in bytes.
    package func size() throws -> UInt64 {
        do { return UInt64(try descriptor.stat().size) } catch { throw VaultError.posix("cannot stat", path, error) }
    }

    /// True if this is a regular file (not a pipe or terminal).
    package var isRegularFile: Bool { (try? descriptor.stat())?.type == .regular }

    /// Takes an exclusive `flock`, waiting for it when `wait` is true. Returns false if it is
    /// held elsewhere and `wait` is false.
    package func lockExclusive(wait: Bool = true) throws -> Bool {
        do { return try Platform.lock(descriptor, wait: wait) } catch {
            throw VaultError.posix("cannot lock", path, error)
        }
    }

    /// Takes a shared `flock` (converting an exclusive one this file holds): false when `wait`
    /// is false and another holds it exclusively.
    func lockShared(wait: Bool = true) throws -> Bool {
        do { return try Platform.lock(descriptor, wait: wait, shared: true) } catch {
            throw VaultError.posix("cannot lock", path, error)
        }
    }

    /// Releases a `flock`.
    package func unlock() { Platform.unlock(descriptor) }
}
