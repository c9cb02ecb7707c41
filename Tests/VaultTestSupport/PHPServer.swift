import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// PHP's built-in web server (`php -S`, Debian `php-cli`, installed by `make test`) running
/// scripts/form-receiver.php on 127.0.0.1, so PHP's own multipart parser takes the uploads.
/// The port is chosen at run time; the server is stopped by PID when the value is dropped.
package final class PHPServer {
    package let pid: pid_t
    package let port: Int
    package let store: String
    package var url: String { "http://127.0.0.1:\(port)/upload.php" }

    package init(
        in scratch: some ScratchSpace, token: String = "form-token", postMaxSize: String = "64M",
        maxFileUploads: Int = 20
    ) throws {
        store = scratch.path("php-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: store + "/tmp", withIntermediateDirectories: true)
        let php = "/usr/bin/php"
        guard FileManager.default.isExecutableFile(atPath: php) else {
            throw PeerError("php is not installed: 'make test' installs php-cli (apt-get install php-cli)")
        }
        var lastError = ""
        for _ in 0..<5 {
            let candidate = Peer.freePort()
            let args = [
                php, "-n", "-d", "max_file_uploads=\(maxFileUploads)", "-d", "post_max_size=\(postMaxSize)",
                "-d", "upload_max_filesize=\(postMaxSize)", "-d", "upload_tmp_dir=\(store)/tmp", "-d", "file_uploads=1",
                "-d", "display_errors=0",
                "-S", "127.0.0.1:\(candidate)", Peer.repository.appendingPathComponent("scripts/form-receiver.php").path
            ]
            let p = try Peer.spawn(
                args, environment: ["FORM_STORE=\(store)", "FORM_TOKEN=\(token)", "PATH=/usr/bin:/bin"],
                stdout: store + "/stdout", stderr: store + "/stderr")
            var exited = false  // the port was taken meanwhile
            let up = Peer.poll(every: 25_000) {
                if waitpid(p, nil, WNOHANG) == p { exited = true }
                return exited || Peer.accepts(candidate)
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
        throw PeerError("php -S did not start: \(lastError)")
    }

    deinit { Peer.stop(pid) }

    /// Each request PHP's script saw: method, path, Content-Length and X-Vault-Batch.
    package var requests: [String] {
        ((try? String(contentsOfFile: store + "/requests.log", encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init)
    }

    /// id -> the file name as PHP gave it, its type, and the manifest's name.
    package var names: [String: [String: String]] {
        guard let d = FileManager.default.contents(atPath: store + "/names.json") else { return [:] }
        return (try? JSONSerialization.jsonObject(with: d) as? [String: [String: String]]) ?? [:]
    }

    /// The stored documents' ids.
    package var stored: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).filter { $0.count == 32 }.sorted()
    }

    package func bytes(of id: String) -> [UInt8] {
        Array(FileManager.default.contents(atPath: store + "/" + id) ?? Data())
    }
}
