import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The operator's view of `vault receive` (docs/RECEIVE.md, "The operator's view"): signed in
/// through Debian's Chromium driven by Selenium (scripts/operator-browser.py), and refused what
/// a browser must not be able to do, through curl.
@Suite(.blocking) struct OperatorViewCLITests {
    static let operatorPassword = "correct horse operator"

    /// An operator added with --new-password-file, and a station.
    static func office(_ s: Sandbox) throws -> (ReceiverProcess, token: String) {
        let office = try ReceiverProcess(s)
        s.write("operator-password", Array((operatorPassword + "\n").utf8))
        let r = office.run("receive", "operator", "add", "alice", "--new-password-file", s.path("operator-password"))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("added operator alice"))
        return (office, office.addStation("front-desk"))
    }

    /// Signs in with curl (the sign-in page's CSRF cookie and field); returns the session cookie.
    static func signIn(_ s: Sandbox, _ url: String, password: String = operatorPassword) -> (Int, String?) {
        try? FileManager.default.removeItem(atPath: s.path("jar"))
        let page = Fixtures.curl(s, ["-c", "jar", url + "/ui/login"])
        let csrf = page.body.range(of: #"name="csrf" value=""#).map { page.body[$0.upperBound...].prefix(64) }
        let r = Fixtures.curl(
            s,
            [
                "-b", "jar", "-c", "jar", "--data-urlencode", "csrf=\(csrf ?? "")", "--data-urlencode", "name=alice",
                "--data-urlencode", "password=\(password)", url + "/ui/login"
            ])
        let cookie = r.headers["set-cookie"]?.split(separator: "\n").first { $0.hasPrefix("vault_session=") }
            .map { String($0.dropFirst("vault_session=".count).prefix(64)) }
        return (r.status, cookie)
    }

    @Test func anOperatorSignsInSeesABatchArriveDownloadsItAndIsSignedOut() throws {
        for program in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            #expect(FileManager.default.isExecutableFile(atPath: program), "\(program) is missing: run 'make peers'")
        }
        let s = Sandbox()
        s.initVault()
        let name = #"scan "7" <draft> ½.pdf"#
        let bytes = [UInt8].random(300_001, seed: 77)
        s.write("doc", bytes)
        #expect(s.run("add", "doc", "--name", name).status == 0)
        let (office, token) = try Self.office(s)
        try FileManager.default.createDirectory(atPath: s.path("downloads"), withIntermediateDirectories: true)
        let r = s.shell(
            #""$PEER_PYTHON" "$SCRIPT" "$RX_URL" alice "$DOCUMENT" "$PWD/downloads" "$PWD/operator-view.png""#,
            env: [
                "PEER_PYTHON": Peer.python,
                "SCRIPT": Peer.repository.appendingPathComponent("scripts/operator-browser.py").path,
                "RX_URL": office.url, "DOCUMENT": name, "OPERATOR_PASSWORD": Self.operatorPassword,
                "VAULT_UPLOAD_TOKEN": token, "VAULT_BIN": Sandbox.binary,
                "UPLOAD_COMMAND": #""$VAULT_BIN" upload --url "$RX_URL/batches" -q"#
            ])
        #expect(r.status == 0, "\(r.out) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.out)")
        // Sent to sign in, then the station with nothing received yet.
        #expect(seen["firstPage"] as? String == "/ui/login")
        #expect(seen["stations"] as? [String] == ["front-desk"])
        #expect(seen["batchesBefore"] as? [String] == ["0"])
        let cookie = try #require(seen["cookie"] as? [String: Any])
        #expect(cookie["httpOnly"] as? Bool == true && cookie["sameSite"] as? String == "Strict")
        #expect(cookie["secure"] as? Bool == false && cookie["path"] as? String == "/ui")
        // The batch appeared after the upload, the document's name shown as it is.
        #expect(seen["upload"] as? Int == 0)
        #expect(seen["documents"] as? [String] == [name])
        #expect(seen["title"] as? String == name)
        // Downloaded byte for byte.
        let files = try #require(seen["downloaded"] as? [String])
        #expect(files.count == 1)
        let downloaded = try Data(contentsOf: URL(fileURLWithPath: s.path("downloads/" + (files.first ?? ""))))
        #expect(Array(downloaded) == bytes)
        // Every page fits a phone's 390-pixel viewport.
        let fits = try #require(seen["fits"] as? [String: [Int]])
        #expect(Set(fits.keys) == ["stations", "batches", "document"])
        for (page, widths) in fits { #expect(widths.first == 390 && widths.last ?? 0 <= 390, "\(page): \(widths)") }
        // Signed out: the browser is sent to sign in; the old session's cookie opens nothing.
        #expect(seen["afterSignOut"] as? String == "/ui/login")
        #expect(seen["signInFormAfterSignOut"] as? Bool == true)
        let old = try #require(seen["session"] as? String)
        let replay = Fixtures.curl(s, ["-H", "Cookie: vault_session=\(old)", office.url + "/ui/batches"])
        #expect(replay.status == 303 && replay.headers["location"] == "/ui/login")
        #expect(!replay.body.contains("front-desk"))
        // The screenshot (a phone-width PNG), kept as the test's artifact.
        let png = try Data(contentsOf: URL(fileURLWithPath: s.path("operator-view.png")))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(png.count > 24 && png[16..<20].reduce(0) { $0 << 8 | Int($1) } == 390)
        let artifacts = Peer.repository.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: artifacts.appendingPathComponent("operator-view.png"))
        try png.write(to: artifacts.appendingPathComponent("operator-view.png"))
    }

    /// Under TLS (a certificate from a private CA made here by openssl): the cookies are
    /// `Secure`, and a form posted from the `http` origin of the same host and port is refused.
    @Test func underTLSCookiesAreSecureAndOnlyAnHTTPSOriginMayPost() throws {
        let s = Sandbox()
        try ReceiveCLITests.makePrivateCA(s)
        let office = try ReceiverProcess(
            s, extra: ["--tls-cert", s.path("server.pem"), "--tls-key", s.path("server.key")])
        #expect(office.url.hasPrefix("https://127.0.0.1:"))
        s.write("operator-password", Array((Self.operatorPassword + "\n").utf8))
        #expect(
            office.run("receive", "operator", "add", "alice", "--new-password-file", s.path("operator-password")).status
                == 0)
        let tls = ["--cacert", s.path("ca.pem")]
        let page = Fixtures.curl(s, tls + ["-c", "jar", office.url + "/ui/login"])
        #expect(page.status == 200 && page.headers["set-cookie"]?.contains("; Secure") == true, "\(page.headers)")
        let csrf = page.body.range(of: #"name="csrf" value=""#).map { String(page.body[$0.upperBound...].prefix(64)) }
        let form = [
            "-b", "jar", "--data-urlencode", "csrf=\(csrf ?? "")", "--data-urlencode", "name=alice", "--data-urlencode",
            "password=\(Self.operatorPassword)"
        ]
        let plainOrigin = "http://" + office.url.dropFirst("https://".count)
        let refused = Fixtures.curl(s, tls + form + ["-H", "Origin: \(plainOrigin)", office.url + "/ui/login"])
        #expect(refused.status == 403 && refused.headers["set-cookie"] == nil)
        let signed = Fixtures.curl(s, tls + form + ["-H", "Origin: \(office.url)", office.url + "/ui/login"])
        #expect(signed.status == 303, "\(signed.body)")
        let session = signed.headers["set-cookie"]?.split(separator: "\n").first { $0.hasPrefix("vault_session=") }
        #expect(
            session.map { $0.contains("; Secure") && $0.contains("HttpOnly") && $0.contains("SameSite=Strict") }
                == true,
            "\(String(describing: session))")
    }

    /// The documents page (its rows and its search field, which echoes the query), a batch's
    /// page and an archive show `hostile` escaped, under the same headers as every page.
    static func newPagesEscape(_ hostile: String, _ s: Sandbox, _ url: String, _ withSession: [String]) throws {
        let query = "q=" + DocumentsPage.encoded(hostile)
        for path in ["/ui/documents", "/ui/documents?" + query, "/ui/batches/1"] {
            let page = Fixtures.curl(s, withSession + [url + path])
            #expect(page.status == 200, "\(path)")
            let escaped = "&lt;img src=x onerror=alert(1)&gt;"
            #expect(!page.body.contains("<img"), "\(path)")
            #expect(page.body.contains(escaped), "\(path)")
            let quoteAndMark = "x\"" + "\u{301}"
            #expect(!page.body.contains(quoteAndMark), "\(path)")
            #expect(page.headers["content-security-policy"]?.hasPrefix("default-src 'none'") == true)
        }
        let zip = Fixtures.curl(s, withSession + [url + "/ui/archive?" + query])
        #expect(zip.status == 200 && zip.headers["content-type"] == "application/zip")
        #expect(zip.headers["x-content-type-options"] == "nosniff")
    }

    // Long: one hostile session from start to end, each refusal in its turn.
    @Test func theViewRefusesWhatABrowserMustNotBeAbleToDo() throws {
        let s = Sandbox()
        s.initVault()
        // A name a station controls, made to break out of the page: tags, and a quote that a
        // combining mark follows (one grapheme: an escaper that looks at characters misses it).
        let hostile = "x\"\u{301}<img src=x onerror=alert(1)>.pdf"
        s.write("doc", Array("confidential scan".utf8))
        #expect(s.run("add", "doc", "--name", hostile, "--type", "text/html").status == 0)
        let (office, token) = try Self.office(s)
        let upload = s.run(["upload", "--url", office.url + "/batches", "-q"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(upload.status == 0, "\(upload.stderr) \(office.log)")
        let id = try #require(office.documents.first?["id"] as? String)
        let url = office.url

        // Without a session, every page and the download send the browser to sign in.
        let pages = [
            "/ui/", "/ui/batches", "/ui/documents/\(id)", "/ui/documents/\(id)/download", "/ui/documents",
            "/ui/documents?q=x", "/ui/batches/1", "/ui/stations/front-desk", "/ui/alerts", "/ui/archive",
            "/ui/archive?batch=1", "/ui/archive?id=\(id)"
        ]
        for path in pages {
            let r = Fixtures.curl(s, [url + path])
            #expect(r.status == 303 && r.headers["location"] == "/ui/login", "\(path): \(r.status)")
            #expect(!r.body.contains("confidential"))
        }
        // Signing in needs the sign-in page's CSRF cookie, and a post from this site.
        let noCookie = Fixtures.curl(
            s,
            [
                "--data-urlencode", "csrf=" + String(repeating: "a", count: 64), "--data-urlencode", "name=alice",
                "--data-urlencode", "password=\(Self.operatorPassword)", url + "/ui/login"
            ])
        #expect(noCookie.status == 403 && noCookie.headers["set-cookie"]?.contains("vault_session") != true)
        for header in ["Origin: http://evil.example", "Origin: null", "Sec-Fetch-Site: cross-site"] {
            let r = Fixtures.curl(s, ["-H", header, "--data-urlencode", "name=alice", url + "/ui/login"])
            #expect(r.status == 403, "\(header)")
        }
        let wrong = Self.signIn(s, url, password: "not it")
        #expect(wrong.0 == 401 && wrong.1 == nil)
        let (status, session) = Self.signIn(s, url)
        #expect(status == 303)
        let cookie = try #require(session)
        let withSession = ["-H", "Cookie: vault_session=\(cookie)"]

        // The hostile name is shown escaped, every scalar of it.
        let batches = Fixtures.curl(s, withSession + [url + "/ui/batches"])
        #expect(batches.status == 200)
        let html = batches.body
        #expect(!html.contains("<img") && html.contains("&lt;img src=x onerror=alert(1)&gt;"))
        #expect(html.contains("x&quot;\u{301}&lt;"))
        #expect(batches.headers["content-security-policy"]?.hasPrefix("default-src 'none'") == true)
        #expect(batches.headers["x-frame-options"] == "DENY" && batches.headers["cache-control"] == "no-store")
        try Self.newPagesEscape(hostile, s, url, withSession)
        // The download is an attachment of octets, whatever content type the station claimed.
        let download = Fixtures.curl(s, withSession + [url + "/ui/documents/\(id)/download"])
        #expect(download.status == 200 && download.body == "confidential scan")
        #expect(download.headers["content-type"] == "application/octet-stream")
        #expect(download.headers["x-content-type-options"] == "nosniff")
        #expect(download.headers["content-disposition"]?.hasPrefix("attachment; filename=\"x_") == true)
        // Signing out needs the session's CSRF token; without it the session lives on.
        let forged = Fixtures.curl(s, withSession + ["-X", "POST", url + "/ui/logout"])
        #expect(forged.status == 403)
        // So does acknowledging an alert.
        let ack = Fixtures.curl(s, withSession + ["--data", "alert=1", url + "/ui/alerts/acknowledge"])
        #expect(ack.status == 403)
        #expect(Fixtures.curl(s, withSession + [url + "/ui/"]).status == 200)
        // A request for a host name the receiver was not given (DNS rebinding) gets nothing.
        let port = String(url.split(separator: ":").last ?? "")
        for path in ["/ui/", "/ui/login"] {
            #expect(Fixtures.curl(s, withSession + ["-H", "Host: rebound.example:\(port)", url + path]).status == 421)
        }
        // An operator removed and added again (a new password) while the receiver runs: the
        // sessions of before are over, and only the new password signs in.
        #expect(office.run("receive", "operator", "remove", "alice").status == 0)
        s.write("new-password", Array("a new operator password\n".utf8))
        let readd = office.run("receive", "operator", "add", "alice", "--new-password-file", s.path("new-password"))
        #expect(readd.status == 0, "\(readd.stderr)")
        let removed = Fixtures.curl(s, withSession + [url + "/ui/"])
        #expect(removed.status == 303 && removed.headers["location"] == "/ui/login")
        #expect(Self.signIn(s, url).0 == 401)
        #expect(Self.signIn(s, url, password: "a new operator password").0 == 303)
        // vault log names the operator's changes, never the password's hash.
        let log = office.run("log", "--json")
        #expect(log.out.contains(#"\"name\":\"alice\""#) && !log.out.contains("$argon2id$"))
        // Ten failed sign-ins from one address in a minute (two above), then 429 whatever the password.
        for _ in 0..<8 { #expect(Self.signIn(s, url, password: "guess").0 == 401) }
        let blocked = Self.signIn(s, url)
        #expect(blocked.0 == 429 && blocked.1 == nil)
    }
}

/// Query values as the tests send them: letters and digits as they are, every other byte `%XX`.
enum DocumentsPage {
    static func encoded(_ text: String) -> String {
        text.utf8.map { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                ? String(UnicodeScalar(b)) : String(format: "%%%02X", b)
        }.joined()
    }
}
