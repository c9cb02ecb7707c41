import CVaultSystem
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every operating-system call of the command-line tool that swift-system does not cover, in
/// one place: the terminal (is it one, how wide, echo off for the prompt), the environment
/// (taken out of the process at start), exiting, and signals. The rest of the tool names no
/// platform; a test fails if `Glibc`, `Darwin` or a Linux-only call appears elsewhere.
enum Platform {
    /// SIGHUP's number (`vault receive` reads its TLS files again on it).
    static let hangup = SIGHUP
    // MARK: Terminal

    /// True when `fd` is a terminal.
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// Whether `name` matches the shell pattern `glob` (fnmatch(3): `*`, `?`, `[…]`).
    static func matches(glob: String, _ name: String) -> Bool { fnmatch(glob, name, 0) == 0 }

    /// The width of the terminal on `fd`, if it is one and says.
    static func terminalColumns(_ fd: Int32) -> Int? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0,
              size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// The controlling terminal, to prompt on, or nil without one.
    static func openControllingTerminal() -> SystemPackage.FileDescriptor? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        return fd >= 0 ? SystemPackage.FileDescriptor(rawValue: fd) : nil
    }

    /// A terminal's settings, to put back.
    struct TerminalSettings: @unchecked Sendable {
        // @unchecked: a value copied into the interrupt action, read only.
        fileprivate var raw: termios
    }

    /// Turns echo off on `tty`; returns the settings to restore, or nil if it has none.
    static func disableEcho(_ tty: SystemPackage.FileDescriptor) -> TerminalSettings? {
        var old = termios()
        guard tcgetattr(tty.rawValue, &old) == 0 else { return nil }
        var noEcho = old
        noEcho.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(tty.rawValue, TCSAFLUSH, &noEcho)
        return TerminalSettings(raw: old)
    }

    /// Puts `settings` back on `tty` (`now`: without waiting for output to drain, as on an interrupt).
    static func restore(_ settings: TerminalSettings, on tty: SystemPackage.FileDescriptor, now: Bool = false) {
        var t = settings.raw
        tcsetattr(tty.rawValue, now ? TCSANOW : TCSAFLUSH, &t)
    }

    // MARK: Environment

    /// A variable's value (read without copying the whole environment).
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Hands a variable's bytes to `body`, then overwrites them with zeros where the process keeps
    /// its environment (what /proc/PID/environ shows) and unsets the variable. Nil if it is unset.
    static func takeEnvironmentValue<R>(_ name: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let value = getenv(name) else { return nil }
        let count = strlen(value)
        defer {
            memset(value, 0, count)
            unsetenv(name)
        }
        return try body(UnsafeRawBufferPointer(start: value, count: count))
    }

    // MARK: Files

    // MARK: Processes

    /// Starts `executable` with `arguments`, vault's environment, standard input and error, and
    /// standard output into a new pipe; returns its id and the pipe's read end (close-on-exec,
    /// so no other child inherits it). The child gets no other descriptor of vault's (all from 3
    /// on are closed in it) and the default action of every signal vault changed. By hand
    /// because Foundation's `Process` would link Foundation's classes and ICU into the binary for
    /// this one call.
    static func spawn(
        _ executable: String, arguments: [String]
    ) throws -> (pid: pid_t, output: SystemPackage.FileDescriptor) {
        let (readEnd, writeEnd) = try SystemPackage.FileDescriptor.pipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd.rawValue, 1)
        if vault_spawn_close_from(&actions, 3) != 0 {
            posix_spawn_file_actions_addclose(&actions, readEnd.rawValue)
            posix_spawn_file_actions_addclose(&actions, writeEnd.rawValue)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGXFSZ, SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, s) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        // The read end is vault's alone: close-on-exec for any other child.
        _ = fcntl(readEnd.rawValue, F_SETFD, FD_CLOEXEC)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        try? writeEnd.close()
        guard started == 0 else {
            try? readEnd.close()
            throw Errno(rawValue: started)
        }
        return (pid, readEnd)
    }

    /// How a child ended: its exit status, or the signal that killed it.
    enum Ending: Equatable {
        case exited(Int32)
        case killed(Int32)
    }

    /// Stops the child `pid` at once (SIGKILL).
    static func kill(_ pid: pid_t) { _ = Glibc.kill(pid, SIGKILL) }

    /// Waits for the child `pid` to end.
    static func wait(for pid: pid_t) -> Ending {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (C macros).
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .killed(signal)
    }

    /// True when this process may read `path`.
    static func isReadable(_ path: String) -> Bool { access(path, R_OK) == 0 }

    // MARK: Process

    /// Past a file-size limit (ulimit -f) the kernel would kill the process with SIGXFSZ,
    /// leaving a temporary file and no message; ignored, the write fails with EFBIG and is reported.
    static func ignoreFileSizeSignal() { signal(SIGXFSZ, SIG_IGN) }

    /// Exits at once, without running anything else (from the interrupt thread).
    static func exitNow(_ code: Int32) -> Never { _exit(code) }

    /// Exits normally.
    static func exit(_ code: Int32) -> Never { systemExit(code) }
}

private func systemExit(_ code: Int32) -> Never { exit(code) }

/// `VAULT_IO_REPORT=FILE`: at exit, the process's I/O counters (Linux's `/proc/self/io`:
/// bytes and calls of read and write) are copied to FILE. For the scale tests and `make bench`,
/// which count the bytes a command reads and writes rather than time it.
enum IOReport {
    /// Registers the exit handler when the variable is set.
    static func install() {
        guard let path = getenv("VAULT_IO_REPORT"),
              path.pointee != 0 else { return }
        reportPath = strdup(path)
        atexit {
            guard let path = reportPath else { return }
            let input = open("/proc/self/io", O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            close(input)
            let output = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard output >= 0,
                  n > 0 else { return }
            _ = buffer.withUnsafeBytes { write(output, $0.baseAddress, n) }
            close(output)
        }
    }
}

// nonisolated(unsafe): set once, before any thread starts; read by the exit handler.
nonisolated(unsafe) private var reportPath: UnsafeMutablePointer<CChar>?
