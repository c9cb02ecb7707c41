import Foundation
import Testing
import VaultTestSupport

/// One back office, two homes (issue 57): what an office can do from a vault folder it can do
/// from a store served by receivers (SeaweedFS): operators and their pages, listing stations with
/// their last refusal, and listing batches from the command line.
@Suite(.blocking) struct OfficeHomesCLITests {
    /// `curl -F` of one document named `name` to `url`: the HTTP status and body.
    static func send(_ s: Sandbox, _ url: String, token: String, key: String, name: String) -> (Int, String) {
        let r = s.shell(
            "curl -sS -w '\\n%{http_code}' -H 'Authorization: Bearer \(token)' -H 'Idempotency-Key: \(key)' "
                + "-F 'file=@doc.txt;filename=\(name)' \(url)/batches")
        let lines = r.out.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func aStoresReceiversServeOperatorsPagesAndListStationsAndBatches() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("homes")
        defer { Task { await s3.shutdown() } }
        let url = "s3://\(bucket)/office"
        let s = Sandbox()
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache-admin")
        let token = SharedReceiveCLITests.officeOnStore(s, url: url, env: env)
        #expect(token.count > 20)

        // Operators are the store's: added, listed and removed from any machine.
        s.write("operator-password", Array((OperatorViewCLITests.operatorPassword + "\n").utf8))
        for name in ["alice", "bob"] {
            let added = s.run(
                [
                    "receive", "--vault", url, "operator", "add", name, "--new-password-file",
                    s.path("operator-password")
                ],
                env: env)
            #expect(added.status == 0 && added.stderr.contains("added operator \(name)"), "\(added.stderr)")
        }
        #expect(s.run(["receive", "--vault", url, "operator", "remove", "bob"], env: env).status == 0)
        let operators = s.run(["receive", "--vault", url, "operator", "list", "--json"], env: env)
        #expect(operators.status == 0 && operators.out == #"{"operators":["alice"]}"# + "\n", "\(operators)")
        let again = s.run(
            ["receive", "--vault", url, "operator", "add", "alice", "--new-password-file", s.path("operator-password")],
            env: env)
        #expect(again.status == 73 && again.stderr.contains("already an operator named 'alice'"), "\(again.stderr)")

        var serving = env
        serving["XDG_CACHE_HOME"] = s.path("cache-r1")
        let receiver = try ReceiverProcess(s, vault: "r1", location: url, environment: serving)
        s.write("doc.txt", Array("the warehouse's delivery note\n".utf8))
        let taken = Self.send(s, receiver.url, token: token, key: "k-1", name: "2026/03/note.txt")
        #expect(taken.0 == 200, "\(taken)")
        let refused = Self.send(s, receiver.url, token: token, key: "k-2", name: "../note.txt")
        #expect(refused.0 == 400 && refused.1.contains("header-malformed"), "\(refused)")

        // The pages: an operator of the store signs in at this receiver and sees the station, its
        // batch with the document's folder, and its last refusal.
        let (status, cookie) = OperatorViewCLITests.signIn(s, receiver.url)
        #expect(status == 303 && cookie != nil, "sign-in: \(status)")
        let stations = Fixtures.curl(s, ["-b", "vault_session=\(cookie ?? "")", receiver.url + "/ui/"])
        #expect(stations.status == 200 && stations.body.contains("desk"), "\(stations.status)")
        #expect(stations.body.contains("header-malformed"), "the station's last refusal is shown")
        let batches = Fixtures.curl(
            s, ["-b", "vault_session=\(cookie ?? "")", receiver.url + "/ui/batches"])
        #expect(batches.status == 200 && batches.body.contains("2026/03/note.txt"), "\(batches.body)")
        // The document this receiver took, and one another receiver of the store took after this
        // one started: each has its page and downloads byte for byte.
        var other = env
        other["XDG_CACHE_HOME"] = s.path("cache-r2")
        let second = try ReceiverProcess(s, vault: "r2", location: url, environment: other)
        s.write("doc.txt", Array("a second note, taken by the other receiver\n".utf8))
        #expect(Self.send(s, second.url, token: token, key: "k-3", name: "notes/second.txt").0 == 200)
        let ids = s.run(["receive", "--vault", url, "batches", "--json"], env: serving).out
            .components(separatedBy: #""id":""#).dropFirst().map { String($0.prefix(32)) }
        #expect(ids.count == 2, "\(ids)")
        let texts = ["the warehouse's delivery note\n", "a second note, taken by the other receiver\n"]
        for (id, text) in zip(ids, texts) {
            let page = Fixtures.curl(
                s, ["-b", "vault_session=\(cookie ?? "")", receiver.url + "/ui/documents/\(id)"])
            #expect(page.status == 200, "\(id): \(page.status) \(page.body)")
            let download = Fixtures.curl(
                s, ["-b", "vault_session=\(cookie ?? "")", receiver.url + "/ui/documents/\(id)/download"])
            #expect(download.status == 200 && download.body == text, "\(id): \(download.status) \(download.body)")
        }

        // The command line, from another machine: stations with their counts and last refusal,
        // batches with their documents' names.
        env["XDG_CACHE_HOME"] = s.path("cache-other")
        let list = s.run(["receive", "--vault", url, "station", "list", "--json"], env: env)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.out.contains(#""batches":2"#) && list.out.contains(#""documents":2"#), "\(list.out)")
        #expect(list.out.contains(#""lastRefusal":{"code":"header-malformed""#), "\(list.out)")
        let text = s.run(["receive", "--vault", url, "station", "list"], env: env)
        #expect(text.out.hasPrefix("desk  last seen 20") && text.out.contains("last refusal"), "\(text.out)")
        let listed = s.run(["receive", "--vault", url, "batches", "--json"], env: env)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.out.contains(#""key":"k-1""#), "\(listed.out)")
        #expect(listed.out.contains(#""name":"2026/03/note.txt""#), "\(listed.out)")
        #expect(!listed.out.contains("k-2"), "a refused batch is not listed")
        let none = s.run(["receive", "--vault", url, "batches", "--station", "nobody"], env: env)
        #expect(none.status == 3 && none.stderr.contains("there is no station named 'nobody'"), "\(none.stderr)")
        let shown = s.run(["receive", "--vault", url, "batches"], env: env).out
        #expect(shown.contains("  station's ") && shown.contains("  2026/03/note.txt\n"), "\(shown)")

        // `log` shows the receivers' log; `audit` checks what they took: each receipt against the
        // receivers' key and each document on the store, every chunk with --deep.
        let log = s.run(["log", "--vault", url], env: env)
        #expect(log.status == 0 && log.out.components(separatedBy: "  receive  ").count == 3, "\(log.out)")
        #expect(log.out.contains("2026/03/note.txt") && log.out.contains("operator bob removed"), "\(log.out)")
        let audit = s.run(["audit", "--vault", url, "--deep"], env: env)
        #expect(audit.status == 0, "\(audit.stderr)")
        // The pages' two downloads above are entries of the log too.
        let counted = "2 batches, 2 documents (every chunk), 2 downloads by operators: clean\n"
        #expect(audit.out.hasSuffix(counted), "\(audit.out)")
        #expect(log.out.contains("alice downloaded 1 document (document, from 127.0.0.1)"), "\(log.out)")
        // A document taken off the store is found, by id.
        try await s3.deleteObject(bucket: bucket, key: "office/objects/\(ids[1]).vlt")
        env["XDG_CACHE_HOME"] = s.path("cache-auditor")
        let cut = s.run(["audit", "--vault", url], env: env)
        #expect(cut.status == 65 && cut.out.contains("missing-object: \(ids[1])"), "\(cut.out)\(cut.stderr)")

        // What scripts read is what docs/schemas says.
        let outputs: [(schema: String, args: [String])] = [
            ("receive-stations", ["receive", "--vault", url, "station", "list", "--json"]),
            ("receive-batches", ["receive", "--vault", url, "batches", "--json"]),
            ("log", ["log", "--vault", url, "--json"]), ("audit-store", ["audit", "--vault", url, "--json"]),
        ]
        for (schema, args) in outputs {
            let r = s.run(args, env: env)
            #expect(r.out.hasPrefix("{") && r.out.hasSuffix("}\n"), "\(args): \(r.out)\(r.stderr)")
            s.write("\(schema).json", Array(r.out.utf8))
            let v = Fixtures.validate(s.path("\(schema).json"), schema: schema)
            #expect(v.status == 0, "\(schema): \(v.output)")
        }
    }
}
