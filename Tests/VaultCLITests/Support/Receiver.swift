import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The project's fault-injecting receiver (scripts/receiver.py) on 127.0.0.1, on a port the
/// OS picks; stopped by PID when the value is dropped.
final class Receiver {
    let pid: pid_t
    let port: Int
    let dir: String
    var url: String { "http://127.0.0.1:\(port)/upload" }
    var logPath: String { dir + "/log.jsonl" }
    var storePath: String { dir + "/store" }

    init(in sandbox: Sandbox, token: String? = "test-token", user: String? = nil, password: String? = nil,
         maxBytes: Int? = nil, faults: String? = nil, mode: String = "verify") {
        dir = sandbox.path("receiver-\(UUID().uuidString.prefix(6))")
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var args = ["python3", Sandbox.repository.appendingPathComponent("scripts/receiver.py").path,
                    "--port-file", dir + "/port", "--log", dir + "/log.jsonl", "--mode", mode, "--quiet"]
        if mode == "verify" { args += ["--store", dir + "/store"] }
        if let token { args += ["--token", token] }
        if let user, let password { args += ["--user", user, "--password", password] }
        if let maxBytes { args += ["--max-bytes", String(maxBytes)] }
        if let faults {
            FileManager.default.createFile(atPath: dir + "/plan.json", contents: Data(faults.utf8))
            args += ["--fault-plan", dir + "/plan.json"]
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, dir + "/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        Sandbox.resetSignals(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var p: pid_t = 0
        let rc = posix_spawnp(&p, "python3", &actions, &attributes, argv, environ)
        precondition(rc == 0, "cannot start the receiver")
        pid = p
        var found: Int?
        for _ in 0..<200 {
            if let s = try? String(contentsOfFile: dir + "/port", encoding: .utf8), let n = Int(s) { found = n; break }
            usleep(25_000)
        }
        precondition(found != nil, "the receiver did not start: \((try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? "")")
        port = found!
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 { usleep(20_000) }
        if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
    }

    /// Every request the receiver saw, in order.
    var log: [[String: Any]] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Ids accepted (not as duplicates), in order.
    var accepted: [String] {
        log.filter { ($0["status"] as? Int) == 200 && $0["duplicate"] == nil }.flatMap { $0["accepted"] as? [String] ?? [] }
    }

    var statuses: [String] { log.map { "\($0["status"]!)" } }
}
