import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What an upload knows before it sends, on the built binary: with no credentials it sends
/// nothing unless the destination is known to take none, and a run that never reached the
/// server leaves no interrupted upload behind.
@Suite(.blocking) struct UploadCredentialsCLITests {
    static let urlHint =
        """
        vault: hint: set VAULT_UPLOAD_TOKEN (or VAULT_UPLOAD_TOKEN_FILE, VAULT_UPLOAD_TOKEN_COMMAND, or \
        VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD); if the server takes none, add --no-credentials\n
        """

    @Test func anUploadWithNoCredentialsSendsNothingUnlessTheDestinationTakesNone() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 2)
        let office = Receiver(in: s)  // takes "test-token"
        // Refused before the password is asked (there is none here, and no terminal).
        let bare = s.run(["upload", "--url", office.url], env: ["VAULT_PASSWORD": nil])
        #expect(bare.status == 78, "\(bare.stderr)")
        #expect(
            bare.stderr == "vault: no upload credentials are set for \(office.url); nothing was sent\n" + Self.urlHint)
        let both = s.run(["upload", "--url", office.url, "--no-credentials"], env: Fixtures.uploadToken)
        #expect(both.status == 64 && both.stderr.hasPrefix("vault: --no-credentials, but credentials are set"))
        #expect(s.run("destination", "add", "office", office.url).status == 0)
        let named = s.run("upload", "--to", "office")
        #expect(named.status == 78, "\(named.stderr)")
        #expect(named.stderr.contains("'vault destination set office --token-file FILE'"), "\(named.stderr)")
        #expect(named.stderr.contains("'vault destination set office --no-credentials'"), "\(named.stderr)")
        #expect(office.log.isEmpty, "nothing reached the office")

        // A destination said to take none is sent none, and that is kept in the history.
        let open = Receiver(in: s, token: nil)
        let added = s.run("destination", "add", "lan", open.url, "--no-credentials")
        #expect(added.status == 0 && added.stderr.contains("it takes uploads without credentials"), "\(added.stderr)")
        let sent = s.run("upload", "--to", "lan")
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(Set(open.accepted) == Set(ids) && open.log.allSatisfy { $0["auth"] == nil })
        let list = Fixtures.json(s.run("destination", "--json"))["destinations"] as? [[String: Any]] ?? []
        #expect(list.first { $0["name"] as? String == "lan" }?["noCredentials"] as? Bool == true, "\(list)")
        #expect(list.first { $0["name"] as? String == "office" }?["noCredentials"] == nil)
        // Undone: it needs credentials again.
        #expect(s.run("destination", "set", "lan", "--credentials").status == 0)
        #expect(s.run("upload", "--to", "lan", "--new-run").status == 78)
        let contradiction = s.run("destination", "set", "lan", "--no-credentials", "--token-command", "printf t")
        #expect(contradiction.status == 64, "\(contradiction.stderr)")
        #expect(open.log.count == 1, "one batch, sent once")
    }

    @Test func aRunThatNeverReachedTheServerLeavesNoInterruptedUpload() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 2)
        let open = ["--no-credentials", "--retries", "1"]
        // A port nothing listens on: every attempt refused.
        let (fd, port) = Fixtures.loopbackSocket()
        close(fd)
        let refused = s.run(["upload", "--url", "http://127.0.0.1:\(port)/in"] + open)
        #expect(refused.status == 75 && refused.stderr.contains("connection refused"), "\(refused.stderr)")
        #expect(s.journalJobs.isEmpty, "no journal: nothing reached the server")
        // The same for an S3 endpoint nothing listens on.
        var store = UnreachableCLITests.storeVariables
        store["AWS_ENDPOINT_URL"] = "http://127.0.0.1:\(port)"
        let s3 = s.run(["upload", "--url", "s3://inbox/station", "--retries", "0"], env: store)
        #expect(s3.status == 75 && s3.stderr.contains("connection refused"), "\(s3.stderr)")
        #expect(s.journalJobs.isEmpty, "no journal for the store either")
        // Nothing at the path: 404 to the first batch.
        let missing = Receiver(in: s, token: nil, faults: #"[{"action": "status", "status": 404}]"#)
        let notFound = s.run(["upload", "--url", missing.url + "/typo"] + open)
        #expect(notFound.status == 69, "\(notFound.stderr)")
        let pathHint = "vault: hint: check the path in the URL (or the destination's, 'vault destination')\n"
        #expect(notFound.stderr.hasSuffix(pathHint), "\(notFound.stderr)")
        #expect(s.journalJobs.isEmpty)
        let quiet = s.run("status")
        #expect(quiet.status == 0 && !quiet.out.contains("interrupted"), "\(quiet.out)")
        // A run the server answered otherwise may have reached it: its journal is kept and counted.
        let busy = Receiver(in: s, token: nil, faults: #"[{"action": "status", "status": 503}]"#)
        let failed = s.run(["upload", "--url", busy.url, "--no-credentials", "--retries", "0"])
        #expect(failed.status == 75, "\(failed.stderr)")
        #expect(s.journalJobs.count == 1)
        #expect(s.run("status").out.contains("1 interrupted upload, 1 batch unconfirmed"))
    }
    /// What the review of 2026-11-29 found: a token of two lines was named in full by the HTTP
    /// client's error, a file of no certificates was kept as a CA file, a dry run ran the token
    /// command, and a destination could keep a token source while taking none.
    @Test func credentialsThatCannotBeSentAreRefusedUnshown() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let r = Receiver(in: s)
        s.write("two-lines.token", Array("test-token\n\n".utf8))
        let file = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_FILE": s.path("two-lines.token")])
        #expect(
            file.status == 64
                && file.stderr.hasPrefix(
                    "vault: the upload token holds a control character (a line break?); nothing was sent\n"),
            "\(file.stderr)")
        let variable = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN": "test-\u{1}token"])
        #expect(variable.status == 64 && variable.stderr.hasPrefix("vault: VAULT_UPLOAD_TOKEN holds a control"))
        for out in [file, variable] {
            #expect(!out.stderr.contains("test-token") && !out.stderr.contains("token\u{1}"))
        }
        #expect(r.log.isEmpty, "nothing was sent")
        // A dry run reads no credentials: a failing token command does not stop it.
        let dry = s.run(["upload", "--url", r.url, "--dry-run"], env: ["VAULT_UPLOAD_TOKEN_COMMAND": "false"])
        #expect(dry.status == 0, "\(dry.stderr)")
        // A CA file must hold a certificate; a destination taking none keeps no token source.
        #expect(s.run("destination", "add", "office", r.url).status == 0)
        let notPEM = s.run("destination", "set", "office", "--cacert", s.path("two-lines.token"))
        #expect(notPEM.status == 64 && notPEM.stderr.contains("holds no PEM certificate"), "\(notPEM.stderr)")
        #expect(s.run("destination", "set", "office", "--token-file", s.path("two-lines.token")).status == 0)
        #expect(s.run("destination", "set", "office", "--no-credentials").status == 0)
        let kept = Fixtures.json(s.run("destination", "--json"))["destinations"] as? [[String: Any]] ?? []
        #expect(kept.first?["tokenFile"] == nil && kept.first?["noCredentials"] as? Bool == true, "\(kept)")
        let relative = s.run("destination", "set", "office", "--token-command", "./token.sh")
        #expect(relative.status == 64 && relative.stderr.contains("by a relative path"), "\(relative.stderr)")
    }
}
