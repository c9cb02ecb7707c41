import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What every test peer shares (SeaweedFS, PHP's server, the receiver, the tus server, the
/// Python scripts): the one way a peer process is started, waited for and stopped, and the
/// ports it listens on. Peers run on 127.0.0.1 only, on ports chosen at run time, and are
/// stopped by PID.
package enum Peer {
    /// The repository's root folder.
    package static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The test peers' Python (`make test` installs it into .build-peers/).
    package static var python: String { repository.appendingPathComponent(".build-peers/venv/bin/python").path }

    /// Starts `arguments[0]` with the rest as its arguments: its standard output and error
    /// appended to the files given (else inherited), its environment `environment` (else this
    /// process's), found on `PATH` when `searchPath`. No blocked signals and default handlers
    /// (``resetSignals(_:flags:)``).
    /// - Returns: the child's PID.
    package static func spawn(
        _ arguments: [String], environment: [String]? = nil, stdout: String? = nil, stderr: String? = nil,
        searchPath: Bool = false, flags: Int32 = 0
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdout { posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600) }
        if let stderr { posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600) }
        // Nothing else of this process's: a pipe another test has open (to read a child's output
        // to its end) must not stay open in a peer that lives on, or that read never ends.
        closeInherited(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        resetSignals(&attributes, flags: flags)
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = arguments.map { strdup($0) } + [nil]
        var envp = (environment ?? []).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = envp.withUnsafeMutableBufferPointer { own in
            let env = environment == nil ? environ : own.baseAddress
            return searchPath
                ? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, env)
                : posix_spawn(&pid, arguments[0], &actions, &attributes, argv, env)
        }
        guard rc == 0 else { throw PeerError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Children start with no blocked signals and default handlers: the test runner's worker
    /// threads (libdispatch) block signals, and posix_spawn would pass that mask on.
    package static func resetSignals(_ attributes: inout posix_spawnattr_t, flags: Int32 = 0) {
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(flags | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    }

    /// Adds the file action that closes every descriptor from 3 on in the child (glibc 2.34's
    /// `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not import).
    package static func closeInherited(_ actions: inout posix_spawn_file_actions_t) {
        precondition(spawnActionCloseFrom(&actions, 3) == 0, "posix_spawn_file_actions_addclosefrom_np failed")
    }

    /// Stops `pid`: SIGTERM, up to 10 s to exit, then SIGKILL (a peer that does not stop in
    /// time is stopped all the same; nothing depends on how).
    package static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var exited = false
        poll(within: 10, every: 20_000) {
            exited = waitpid(pid, &status, WNOHANG) != 0
            return exited
        }
        if !exited { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
    }

    /// The peak resident memory of a running process (`VmHWM` in /proc/PID/status), in KiB; 0
    /// when it cannot be read.
    package static func peakRSSKiB(_ pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first { Int($0) != nil } ?? "") ?? 0
    }

    /// A port nothing listens on now (bound and released, for a peer that needs a number).
    package static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = loopback(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// True when something accepts connections on 127.0.0.1:`port`.
    package static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = loopback(port: port)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return addr
    }

    /// True while process `pid` runs (a zombie, ended and not yet waited for, does not).
    package static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(close, offsetBy: 2)] != "Z"
    }

    /// Calls `done` every `interval` microseconds until it is true or `seconds` have passed (two
    /// minutes by default: the suite's tests and peers share two cores, so a condition that
    /// takes a tenth of a second alone can take many seconds under load); says whether it held.
    @discardableResult
    package static func poll(within seconds: Double = 120, every interval: useconds_t, until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if done() { return true }
            usleep(interval)
        }
        return done()
    }

    /// True while process `pid` holds a TCP connection that is not a listening socket, or one of
    /// its listening sockets has connections waiting to be accepted: a request of a client
    /// killed mid-way is still to be read or answered. (Its sockets are found through
    /// /proc/PID/fd, their states and a listening socket's accept queue — the receive queue
    /// column — in /proc/net/tcp and tcp6.)
    package static func hasOpenConnections(_ pid: pid_t) -> Bool {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(
            fds.compactMap { fd -> String? in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                    target.hasPrefix("socket:[")
                else { return nil }
                return String(target.dropFirst(8).dropLast())
            })
        guard !inodes.isEmpty else { return false }
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                // sl, local, remote, state (0A: listening), tx:rx queues, ..., the inode is the tenth field.
                guard fields.count > 9,
                      inodes.contains(String(fields[9])) else { continue }
                if fields[3] != "0A" { return true }
                let waiting = fields[4].split(separator: ":").last.flatMap { Int($0, radix: 16) } ?? 0
                if waiting > 0 { return true }
            }
        }
        return false
    }

    /// Waits (up to two minutes) until `pid` holds no connection but its listening sockets.
    @discardableResult
    package static func waitUntilIdle(_ pid: pid_t) -> Bool {
        poll(every: 20_000) { !hasOpenConnections(pid) }
    }

    /// The port a peer wrote to `file` once it listens, waited for up to two minutes.
    package static func port(writtenTo file: String) -> Int? {
        var found: Int?
        poll(every: 25_000) {
            found = (try? String(contentsOfFile: file, encoding: .utf8)).flatMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            return found != nil
        }
        return found
    }

    /// JSON lines of a peer's log, one object a line.
    package static func jsonLines(_ path: String) -> [[String: Any]] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// A folder a test owns, for a peer's files.
package protocol ScratchSpace {
    func path(_ name: String) -> String
}

/// A peer that could not be started, or is not installed.
package struct PeerError: Error, CustomStringConvertible {
    package let description: String
    package init(_ d: String) { description = d }
}

@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnActionCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
