import Crypto
import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Reaching a server, on the built binary: plain HTTP off this machine refused, a refused
/// connection failing at once, a silent host bounded by the timeout.
@Suite(.blocking) struct ConnectionCLITests {
    @Test func plainHTTPToANonLoopbackHostIsRefused() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let r = Receiver(in: s, token: nil)
        let attacker = s.run(["upload", "--url", "http://127.attacker.example/upload"])
        #expect(attacker.status == 64)
        #expect(
            attacker.stderr == "vault: refusing to send documents unencrypted over http:// to 127.attacker.example\n"
                + "vault: hint: use https://, or --insecure-http on a network you trust\n")
        // 2130706433 is 127.0.0.1 to the resolver, but not a literal loopback address: refused
        // unless --insecure-http, and never with credentials (the traffic stays on this machine).
        let numeric = "http://2130706433:\(r.port)/upload"
        #expect(s.run(["upload", "--url", numeric]).status == 64)
        let withToken = s.run(["upload", "--url", numeric, "--insecure-http"], env: Fixtures.uploadToken)
        #expect(withToken.status == 64)
        #expect(
            withToken.stderr.hasPrefix("vault: refusing to send credentials unencrypted over http:// to 2130706433\n"))
        #expect(r.log.isEmpty, "nothing was sent")
        let insecure = s.run(["upload", "--url", numeric, "--insecure-http"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(insecure.stderr.hasPrefix("vault: warning: sending documents unencrypted over http:// to 2130706433\n"))
        #expect(r.log.count == 1 && r.log[0]["auth"] == nil)
        // Literal loopback needs no flag.
        let loopback = s.run(["upload", "--url", "http://localhost:\(r.port)/upload", "--new-run", "--no-credentials"])
        #expect(loopback.status == 0, "\(loopback.stderr)")
    }

    @Test func aRefusedConnectionFailsAtOnce() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        // A port nothing listens on: bind one, note it, close it.
        let (fd, port) = Fixtures.loopbackSocket()
        close(fd)
        let started = Date()
        let r = s.run(["upload", "--url", "http://127.0.0.1:\(port)/x", "--retries", "2", "--no-credentials"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 75)
        #expect(r.stderr.contains("failed 3 times, last: connection error: connection refused"), "\(r.stderr)")
        // Earlier, each attempt waited out a fixed 10 s connect timeout (30 s here); now the
        // client does not retry by itself and only the policy's short backoff remains.
        #expect(seconds < 15, "took \(seconds) s")
    }

    @Test func theTimeoutBoundsConnectingToASilentHost() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        // A local listener whose accept queue is full: the kernel drops further SYNs, so a
        // connect hangs as it would to a silent host, without any traffic leaving this machine.
        let (server, port) = Fixtures.loopbackSocket()
        #expect(listen(server, 0) == 0)
        let held = Fixtures.loopbackSocket(connectingTo: port).0
        defer { close(held); close(server) }
        let started = Date()
        let r = s.run([
            "upload", "--url", "http://127.0.0.1:\(port)/x", "--timeout", "2", "--retries", "1", "--no-credentials"
        ])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 75)
        #expect(r.stderr.contains("failed 2 times, last: could not connect within 2 s"), "\(r.stderr)")
        // Two attempts of 2 s and a backoff of at most 0.5 s; the fixed 10 s connect timeout took 20 s.
        #expect(seconds < 9, "took \(seconds) s")
    }
}
