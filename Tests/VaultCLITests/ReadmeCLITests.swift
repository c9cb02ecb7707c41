import Foundation
import Testing
import VaultTestSupport

/// The README's quick start, run as written (so it cannot rot): the office's commands, its
/// receiver, then the station's, then the office's again, each line of README.md's two `sh`
/// blocks under "Use". What cannot run here as written is swapped, and only that: the office's
/// host name for the receiver's address on 127.0.0.1, its listening address for a port chosen
/// now, `/etc/vault/` for a folder of the sandbox (holding the station's token and the private
/// CA the receiver's certificate is from), and `~` for the sandbox's home.
@Suite(.blocking) struct ReadmeCLITests {
    /// The `sh` blocks of the README's "Use" section, each as its command lines.
    static func quickStart() throws -> (office: [String], station: [String]) {
        let readme = try String(
            contentsOf: Sandbox.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let use = try #require(readme.components(separatedBy: "\n## Use\n").dropFirst().first)
        let section = use.components(separatedBy: "\n## ").first ?? use
        let blocks = section.components(separatedBy: "```sh\n").dropFirst().map {
            $0.components(separatedBy: "```").first!.split(separator: "\n").map(String.init)
        }
        try #require(blocks.count == 2, "an office's block and a station's")
        return (blocks[0], blocks[1])
    }

    @Test func theQuickStartRunsAsWritten() throws {
        let (office, station) = try Self.quickStart()
        let s = Sandbox()
        try FileManager.default.createDirectory(atPath: s.path("bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: s.path("etc"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: s.path("scans/2026"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: s.path("bin/vault"), withDestinationPath: Sandbox.binary)
        try ReceiveCLITests.makePrivateCA(s)
        for (from, to) in [("server.pem", "cert.pem"), ("server.key", "key.pem"), ("ca.pem", "etc/office-ca.pem")] {
            try FileManager.default.copyItem(atPath: s.path(from), toPath: s.path(to))
        }
        let scans: [(String, [UInt8])] = [
            ("scans/scan.pdf", Array("%PDF-1.7\n".utf8) + .random(20_000, seed: 61)),
            ("scans/2026/receipt.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + .random(9_000, seed: 62))
        ]
        for (name, bytes) in scans { s.write(name, bytes) }
        try FileManager.default.createDirectory(atPath: s.path("home"), withIntermediateDirectories: true)
        s.write("home/.vault-password", Array("correct horse battery\n".utf8))
        let env: [String: String?] = [
            "PATH": s.path("bin") + ":/usr/bin:/bin", "VAULT_DIR": nil,
            "VAULT_PASSWORD": "correct horse battery", "VAULT_NEW_PASSWORD": "operator password"
        ]
        func run(_ lines: [String], _ swaps: [(String, String)] = [], password: Bool = true) -> CLIResult {
            var script = "set -ex\ncd \(s.path(""))\nexport HOME=\(s.path("home"))\n"
            for line in lines {
                script += swaps.reduce(line) { $0.replacingOccurrences(of: $1.0, with: $1.1) } + "\n"
            }
            s.write("step.sh", Array(script.utf8))
            var env = env
            if !password { env["VAULT_PASSWORD"] = .some(nil) }  // the station's comes from its file
            return s.shell("bash step.sh", env: env)
        }
        // The office: its vault, the station, the receipt key, an operator; then its receiver.
        let serve = try #require(office.firstIndex { $0.contains("--listen") })
        let setUp = run(Array(office[..<serve]))
        try #require(setUp.status == 0, "\(setUp.stderr)")
        let token = try #require(setUp.out.split(separator: "\n").first { $0.hasPrefix("vst_") })
        s.write("etc/office.token", Array("\(token)\n".utf8))
        s.write("serve.sh", Array(("cd \(s.path(""))\nexec " + office[serve].replacingOccurrences(
            of: "0.0.0.0:8443", with: "127.0.0.1:0")).utf8))
        let pid = try Peer.spawn(
            ["/bin/bash", s.path("serve.sh")], environment: env.compactMap { k, v in v.map { "\(k)=\($0)" } },
            stdout: s.path("serve.out"), stderr: s.path("serve.err"))
        defer { Peer.stop(pid) }
        var first: String?
        poll(every: 20_000) {
            first = (try? String(contentsOfFile: s.path("serve.out"), encoding: .utf8))?.split(separator: "\n").first
                .map(String.init)
            return first != nil || !Peer.isRunning(pid)
        }
        let address = try #require(first?.components(separatedBy: "listening on ").last, "\(s.path("serve.err"))")
        #expect(address.hasPrefix("https://127.0.0.1:"))
        // The station, every line of its block.
        let swaps = [("https://office.example:8443", address), ("/etc/vault/", s.path("etc/"))]
        let delivered = run(station, swaps, password: false)
        #expect(delivered.status == 0, "\(delivered.stderr)")
        #expect(FileManager.default.contents(atPath: s.path("scan.pdf")) == Data(scans[0].1))
        // The office again: what arrived, opened as captured.
        let after = run(Array(office[(serve + 1)...]))
        #expect(after.status == 0, "\(after.stderr)")
        for (name, bytes) in scans {
            let opened = s.path("opened/" + name.dropFirst("scans/".count))
            #expect(FileManager.default.contents(atPath: opened) == Data(bytes), "\(opened): \(after.stderr)")
        }
    }
}
