import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// PHP's built-in web server (`php -S`, Debian `php-cli`, installed by `make test`) running
/// scripts/form-receiver.php on 127.0.0.1, so PHP's own multipart parser takes the uploads.
/// The port is chosen at run time; the server is stopped by PID when the value is dropped.
final class PHPServer {
    let pid: pid_t
    let port: Int
    let store: String
    var url: String { "http://127.0.0.1:\(port)/upload.php" }

    init(in sandbox: Sandbox, token: String = "form-token", postMaxSize: String = "64M", maxFileUploads: Int = 20) throws {
        store = sandbox.path("php-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: store + "/tmp", withIntermediateDirectories: true)
        let php = "/usr/bin/php"
        guard FileManager.default.isExecutableFile(atPath: php) else {
            throw CLIError("php is not installed: 'make test' installs php-cli (apt-get install php-cli)")
        }
        var lastError = ""
        for _ in 0..<5 {
            let candidate = Self.freePort()
            let args = [php, "-n", "-d", "max_file_uploads=\(maxFileUploads)", "-d", "post_max_size=\(postMaxSize)",
                        "-d", "upload_max_filesize=\(postMaxSize)", "-d", "upload_tmp_dir=\(store)/tmp", "-d", "file_uploads=1", "-d", "display_errors=0",
                        "-S", "127.0.0.1:\(candidate)", Sandbox.repository.appendingPathComponent("scripts/form-receiver.php").path]
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_addopen(&actions, 1, store + "/stdout", O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, store + "/stderr", O_WRONLY | O_CREAT | O_APPEND, 0o600)
            defer { posix_spawn_file_actions_destroy(&actions) }
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            Sandbox.resetSignals(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            let env = ["FORM_STORE=\(store)", "FORM_TOKEN=\(token)", "PATH=/usr/bin:/bin"]
            let argv = args.map { strdup($0) } + [nil]
            let envp = env.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
            var p: pid_t = 0
            guard posix_spawn(&p, php, &actions, &attributes, argv, envp) == 0 else { throw CLIError("cannot start php") }
            var exited = false   // the port was taken meanwhile
            let up = poll(200, every: 25_000) {
                if waitpid(p, nil, WNOHANG) == p { exited = true }
                return exited || Self.accepts(candidate)
            }
            if up && !exited {
                pid = p
                port = candidate
                return
            }
            kill(p, SIGKILL)
            waitpid(p, nil, 0)
            lastError = (try? String(contentsOfFile: store + "/stderr", encoding: .utf8)) ?? ""
        }
        throw CLIError("php -S did not start: \(lastError)")
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 { usleep(20_000) }
        if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
    }

    /// Each request PHP's script saw: method, path, Content-Length and X-Vault-Batch.
    var requests: [String] {
        ((try? String(contentsOfFile: store + "/requests.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// id -> the file name as PHP gave it, its type, and the manifest's name.
    var names: [String: [String: String]] {
        guard let d = FileManager.default.contents(atPath: store + "/names.json") else { return [:] }
        return (try? JSONSerialization.jsonObject(with: d) as? [String: [String: String]]) ?? [:]
    }

    /// The stored documents' ids.
    var stored: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).filter { $0.count == 32 }.sorted()
    }

    func bytes(of id: String) -> [UInt8] { Array(FileManager.default.contents(atPath: store + "/" + id) ?? Data()) }

    /// A port nothing listens on now (bound and released; `php -S` needs a number).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
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

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
