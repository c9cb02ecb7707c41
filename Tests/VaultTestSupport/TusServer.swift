import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The tus 1.0 server `resumable-upload` 0.3.0 (PyPI, installed by `make test` into
/// .build-peers/), on 127.0.0.1 at a port chosen at run time, stopped by PID. It keeps its
/// uploads and database in a folder, so it can be killed and started again on the same port.
package final class TusServer {
    package private(set) var pid: pid_t = 0
    package let port: Int
    package let dir: String
    package let checksums: String
    package let maxChunk: Int?
    package var url: String { "http://127.0.0.1:\(port)/files" }
    package var logPath: String { dir + "/server.log" }

    package init(in scratch: some ScratchSpace, checksums: String = "sha1,sha256", maxChunk: Int? = nil) throws {
        dir = scratch.path("tus-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: dir + "/up", withIntermediateDirectories: true)
        self.checksums = checksums
        self.maxChunk = maxChunk
        port = Peer.freePort()
        try start()
    }

    /// Starts (or restarts) the server on its port.
    package func start() throws {
        guard FileManager.default.isExecutableFile(atPath: Peer.python) else {
            throw PeerError("the tus peer is not installed: 'make test' installs resumable-upload into .build-peers/")
        }
        var args = [
            Peer.python, "-m", "resumable_upload", "serve", "--host", "127.0.0.1", "--port", String(port),
            "--upload-dir", dir + "/up", "--db-path", dir + "/up.db", "--checksum-algorithms", checksums,
            "--enable-downloads", "--upload-expiry", "3600", "--log-level", "INFO"
        ]
        if let maxChunk { args += ["--max-chunk-size", String(maxChunk)] }
        pid = try Peer.spawn(
            args, environment: ["PATH=/usr/bin:/bin", "PYTHONUNBUFFERED=1"], stdout: logPath, stderr: logPath)
        guard Peer.poll(every: 25_000, until: { Peer.accepts(port) }) else {
            throw PeerError("resumable-upload did not start: \(log.suffix(2000))")
        }
    }

    /// Waits until the server holds no client connection: a PATCH of a client killed mid-way
    /// has been written and logged, or dropped.
    @discardableResult
    package func waitUntilIdle() -> Bool { Peer.waitUntilIdle(pid) }

    /// Kills the server at once (SIGKILL), as a crash would.
    package func crash() {
        kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
    }

    deinit { Peer.stop(pid) }

    package var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Payload bytes the server wrote, PATCH by PATCH ("wrote N bytes" in its log).
    package var written: [Int] {
        log.split(separator: "\n").compactMap { line -> Int? in
            guard let r = line.range(of: "wrote ") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
    }

    /// The completed uploads' bytes.
    package var uploads: [[UInt8]] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/up")) ?? []).sorted().compactMap {
            FileManager.default.contents(atPath: dir + "/up/" + $0).map(Array.init)
        }
    }
}
