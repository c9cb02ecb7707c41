import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A script of this repository run by the test peers' Python (.build-peers/venv) on 127.0.0.1,
/// on a port the OS picks (the script writes it to `--port-file`); stopped by PID on deinit.
/// Used for the reference presign endpoint (scripts/presign-server.py, boto3) and the faulty
/// network path (scripts/flip-proxy.py) in front of SeaweedFS.
final class PythonPeer {
    let pid: pid_t
    let port: Int
    let log: String
    var url: String { "http://127.0.0.1:\(port)/" }

    init(_ script: String, _ arguments: [String], environment: [String] = [], in s: Sandbox) throws {
        let dir = s.path("peer-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        log = dir + "/log.jsonl"
        let python = Sandbox.repository.appendingPathComponent(".build-peers/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw S3PeerError("the test peers are not installed: 'make test' installs them into .build-peers/")
        }
        let args = [python, Sandbox.repository.appendingPathComponent("scripts/" + script).path] + arguments
            + ["--port-file", dir + "/port", "--log", log]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 2, dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        Sandbox.resetSignals(&attributes)   // the test process blocks signals its children must not
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = args.map { strdup($0) } + [nil]
        let envp = (["PATH=/usr/bin:/bin"] + environment).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var p: pid_t = 0
        guard posix_spawn(&p, python, &actions, &attributes, argv, envp) == 0 else { throw S3PeerError("cannot start \(script)") }
        pid = p
        poll(400, every: 25_000) { FileManager.default.fileExists(atPath: dir + "/port") }
        guard let text = try? String(contentsOfFile: dir + "/port", encoding: .utf8), let port = Int(text) else {
            kill(p, SIGKILL)
            waitpid(p, nil, 0)
            throw S3PeerError("\(script) did not start: \((try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? "")")
        }
        self.port = port
    }

    deinit { kill(pid, SIGTERM); waitpid(pid, nil, 0) }

    /// The JSON lines the script logged, one per request it answered.
    var entries: [[String: Any]] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
