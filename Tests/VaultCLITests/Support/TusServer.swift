import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The tus 1.0 server `resumable-upload` 0.3.0 (PyPI, installed by `make test` into
/// .build-peers/), on 127.0.0.1 at a port chosen at run time, stopped by PID. It keeps its
/// uploads and database in a folder, so it can be killed and started again on the same port.
final class TusServer {
    private(set) var pid: pid_t = 0
    let port: Int
    let dir: String
    let checksums: String
    let maxChunk: Int?
    var url: String { "http://127.0.0.1:\(port)/files" }
    var logPath: String { dir + "/server.log" }

    init(in sandbox: Sandbox, checksums: String = "sha1,sha256", maxChunk: Int? = nil) throws {
        dir = sandbox.path("tus-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: dir + "/up", withIntermediateDirectories: true)
        self.checksums = checksums
        self.maxChunk = maxChunk
        port = PHPServer.freePort()
        try start()
    }

    /// Starts (or restarts) the server on its port.
    func start() throws {
        let python = Sandbox.repository.appendingPathComponent(".build-peers/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw CLIError("the tus peer is not installed: 'make test' installs resumable-upload into .build-peers/")
        }
        var args = [python, "-m", "resumable_upload", "serve", "--host", "127.0.0.1", "--port", String(port),
                    "--upload-dir", dir + "/up", "--db-path", dir + "/up.db", "--checksum-algorithms", checksums,
                    "--enable-downloads", "--upload-expiry", "3600", "--log-level", "INFO"]
        if let maxChunk { args += ["--max-chunk-size", String(maxChunk)] }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        Sandbox.resetSignals(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = args.map { strdup($0) } + [nil]
        let environment = ["PATH=/usr/bin:/bin", "PYTHONUNBUFFERED=1"]
        let envp = environment.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var p: pid_t = 0
        guard posix_spawn(&p, python, &actions, &attributes, argv, envp) == 0 else { throw CLIError("cannot start resumable-upload") }
        pid = p
        poll(400, every: 25_000) { PHPServer.accepts(port) }
        guard PHPServer.accepts(port) else { throw CLIError("resumable-upload did not start: \(log.suffix(2000))") }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    func crash() {
        kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 { usleep(20_000) }
        if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Payload bytes the server wrote, PATCH by PATCH ("wrote N bytes" in its log).
    var written: [Int] {
        log.split(separator: "\n").compactMap { line -> Int? in
            guard let r = line.range(of: "wrote ") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
    }

    /// The completed uploads' bytes.
    var uploads: [[UInt8]] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/up")) ?? []).sorted().compactMap {
            FileManager.default.contents(atPath: dir + "/up/" + $0).map(Array.init)
        }
    }
}
