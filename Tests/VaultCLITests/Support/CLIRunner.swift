import Foundation
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `vault` binary as a child process: stdin from bytes, stdout and stderr to
/// temp files, and `wait4` for the exit status and the child's own peak RSS (so parallel
/// tests in this process do not pollute the memory figure).
struct CLIResult {
    var status: Int32
    var stdout: [UInt8]
    var stderr: String
    var maxRSSKiB: Int
    var out: String { String(decoding: stdout, as: UTF8.self) }

    /// The `--progress json` events on stderr, parsed; a line that is not a JSON object is nil.
    var events: [[String: Any]?] {
        stderr.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}

final class Sandbox: ScratchSpace {
    let dir: String
    var env: [String: String]

    init() {
        var template = Array("\(NSTemporaryDirectory())/vault-cli-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        env = [
            "PATH": "/usr/bin:/bin", "HOME": dir, "VAULT_DIR": dir + "/vault",
            "VAULT_PASSWORD": "correct horse battery",
            "SWIFT_BACKTRACE": "enable=no", "VAULT_FIXTURE_KDF": "insecure-test"
        ]
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func path(_ name: String) -> String { dir + "/" + name }

    func write(_ name: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: path(name), contents: Data(bytes))
    }

    /// Writes `count` MiB of pseudo-random data (one repeated random MiB) without holding it in memory.
    func writeLarge(_ name: String, mebibytes count: Int, seed: UInt64) throws {
        let block = Data([UInt8].random(1 << 20, seed: seed))
        _ = FileManager.default.createFile(atPath: path(name), contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path(name)))
        for _ in 0..<count { h.write(block) }
        try h.close()
    }

    static var binary: String {
        if let b = ProcessInfo.processInfo.environment["VAULT_BIN"] { return b }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let p = candidate.appendingPathComponent("vault").path
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return here.appendingPathComponent("vault").path
    }

    /// Starts the binary and waits (up to `seconds`) until it stops at the named pause point
    /// (`VAULT_PAUSE_AT`, debug builds: VaultCore's `PausePoint`), or ends first. Returns the
    /// pid, and whether it is held at the point: the test then kills it at that very moment.
    func spawn(
        _ args: [String], env extra: [String: String?] = [:], pausingAt point: String, within seconds: Double = 300
    ) -> (pid: pid_t, paused: Bool) {
        let marker = path(".paused-\(UUID().uuidString)")
        var environment = extra
        environment["VAULT_PAUSE_AT"] = point
        environment["VAULT_PAUSE_FILE"] = marker
        let pid = spawn(args, env: environment)
        var running = true
        _ = poll(within: seconds, every: 5_000) {
            running = Peer.isRunning(pid)
            return FileManager.default.fileExists(atPath: marker) || !running
        }
        return (pid, FileManager.default.fileExists(atPath: marker) && Peer.isRunning(pid))
    }

    /// Starts the binary without waiting. Returns the pid.
    /// - Parameter measured: run under GNU time, which reports the peak RSS of vault alone. (A
    ///   process started from this one by posix_spawn inherits this process's high-water mark
    ///   at exec, so wait4's figure would be ours; time forks from a 2 MB process instead.)
    /// - Parameter fileSizeLimitKiB: run under `ulimit -f` (in KiB).
    func spawn(
        _ args: [String], env extra: [String: String?] = [:], stdin: [UInt8] = [], stdinPath: String? = nil,
        measured: Bool = false, fileSizeLimitKiB: Int? = nil, wrapper: [String] = []
    ) -> pid_t {
        let inPath = stdinPath ?? path(".stdin-\(UUID().uuidString)")
        if stdinPath == nil { write(String(inPath.split(separator: "/").last!), stdin) }
        lastOut = path(".stdout-\(UUID().uuidString)")
        lastErr = path(".stderr-\(UUID().uuidString)")
        var environment = env
        for (k, v) in extra { environment[k] = v }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, lastOut, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, lastErr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of this process's (``Peer/spawn``): no other test's pipe stays open in vault.
        Peer.closeInherited(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // A new session: the child has no controlling terminal, as under CI.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        Sandbox.resetSignals(&attributes, flags: 0x80 /* POSIX_SPAWN_SETSID */)
        defer { posix_spawnattr_destroy(&attributes) }
        // sh changes directory, then execs vault in the same process, so wait4's figures are vault's.
        lastRSS = measured ? path(".rss-\(UUID().uuidString)") : nil
        let timePrefix = lastRSS.map { ["/usr/bin/time", "-q", "-f", "%M", "-o", $0] } ?? []
        if measured {
            precondition(
                FileManager.default.isExecutableFile(atPath: "/usr/bin/time"),
                "GNU time is needed: apt-get install time")
        }
        let limit = fileSizeLimitKiB.map { "ulimit -f \($0) && " } ?? ""
        let argv =
            (timePrefix + ["/bin/sh", "-c", "cd \"$0\" && \(limit)exec \"$@\"", dir] + wrapper + [Self.binary] + args)
            .map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, measured ? "/usr/bin/time" : "/bin/sh", &actions, &attributes, argv, envp)
        precondition(rc == 0, "cannot start \(Self.binary): \(rc)")
        outputs[pid] = (lastOut, lastErr, lastRSS)
        return pid
    }

    private var lastOut = "", lastErr = "", lastRSS: String?
    /// Output files of each running child, so several can run at once.
    private var outputs: [pid_t: (out: String, err: String, rss: String?)] = [:]

    /// Children start with no blocked signals and default handlers: the test runner's worker
    /// threads (libdispatch) block signals, and posix_spawn would pass that mask on.
    static func resetSignals(_ attributes: inout posix_spawnattr_t, flags: Int32 = 0) {
        Peer.resetSignals(&attributes, flags: flags)
    }

    /// What the running child `pid` has written to standard error so far.
    func errorsSoFar(_ pid: pid_t) -> String {
        outputs[pid].flatMap { try? String(contentsOfFile: $0.err, encoding: .utf8) } ?? ""
    }

    /// Waits for `pid` and collects what it printed.
    func wait(_ pid: pid_t) -> CLIResult {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        if let o = outputs.removeValue(forKey: pid) { (lastOut, lastErr, lastRSS) = o }
        let exited = (status & 0x7f) == 0
        let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? Data(contentsOf: URL(fileURLWithPath: lastOut))).map(Array.init) ?? []
        let err = (try? String(contentsOfFile: lastErr, encoding: .utf8)) ?? ""
        var rss = 0
        if let f = lastRSS, let text = try? String(contentsOfFile: f, encoding: .utf8) {
            rss = Int(text.split(separator: "\n").last { Int($0) != nil } ?? "") ?? 0
            try? FileManager.default.removeItem(atPath: f)
        }
        try? FileManager.default.removeItem(atPath: lastOut)
        try? FileManager.default.removeItem(atPath: lastErr)
        return CLIResult(status: code, stdout: out, stderr: err, maxRSSKiB: rss)
    }

    /// Runs the binary to completion.
    @discardableResult
    func run(_ args: String..., env: [String: String?] = [:], stdin: [UInt8] = []) -> CLIResult {
        wait(spawn(args, env: env, stdin: stdin))
    }

    func run(_ args: [String], env: [String: String?] = [:], stdin: [UInt8] = []) -> CLIResult {
        wait(spawn(args, env: env, stdin: stdin))
    }

    /// Runs the binary as the unprivileged user 65534 (nobody), through util-linux's setpriv:
    /// permission checks apply to it, as they do to any user but root.
    func runAsNobody(_ args: [String], env: [String: String?] = [:]) -> CLIResult {
        wait(spawn(args, env: env, wrapper: Self.nobody))
    }

    /// Runs a shell command in the sandbox folder; `$1` is the vault binary.
    func shell(_ command: String, env: [String: String?] = [:]) -> CLIResult {
        wait(spawn([], env: env, wrapper: ["/bin/sh", "-c", command, "sh"]))
    }

    static let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    /// Runs the binary with a file-size limit (`ulimit -f`, KiB).
    func run(_ args: [String], fileSizeLimitKiB: Int) -> CLIResult {
        wait(spawn(args, fileSizeLimitKiB: fileSizeLimitKiB))
    }

    /// Runs the binary under GNU time and reports its own peak RSS.
    func measure(_ args: String...) -> CLIResult {
        wait(spawn(args, measured: true))
    }

    /// ``measure(_:)`` with extra environment variables.
    func measureWith(_ args: [String], env: [String: String?]) -> CLIResult {
        wait(spawn(args, env: env, measured: true))
    }

    /// `vault init`, checked: by default at the debug build's `insecure-test` level (Argon2id's
    /// minimum, so that a test's hundred starts of the binary do not each pay 64 MiB of
    /// Argon2id); `interactive` for the tests that cover the real path (peak memory, prompts).
    func initVault(kdf: String = "insecure-test") {
        let r = run("init", "--kdf", kdf)
        precondition(r.status == 0, "init failed: \(r.stderr)")
    }

    /// A station's vault holding one small document (`a.txt`, "alpha").
    func initStationWithOneDocument() {
        initVault()
        write("a.txt", Array("alpha".utf8))
        let r = run("add", "a.txt", "-q")
        precondition(r.status == 0, "add failed: \(r.stderr)")
    }

    /// The vault's objects.
    var objects: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path("vault/objects"))) ?? []).sorted()
    }

    /// The sealed upload journals' jobs (`vault/uploads/<job>.journal`).
    var journalJobs: [String] {
        (((try? FileManager.default.contentsOfDirectory(atPath: path("vault/uploads"))) ?? []).filter {
            $0.hasSuffix(".journal")
        })
        .map { String($0.dropLast(".journal".count)) }.sorted()
    }

    /// The first upload journal, opened by `vault uploads show` (the password authenticates
    /// it), as JSON; nil when there is none or it does not open.
    func journal(env extra: [String: String?] = [:]) -> [String: Any]? {
        guard let job = journalJobs.first else { return nil }
        let r = run(["uploads", "show", job], env: extra)
        guard r.status == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any]
    }

    /// Repository root (for Fixtures/).
    static var repository: URL { Peer.repository }
}

extension Array where Element == UInt8 {
    static func random(_ n: Int, seed: UInt64 = 42) -> [UInt8] {
        // Scrambled first: distinct seeds must give distinct bytes (vault refuses duplicates).
        var s = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<n).map { _ in
            s ^= s << 13; s ^= s >> 7; s ^= s << 17; return UInt8(truncatingIfNeeded: s)
        }
    }
}

/// Polls `done` every `interval` microseconds until it holds or `seconds` (two minutes by
/// default) have passed, and says whether it held (``Peer/poll(within:every:until:)``).
@discardableResult
func poll(within seconds: Double = 120, every interval: useconds_t, until done: () -> Bool) -> Bool {
    Peer.poll(within: seconds, every: interval, until: done)
}
