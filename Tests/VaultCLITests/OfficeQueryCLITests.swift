import Foundation
import Testing
import VaultTestSupport

/// An office's documents found and fetched by station and time, as a script at the office runs
/// it: `vault list --station … --received-since … --json` and `vault get --station … -o DIR`,
/// with two stations that both sent an `inbox/report.pdf` (issue 60, points 1 and 2).
@Suite(.blocking) struct OfficeQueryCLITests {
    /// Two stations, each with its own `inbox/report.pdf` and one more document, delivered.
    static func office(_ s: Sandbox) throws -> (ReceiverProcess, originals: [String: [UInt8]]) {
        let office = try ReceiverProcess(s)
        var originals: [String: [UInt8]] = [:]
        for station in ["warehouse", "front-desk"] {
            let token = office.addStation(station)
            #expect(s.run(["init", "--vault", station, "--kdf", "insecure-test"]).status == 0)
            let report = [UInt8].random(3_000 + station.count, seed: UInt64(station.count))
            let other = [UInt8].random(700, seed: UInt64(station.count) + 9)
            s.write("\(station)-report", report)
            s.write("\(station)-other", other)
            originals["\(station)/report"] = report
            originals["\(station)/other"] = other
            let add = s.run(
                ["add", "--vault", station, "\(station)-report", "--name", "inbox/report.pdf", "--tag", "q4"])
            #expect(add.status == 0, "\(add.stderr)")
            let notes = s.run(["add", "--vault", station, "\(station)-other", "--name", "\(station) notes.txt"])
            #expect(notes.status == 0, "\(notes.stderr)")
            let up = s.run(
                ["upload", "--vault", station, "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
            #expect(up.status == 0, "\(up.stderr)")
        }
        return (office, originals)
    }

    static func json(_ r: CLIResult) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]]) ?? []
    }

    @Test func listByStationTimeAndTagNamesWhatEachStationSent() throws {
        let s = Sandbox()
        let (office, _) = try Self.office(s)
        let warehouse = office.run("list", "--station", "warehouse", "--received-since", "1h", "--json")
        #expect(warehouse.status == 0, "\(warehouse.stderr)")
        let rows = Self.json(warehouse)
        // Oldest batch first, each in its receipt's order.
        #expect(rows.compactMap { $0["name"] as? String } == ["inbox/report.pdf", "warehouse notes.txt"])
        Fixtures.write(s.path("out.json"), warehouse.stdout)
        let valid = Fixtures.validate(s.path("out.json"), schema: "list")
        #expect(valid.status == 0, "\(valid.output)")
        for row in rows {
            #expect(row["station"] as? String == "warehouse")
            #expect((row["received"] as? String)?.hasSuffix("Z") == true)
            #expect((row["batch"] as? String)?.isEmpty == false)
            #expect((row["stationID"] as? String)?.count == 32)
        }
        // --tag narrows within what the stations sent; both stations' reports carry q4.
        let tagged = Self.json(office.run("list", "--received-since", "24h", "--tag", "q4", "--json"))
        #expect(tagged.count == 2)
        #expect(Set(tagged.compactMap { $0["station"] as? String }) == ["warehouse", "front-desk"])
        #expect(tagged.allSatisfy { $0["name"] as? String == "inbox/report.pdf" })
        // Before a time long past: nothing, said on stderr, exit 0; the table shows the rest.
        let none = office.run("list", "--received-before", "2001-01-01")
        #expect(none.status == 0)
        #expect(none.out.isEmpty && none.stderr.contains("no documents match"))
        let table = office.run("list", "--station", "front-desk")
        #expect(table.status == 0)
        #expect(table.out.contains("front-desk notes.txt") && !table.out.contains("warehouse notes.txt"))
        // A station the office never knew is named as such (exit 3); a bad time is a usage error.
        let unknown = office.run("list", "--station", "garage")
        #expect(unknown.status == 3)
        #expect(unknown.stderr.contains("vault: there is no station named 'garage'"))
        let bad = office.run("list", "--received-since", "yesterday")
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--received-since needs a date"))
        // A station's own vault is no office: said, not an empty list.
        let station = s.run(["list", "--vault", "warehouse", "--station", "warehouse"])
        #expect(station.status == 64)
        #expect(station.stderr.contains("this vault is not a back office"))
    }

    @Test func getTheDaysDocumentsDecidingWhatTwoOfOneNameBecome() throws {
        let s = Sandbox()
        let (office, originals) = try Self.office(s)
        // By default two documents of one path stop the command before anything is written,
        // naming both and the option that writes both.
        let clash = office.run("get", "--received-since", "24h", "-o", s.path("today"))
        #expect(clash.status == 73, "\(clash.stderr)")
        #expect(clash.stderr.contains("would both be written to inbox/report.pdf; nothing was written"))
        #expect(clash.stderr.contains("--on-collision suffix"))
        #expect(!FileManager.default.fileExists(atPath: s.path("today")))
        // suffix: the older keeps the name, the newer is "report (2).pdf"; every byte as sent.
        let suffixed = office.run("get", "--received-since", "24h", "-o", s.path("today"), "--on-collision", "suffix")
        #expect(suffixed.status == 0, "\(suffixed.stderr)")
        #expect(Fixtures.read(s.path("today/inbox/report.pdf")) == originals["warehouse/report"])
        #expect(Fixtures.read(s.path("today/inbox/report (2).pdf")) == originals["front-desk/report"])
        #expect(Fixtures.read(s.path("today/front-desk notes.txt")) == originals["front-desk/other"])
        #expect(suffixed.stderr.contains("wrote 4 documents"))
        // id: each of the two gets its id's first 12 digits; one station's alone has no clash.
        let rows = Self.json(office.run("list", "--tag", "q4", "--json"))
        let byStation = Dictionary(
            uniqueKeysWithValues: Self.json(office.run("list", "--received-since", "24h", "--tag", "q4", "--json"))
                .compactMap { r in (r["station"] as? String).map { ($0, r["id"] as? String ?? "") } })
        #expect(rows.count == 2)
        let ids = office.run(
            "get", "--received-since", "24h", "--tag", "q4", "-o", s.path("ids"), "--on-collision", "id")
        #expect(ids.status == 0, "\(ids.stderr)")
        for (station, id) in byStation {
            let path = s.path("ids/inbox/report.\(id.prefix(12)).pdf")
            #expect(Fixtures.read(path) == originals["\(station)/report"], "\(path)")
        }
        // A link at a path a document would take, even one that leads nowhere: nothing is written.
        try FileManager.default.createDirectory(atPath: s.path("linked/inbox"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: s.path("linked/inbox/report.pdf"), withDestinationPath: s.path("nowhere/x"))
        let linked = office.run("get", "--station", "warehouse", "-o", s.path("linked"))
        #expect(linked.status == 73, "\(linked.stderr)")
        #expect(linked.stderr.contains("already exists; nothing was written"), "\(linked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("linked/warehouse notes.txt")))
        #expect(!FileManager.default.fileExists(atPath: s.path("nowhere")))
        let one = office.run("get", "--station", "warehouse", "-o", s.path("warehouse-only"))
        #expect(one.status == 0, "\(one.stderr)")
        #expect(Fixtures.read(s.path("warehouse-only/inbox/report.pdf")) == originals["warehouse/report"])
        // The selection options need a folder, and do not mix with names.
        #expect(office.run("get", "--station", "warehouse").status == 64)
        #expect(office.run("get", "--station", "warehouse", "inbox/report.pdf", "-o", s.path("x")).status == 64)
    }

    /// The documents page, searched and filtered as an operator does, and what it finds taken
    /// at once as a zip that Python's zipfile (not vault) reads back, byte for byte.
    // Long: an operator's session through every new page, then what the office recorded of it.
    @Test func theDocumentsPageFindsFiltersAndHandsOverAZipOfWhatItFound() throws {
        let s = Sandbox()
        let (office, originals) = try Self.office(s)
        office.addOperator()
        // Not signed in: the archive is not handed out.
        let anonymous = Fixtures.curl(s, [office.url + "/ui/archive"])
        #expect(anonymous.status == 303 && anonymous.headers["location"] == "/ui/login")
        let (status, session) = OperatorViewCLITests.signIn(s, office.url)
        #expect(status == 303)
        let cookie = ["-b", "vault_session=\(try #require(session))"]
        func page(_ path: String) -> (status: Int, headers: [String: String], body: String) {
            Fixtures.curl(s, cookie + [office.url + path])
        }
        let all = page("/ui/documents")
        #expect(all.status == 200)
        #expect(all.body.contains(#"<span id="count">4 documents</span>"#), "\(all.body)")
        #expect(all.body.contains("Page 1 of 1"))
        // A part of a name, in any case; a station and a part of a folder; days with nothing.
        let notes = page("/ui/documents?q=NOTES")
        #expect(notes.body.contains(">2 documents<") && notes.body.contains("warehouse notes.txt"))
        #expect(notes.body.contains("front-desk notes.txt") && !notes.body.contains("inbox/report.pdf"))
        let one = page("/ui/documents?station=warehouse&q=inbox%2F")
        #expect(one.body.contains(">1 document<") && one.body.contains("inbox/report.pdf"))
        #expect(one.body.contains(#"<option value="warehouse" selected>"#))
        // A value the page cannot read is said, never taken as no filter (the whole office).
        for path in [
            "/ui/documents?to=2026-13-45", "/ui/archive?to=2026-13-45", "/ui/archive?from=garbage",
            "/ui/archive?batch=abc", "/ui/archive?batch=1&batch=2", "/ui/archive?batch=1&q=report",
            "/ui/archive?id=nothex", "/ui/documents?sealed=maybe"
        ] {
            let refused = page(path)
            #expect(refused.status == 400, "\(path): \(refused.status)")
            #expect(refused.body.contains("The filter could not be read"), "\(path)")
            #expect(refused.headers["content-type"]?.hasPrefix("text/html") == true, "\(path)")
        }
        let past = page("/ui/documents?from=2001-01-01&to=2001-01-02")
        #expect(past.body.contains(">0 documents<") && past.body.contains("No documents match."))
        let tagged = page("/ui/documents?tag=q4")
        #expect(tagged.body.contains(">2 documents<"))
        // The tag filter follows a batch taken since, and a tag changed at the office.
        s.write("late", Array("late report".utf8))
        let token = office.addStation("late-desk")
        #expect(s.run(["init", "--vault", "late-desk", "--kdf", "insecure-test"]).status == 0)
        #expect(s.run(["add", "--vault", "late-desk", "late", "--name", "late-desk.pdf", "--tag", "q4"]).status == 0)
        let late = s.run(
            ["upload", "--vault", "late-desk", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(late.status == 0, "\(late.stderr)")
        #expect(page("/ui/documents?tag=q4").body.contains(">3 documents<"))
        #expect(office.run("tag", "late-desk.pdf", "--remove", "q4", "--add", "urgent").status == 0)
        #expect(page("/ui/documents?tag=q4").body.contains(">2 documents<"))
        #expect(page("/ui/documents?tag=urgent").body.contains(">1 document<"))
        // The filter's archive: both reports, the later one made unique, each byte as sent.
        let zip = page("/ui/archive?q=report")
        #expect(zip.status == 200)
        #expect(zip.headers["content-type"] == "application/zip")
        #expect(zip.headers["content-disposition"]?.hasPrefix("attachment; filename=\"vault-documents-") == true)
        let read = s.shell(
            #""$PY" -c 'import zipfile,sys,json; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; "#
                + #"print(json.dumps(z.namelist())); z.extractall(sys.argv[2])' curl.body unzipped"#,
            env: ["PY": Peer.python])
        #expect(read.status == 0, "\(read.stderr)")
        let names = read.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(names == #"["inbox/report.pdf", "inbox/report (2).pdf"]"#)
        #expect(Fixtures.read(s.path("unzipped/inbox/report.pdf")) == originals["warehouse/report"])
        #expect(Fixtures.read(s.path("unzipped/inbox/report (2).pdf")) == originals["front-desk/report"])
        // A batch, its archive, a station's page; what does not exist is a 404.
        let batch = page("/ui/batches/1")
        #expect(batch.status == 200 && batch.body.contains("warehouse notes.txt"))
        #expect(batch.body.contains(#"href="/ui/archive?batch=1""#))
        #expect(page("/ui/archive?batch=1").status == 200)
        #expect(page("/ui/batches/4").status == 404 && page("/ui/batches/x").status == 404)
        let station = page("/ui/stations/front-desk")
        #expect(station.status == 200 && station.body.contains(#"href="/ui/documents?station=front-desk""#))
        #expect(page("/ui/stations/garage").status == 404)
        #expect(page("/ui/archive?station=garage").status == 404)
        // Each download is a record of the office's history, before a byte was sent: by whom,
        // from where, which documents; the log, the document's page and the audit show them.
        let log = office.run("log")
        #expect(log.out.contains("alice downloaded 2 documents (archive, from 127.0.0.1)"), "\(log.out)")
        let rows = Self.json(office.run("list", "--station", "warehouse", "--json"))
        let report = try #require(rows.first { $0["name"] as? String == "inbox/report.pdf" }?["id"] as? String)
        let single = page("/ui/documents/\(report)/download")
        #expect(single.status == 200)
        #expect(Fixtures.sha(Fixtures.read(s.path("curl.body"))) == Fixtures.sha(originals["warehouse/report"] ?? []))
        let shown = page("/ui/documents/\(report)")
        #expect(shown.body.contains("by alice from 127.0.0.1 (alone)"), "\(shown.body)")
        #expect(shown.body.contains("by alice from 127.0.0.1 (in an archive of 2)"))
        let json = office.run("log", "--json", "--doc", String(report.prefix(8)))
        #expect(json.out.contains(#""op":"download""#), "\(json.out)")
        let audit = office.run("audit")
        #expect(audit.status == 0, "\(audit.stderr)")
        #expect(audit.out.contains(", 3 downloads by operators: clean"), "\(audit.out)")
        // A document damaged on the office's disk: the archive stops short of its length (curl:
        // exit 18), so no complete archive holds a byte that did not authenticate.
        let object = s.path("office/objects/\(report).vlt")
        var bytes = Fixtures.read(object)
        bytes[bytes.count - 40] ^= 0x01
        Fixtures.write(object, bytes)
        let cut = s.shell(
            "curl -sS -b \"$COOKIE\" -o cut.zip \"$URL/ui/archive?q=report\"; echo \"curl=$?\"",
            env: ["COOKIE": "vault_session=\(session ?? "")", "URL": office.url])
        #expect(cut.out.contains("curl=18"), "\(cut.out) \(cut.stderr)")
        let broken = s.shell(#""$PY" -c 'import zipfile; zipfile.ZipFile("cut.zip")'"#, env: ["PY": Peer.python])
        #expect(broken.status != 0)
    }
}
