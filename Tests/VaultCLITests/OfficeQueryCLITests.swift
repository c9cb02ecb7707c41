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
        #expect(Set(rows.compactMap { $0["name"] as? String }) == ["inbox/report.pdf", "warehouse notes.txt"])
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
        let one = office.run("get", "--station", "warehouse", "-o", s.path("warehouse-only"))
        #expect(one.status == 0, "\(one.stderr)")
        #expect(Fixtures.read(s.path("warehouse-only/inbox/report.pdf")) == originals["warehouse/report"])
        // The selection options need a folder, and do not mix with names.
        #expect(office.run("get", "--station", "warehouse").status == 64)
        #expect(office.run("get", "--station", "warehouse", "inbox/report.pdf", "-o", s.path("x")).status == 64)
    }
}
