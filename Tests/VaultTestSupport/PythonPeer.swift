import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A script of this repository run by the test peers' Python (.build-peers/venv) on 127.0.0.1,
/// on a port the OS picks (the script writes it to `--port-file`); stopped by PID on deinit.
/// Used for the reference presign endpoint (scripts/presign-server.py, boto3) and the faulty
/// network path (scripts/flip-proxy.py) in front of SeaweedFS.
package final class PythonPeer {
    package let pid: pid_t
    package let port: Int
    package let log: String
    package var url: String { "http://127.0.0.1:\(port)/" }

    package init(
        _ script: String, _ arguments: [String], environment: [String] = [], in scratch: some ScratchSpace
    ) throws {
        let dir = scratch.path("peer-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        log = dir + "/log.jsonl"
        guard FileManager.default.isExecutableFile(atPath: Peer.python) else {
            throw PeerError("the test peers are not installed: 'make test' installs them into .build-peers/")
        }
        let args =
            [Peer.python, Peer.repository.appendingPathComponent("scripts/" + script).path] + arguments
            + ["--port-file", dir + "/port", "--log", log]
        let p = try Peer.spawn(args, environment: ["PATH=/usr/bin:/bin"] + environment, stderr: dir + "/stderr")
        pid = p
        guard let port = Peer.port(writtenTo: dir + "/port") else {
            kill(p, SIGKILL)
            waitpid(p, nil, 0)
            throw PeerError(
                "\(script) did not start: \((try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? "")")
        }
        self.port = port
    }

    private var stopped = false

    deinit { stop() }

    /// Stops the script (SIGTERM) and waits for it: nothing more reaches its log, or passes
    /// through it, afterwards.
    package func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        waitpid(pid, nil, 0)
    }

    /// The JSON lines the script logged, one per request it answered.
    package var entries: [[String: Any]] { Peer.jsonLines(log) }

    /// Waits (up to two minutes) until no request is in flight through the path (flip-proxy.py
    /// keeps the count beside its log): what a killed client had sent is then in the log.
    @discardableResult
    package func waitUntilIdle() -> Bool {
        Peer.poll(every: 20_000) { (try? String(contentsOfFile: log + ".busy", encoding: .utf8)) == "0" }
    }
}
