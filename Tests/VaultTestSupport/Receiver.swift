import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The project's fault-injecting receiver (scripts/receiver.py) on 127.0.0.1, on a port the
/// OS picks; stopped by PID when the value is dropped.
package final class Receiver {
    package let pid: pid_t
    package let port: Int
    package let dir: String
    package var url: String { "http://127.0.0.1:\(port)/upload" }
    package var logPath: String { dir + "/log.jsonl" }
    package var storePath: String { dir + "/store" }

    package init(
        in scratch: some ScratchSpace, token: String? = "test-token", user: String? = nil, password: String? = nil,
        maxBytes: Int? = nil, faults: String? = nil, mode: String = "verify"
    ) {
        dir = scratch.path("receiver-\(UUID().uuidString.prefix(6))")
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var args = [
            "python3", Peer.repository.appendingPathComponent("scripts/receiver.py").path,
            "--port-file", dir + "/port", "--log", dir + "/log.jsonl", "--mode", mode, "--quiet"
        ]
        if mode == "verify" { args += ["--store", dir + "/store"] }
        if let token { args += ["--token", token] }
        if let user, let password { args += ["--user", user, "--password", password] }
        if let maxBytes { args += ["--max-bytes", String(maxBytes)] }
        if let faults {
            _ = FileManager.default.createFile(atPath: dir + "/plan.json", contents: Data(faults.utf8))
            args += ["--fault-plan", dir + "/plan.json"]
        }
        pid = try! Peer.spawn(args, stdout: dir + "/stdout", stderr: dir + "/stderr", searchPath: true)
        let found = Peer.port(writtenTo: dir + "/port")
        precondition(
            found != nil,
            "the receiver did not start: \((try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? "")")
        port = found!
    }

    deinit { Peer.stop(pid) }

    /// Every request the receiver saw, in order.
    package var log: [[String: Any]] { Peer.jsonLines(logPath) }

    /// Ids accepted (not as duplicates), in order.
    package var accepted: [String] {
        log.filter { ($0["status"] as? Int) == 200 && $0["duplicate"] == nil }.flatMap {
            $0["accepted"] as? [String] ?? []
        }
    }

    package var statuses: [String] { log.map { "\($0["status"]!)" } }
}
