import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What operations needs of a receiver (issue 60, point 6): a renewed certificate served after
/// SIGHUP without a restart, a key that is not the certificate's refused at start, and a
/// bearer token for `/metrics`.
@Suite(.blocking) struct ReceiveOperationsCLITests {
    /// The subject of the certificate served at `url` (`CN = …`), read by openssl's client.
    static func servedSubject(_ s: Sandbox, _ url: String) -> String {
        let port = url.split(separator: ":").last.map(String.init) ?? ""
        let r = s.shell(
            "openssl s_client -connect 127.0.0.1:\(port) </dev/null 2>/dev/null | openssl x509 -noout -subject")
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A second certificate for 127.0.0.1 from the same CA, with its own key: `renewed.pem`,
    /// `renewed.key`.
    static func renew(_ s: Sandbox) throws {
        let made = s.shell(
            """
            set -e
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout renewed.key -out renewed.csr \
                -subj /CN=renewed 2>/dev/null
            openssl x509 -req -in renewed.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out renewed.pem -days 2 \
                -extfile ext.cnf 2>/dev/null
            """)
        try #require(made.status == 0, "\(made.stderr)")
    }

    @Test func aKeyThatIsNotTheCertificatesIsRefusedAtStartAndSIGHUPServesARenewedOne() throws {
        let s = Sandbox()
        try ReceiveCLITests.makePrivateCA(s)
        try Self.renew(s)
        let env: [String: String?] = ["VAULT_PASSWORD": ReceiverProcess.password]
        #expect(s.run(["init", "--vault", "office", "--kdf", "insecure-test"], env: env).status == 0)
        let mismatched = s.run(
            ["receive", "--vault", "office", "--listen", "127.0.0.1:0", "--tls-cert", "server.pem", "--tls-key",
             "renewed.key"], env: env)
        #expect(mismatched.status == 64)
        #expect(
            mismatched.stderr.contains("vault: the TLS key renewed.key is not the private key of the certificate "
                + "server.pem"), "\(mismatched.stderr)")
        #expect(!mismatched.stderr.contains("failedToLoadPrivateKey"))
        s.write("junk.pem", Array("not a certificate\n".utf8))
        let junk = s.run(
            ["receive", "--vault", "office", "--listen", "127.0.0.1:0", "--tls-cert", "junk.pem", "--tls-key",
             "server.key"], env: env)
        #expect(junk.status == 64 && junk.stderr.contains("it is not a PEM certificate"), "\(junk.stderr)")
        // Served with copies the test then replaces, as a renewal does.
        for (from, to) in [("server.pem", "live.pem"), ("server.key", "live.key")] {
            s.write(to, Fixtures.read(s.path(from)))
        }
        let office = try ReceiverProcess(
            s, extra: ["--tls-cert", s.path("live.pem"), "--tls-key", s.path("live.key")], create: false)
        #expect(Self.servedSubject(s, office.url) == "subject=CN = 127.0.0.1")
        // A renewal half done (a new certificate, the old key): refused, the pair in use stays.
        s.write("live.pem", Fixtures.read(s.path("renewed.pem")))
        kill(office.pid, SIGHUP)
        poll(every: 20_000) { office.log.contains("tls not reloaded") }
        #expect(office.log.contains("is not the private key of the certificate"), "\(office.log)")
        #expect(Self.servedSubject(s, office.url) == "subject=CN = 127.0.0.1")
        // Done: the next connection gets the renewed certificate, from the same process.
        s.write("live.key", Fixtures.read(s.path("renewed.key")))
        kill(office.pid, SIGHUP)
        poll(every: 20_000) { office.log.contains("tls reloaded") }
        #expect(Self.servedSubject(s, office.url) == "subject=CN = renewed")
        #expect(waitpid(office.pid, nil, WNOHANG) == 0, "the receiver stopped: \(office.log)")
        let health = Fixtures.curl(s, ["--cacert", "ca.pem", office.url + "/healthz"])
        #expect(health.status == 200)
    }

    @Test func metricsAnswerOnlyTheirBearerToken() throws {
        let s = Sandbox()
        s.write("metrics-token", Array("m3tr1cs-t0ken-of-the-office\n".utf8))
        let office = try ReceiverProcess(s, extra: ["--metrics-token-file", s.path("metrics-token")])
        let none = office.curl(token: nil, [office.url + "/metrics"])
        #expect(none.status == 401 && !none.body.contains("vault_receive"))
        #expect(office.curl(token: "wrong-token-of-the-office", [office.url + "/metrics"]).status == 401)
        let good = office.curl(token: "m3tr1cs-t0ken-of-the-office", [office.url + "/metrics"])
        #expect(good.status == 200 && good.body.contains("vault_receive_disk_full 0"))
        // The scheme in any case, as HTTP has it; the token exactly.
        let lower = office.curl(
            token: nil, ["-H", "Authorization: bearer m3tr1cs-t0ken-of-the-office", office.url + "/metrics"])
        #expect(lower.status == 200)
        let upper = office.curl(token: "M3TR1CS-T0KEN-OF-THE-OFFICE", [office.url + "/metrics"])
        #expect(upper.status == 401)
        // The token file is checked when the receiver starts.
        s.write("short-token", Array("short\n".utf8))
        let short = s.run(
            ["receive", "--vault", "office", "--listen", "127.0.0.1:0", "--metrics-token-file", "short-token"],
            env: office.env)
        #expect(short.status == 64 && short.stderr.contains("must be one line of 16 to 256"), "\(short.stderr)")
    }
}
