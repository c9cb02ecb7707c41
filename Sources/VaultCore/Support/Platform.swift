import CVaultSystem
import Dispatch
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every operating-system call of VaultCore that swift-system does not cover, in one place.
///
/// The rest of the module names no platform: files go through `SystemPackage.FileDescriptor`,
/// paths through `FilePath`, errors through `Errno`, metadata through `Stat`. What is here is
/// either plain POSIX that swift-system 1.8 lacks (rename, link, mkdir, directory listing,
/// flock), or differs between Linux and Apple platforms, each with a portable fallback:
/// durability (`fsync` here, `F_FULLFSYNC` on Darwin, where `fsync` stops at the disk's cache),
/// space reservation and early writeback (Linux `fallocate` and `sync_file_range`; elsewhere
/// the file system allocates and writes back as it goes), and core dumps (`PR_SET_DUMPABLE` on
/// Linux; `RLIMIT_CORE` everywhere). A test fails if `Glibc`, `Darwin` or a Linux-only call
/// appears outside the platform files.
enum Platform {
    private static var lastError: Errno { Errno(rawValue: errno) }

    // MARK: Durability and space

    /// Flushes a file's data and metadata (or a directory's entries) to stable storage.
    static func sync(_ fd: SystemPackage.FileDescriptor) throws(Errno) {
        #if canImport(Darwin)
        if fcntl(fd.rawValue, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd.rawValue) == 0 else { throw lastError }
    }

    /// Reserves `length` bytes on disk without changing the file's size. Returns false where
    /// that is not supported (then the file system allocates as it writes).
    static func reserve(_ fd: SystemPackage.FileDescriptor, _ length: Int64) throws(Errno) -> Bool {
        while vault_reserve(fd.rawValue, length) != 0 {
            switch lastError {
            case .interrupted: continue
            case .notSupported, .noFunction, .invalidArgument: return false
            case let e: throw e
            }
        }
        return true
    }

    /// Where `needle` first starts in `haystack` (memmem: vectorized, linear), or nil (also for
    /// an empty needle).
    static func find(_ needle: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let base = haystack.baseAddress, let n = needle.baseAddress, needle.count > 0,
            haystack.count >= needle.count
        else { return nil }
        return vault_memmem(base, haystack.count, n, needle.count).map { base.distance(to: $0) }
    }

    /// Starts writeback of a range without waiting (Linux); nothing elsewhere.
    static func startWriteback(_ fd: SystemPackage.FileDescriptor, offset: Int64, length: Int64) {
        _ = vault_start_writeback(fd.rawValue, offset, length)
    }

    /// Waits for a range's writeback to finish (Linux); nothing elsewhere.
    static func waitWriteback(_ fd: SystemPackage.FileDescriptor, offset: Int64, length: Int64) {
        _ = vault_wait_writeback(fd.rawValue, offset, length)
    }

    /// Grows a pipe's buffer to up to `size` bytes (Linux); nothing elsewhere or for non-pipes.
    /// With the default 64 KiB, streaming a payload to a pipe costs a context switch per 64 KiB.
    @discardableResult
    static func growPipe(_ fd: SystemPackage.FileDescriptor, to size: Int) -> Int? {
        let r = vault_grow_pipe(fd.rawValue, Int32(size))
        return r > 0 ? Int(r) : nil
    }

    /// Advises sequential reading of the whole file (a larger kernel read-ahead); best effort.
    static func adviseSequential(_ fd: SystemPackage.FileDescriptor) {
        _ = vault_advise_sequential(fd.rawValue)
    }

    /// Asks for `length` bytes from `offset` to be read into the page cache now; best effort.
    static func adviseWillNeed(_ fd: SystemPackage.FileDescriptor, offset: UInt64, length: UInt64) {
        _ = vault_advise_willneed(fd.rawValue, Int64(clamping: offset), Int64(clamping: length))
    }

    // MARK: Locks

    /// Takes an exclusive `flock`; false when `wait` is false and another holder has it.
    static func lock(_ fd: SystemPackage.FileDescriptor, wait: Bool, shared: Bool = false) throws(Errno) -> Bool {
        while flock(fd.rawValue, (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)) != 0 {
            switch lastError {
            case .interrupted: continue
            case .wouldBlock: return false
            case let e: throw e
            }
        }
        return true
    }

    /// Releases a `flock`.
    static func unlock(_ fd: SystemPackage.FileDescriptor) {
        _ = flock(fd.rawValue, LOCK_UN)
    }

    // MARK: Names in directories

    /// Atomically replaces `to` with `from`.
    static func rename(_ from: String, to: String) throws(Errno) {
        guard systemRename(from, to) == 0 else { throw lastError }
    }

    /// Gives the file `from` the additional name `to`; fails if `to` exists.
    static func link(_ from: String, to: String) throws(Errno) {
        guard systemLink(from, to) == 0 else { throw lastError }
    }

    /// Removes a name; a missing one is not an error.
    static func unlink(_ path: String) throws(Errno) {
        guard systemUnlink(path) == 0 || errno == ENOENT else { throw lastError }
    }

    /// Removes an empty directory (a folder with anything in it stays: ENOTEMPTY).
    static func removeEmptyDirectory(_ path: String) throws(Errno) {
        guard rmdir(path) == 0 || errno == ENOENT else { throw lastError }
    }

    /// Creates a directory with exactly `permissions` (whatever the umask).
    static func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) {
        guard mkdir(path, permissions.rawValue) == 0 else { throw lastError }
        _ = chmod(path, permissions.rawValue)
    }

    /// Sets a path's permission bits.
    static func setPermissions(_ path: String, _ permissions: FilePermissions) throws(Errno) {
        guard chmod(path, permissions.rawValue) == 0 else { throw lastError }
    }

    /// The first `limit` names in a directory (in the directory's own order) that end with
    /// `suffix`: a constant cost however many entries it holds.
    static func firstNames(_ path: String, suffix: String, limit: Int) throws(Errno) -> [String] {
        guard let dir = opendir(path) else { throw lastError }
        defer { closedir(dir) }
        var names: [String] = []
        while names.count < limit, let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if let name = String(validating: bytes, as: UTF8.self), name.hasSuffix(suffix) { names.append(name) }
        }
        return names
    }

    /// The names in a directory, without `.` and `..`.
    static func list(_ path: String) throws(Errno) -> [String] {
        try listChecked(path).compactMap(\.name)
    }

    /// Every entry of the folder `path`: its name when it is valid UTF-8 (else nil), and a
    /// printable rendering of its bytes (invalid bytes as `\xNN`) to report it by.
    static func listChecked(_ path: String) throws(Errno) -> [(name: String?, shown: String)] {
        guard let dir = opendir(path) else { throw lastError }
        defer { closedir(dir) }
        var names: [(String?, String)] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            if let name = String(validating: bytes, as: UTF8.self) {
                names.append((name, name))
            } else {
                names.append(
                    (
                        nil,
                        bytes.map { $0 < 0x80 ? String(UnicodeScalar($0)) : "\\x" + Hex.digits($0, uppercase: true) }
                            .joined()
                    ))
            }
        }
        return names
    }

    /// True when this process may write into `path`.
    static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }

    // MARK: Memory

    /// Gives the heap's free pages back to the system (glibc `malloc_trim`, in the C shim because
    /// Swift's Glibc module does not import it; nothing elsewhere).
    /// Between documents of one command: glibc serves the per-document megabyte buffers from the
    /// heap once its dynamic mmap threshold has risen, and their freed pages would otherwise stay
    /// resident and fragment, so peak memory would grow with the number of documents.
    static func releaseFreeMemory() {
        _ = vault_release_free_memory()
    }

    /// Serves allocations of `threshold` bytes or more by their own mappings (glibc
    /// `M_MMAP_THRESHOLD`; nothing elsewhere).
    static func mapLargeAllocations(atLeast threshold: Int) {
        _ = vault_map_large_allocations(threshold)
    }

    // MARK: Processes

    /// This process's id.
    static var processID: Int32 { getpid() }

    /// The machine's host name (empty if it cannot be read).
    static var hostName: String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "" }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True unless process `pid` is known not to exist.
    static func processExists(_ pid: Int32) -> Bool { kill(pid, 0) == 0 || errno != ESRCH }

    /// A file's modification time, in seconds since 1970 (`st_mtim` on Linux, `st_mtimespec` on Darwin).
    static func modificationTime(_ st: Stat) -> Int {
        #if canImport(Darwin)
        Int(st.rawValue.st_mtimespec.tv_sec)
        #else
        Int(st.rawValue.st_mtim.tv_sec)
        #endif
    }

    /// A directory's identity and times as one string — inode, modification and change time to
    /// the nanosecond — or nil when it cannot be read. Creating, renaming or removing an entry
    /// changes both times; the change time cannot be set back from user space.
    static func statTimes(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        #if canImport(Darwin)
        let (m, c) = (st.st_mtimespec, st.st_ctimespec)
        #else
        let (m, c) = (st.st_mtim, st.st_ctim)
        #endif
        return "\(st.st_dev):\(st.st_ino):\(m.tv_sec).\(m.tv_nsec):\(c.tv_sec).\(c.tv_nsec)"
    }

    /// Bytes an unprivileged process may still write on the file system holding `path`.
    static func freeBytes(_ path: String) -> UInt64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return UInt64(s.f_bavail) &* UInt64(s.f_frsize)
    }

    /// Seconds since 1970, from the system clock.
    static var now: Int { time(nil) }

    /// Runs `body` on a new detached thread: for work that blocks for the process's life (the
    /// interrupt watcher) or for seconds (an Argon2id unlock), which must not hold one of
    /// Dispatch's pool threads. By hand because Foundation's `Thread`, which did this, would
    /// link Foundation's classes and ICU into the binary. Should the thread not start (no
    /// memory), `body` runs on Dispatch's pool instead.
    static func detachThread(_ body: @escaping @Sendable () -> Void) {
        final class Body {
            let run: @Sendable () -> Void
            init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        }
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        #if os(Linux)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let started = pthread_create(&thread, &attributes, { argument in
            #if os(Linux)
            let box = argument!
            #else
            let box = argument
            #endif
            Unmanaged<Body>.fromOpaque(box).takeRetainedValue().run()
            return nil
        }, box)
        if started != 0 {
            Unmanaged<Body>.fromOpaque(box).release()
            DispatchQueue.global().async(execute: body)
        }
    }

    /// Blocks the calling thread for `seconds` (none when not positive).
    static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var wait = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&wait, &left) != 0 && errno == EINTR { wait = left }
    }

    /// The 4 bytes of an IPv4 address in dotted-quad form, or the 16 of an IPv6 address, as
    /// `inet_pton` reads them; nil for anything else (a host name).
    static func internetAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Installs SIGINT, SIGTERM and SIGHUP handlers that write the signal number to `writeEnd`.
    static func installInterruptHandlers(writeEnd: SystemPackage.FileDescriptor) throws(Errno) {
        guard vault_install_interrupt_handlers(writeEnd.rawValue) == 0 else { throw lastError }
    }

    /// Marks `fd` close-on-exec: a program vault starts (a password manager's command) must not
    /// inherit it.
    static func closeOnExec(_ fd: SystemPackage.FileDescriptor) {
        _ = fcntl(fd.rawValue, F_SETFD, fcntl(fd.rawValue, F_GETFD) | FD_CLOEXEC)
    }

    /// No core file, and (Linux) not dumpable or traceable by the same user.
    static func disableCoreDumps() throws(Errno) {
        guard vault_disable_core_dumps() == 0 else { throw lastError }
    }
}

// The C library's functions under names that do not collide with Platform's own.
private func systemRename(_ a: String, _ b: String) -> Int32 { rename(a, b) }
private func systemLink(_ a: String, _ b: String) -> Int32 { link(a, b) }
private func systemUnlink(_ a: String) -> Int32 { unlink(a) }

/// An IP address written as text (for modules without a platform file of their own).
package enum InternetAddress {
    /// The address's 4 (IPv4, dotted quad) or 16 (IPv6) bytes in network order; nil for a name.
    package static func bytes(_ text: String) -> [UInt8]? { Platform.internetAddress(text) }
}

/// A mutex the thread holding it may take again (the index's holder: a repair reads the index
/// it is repairing). By hand because neither the standard library nor swift-nio has one, and
/// Foundation's `NSRecursiveLock` would link Foundation's classes and ICU into the binary.
final class RecursiveLock: @unchecked Sendable {
    // @unchecked: the mutex is what makes it safe to share.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}

/// A thread of its own for work that blocks (``Platform/detachThread(_:)``), for the other
/// modules: a receiver's group commit waits for the disk and for the writer lock.
package enum DetachedThread {
    /// Runs `body` on a new detached thread (Dispatch's pool when none can start).
    package static func run(_ body: @escaping @Sendable () -> Void) { Platform.detachThread(body) }
}
