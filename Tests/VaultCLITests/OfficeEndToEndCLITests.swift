import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An office's week, end to end through the built binaries (issue 57): two stations with nested
/// folders, tags and odd names, one sealing to the office and one not, one with a 300 MiB
/// document; deliveries with signed receipts through a balancer (scripts/balance-proxy.py); the
/// receiver killed (SIGKILL) mid-batch and started again; the office's password changed while
/// the stations deliver; the office pushed to a store (SeaweedFS) and served by two receivers;
/// the stations freeing space with `remove --delivered-to`. At the end every document is at the
/// office exactly once, byte for byte, with its folder, tags and the station's id, and `audit`
/// is clean at both stations, on the store and on a clone of it.
@Suite(.blocking) struct OfficeEndToEndCLITests {
    /// A station's documents: its name at the office (the path under its inbox) and its bytes.
    struct Station {
        let name: String
        let vault: String
        let token: String
        var files: [String: [UInt8]] = [:]
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func anOfficeWeekDeliversEveryDocumentOnceWholeWithItsFolderTagsAndStationID() async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("week")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        let url = "s3://\(bucket)/office"
        var officeEnv = S3Fixtures.env(sw)
        officeEnv["VAULT_PASSWORD"] = ReceiverProcess.password
        officeEnv["XDG_CACHE_HOME"] = s.path("cache-office")

        // Monday: the office. An age identity for sealed deliveries, a receiver, two stations, and
        // a balancer in front (its second upstream is a port nobody listens on yet: passed over).
        #expect(s.run(["keygen", "--out", s.path("office.key")]).status == 0)
        let recipient = try SealedDeliveryCLITests.recipient(s, "office.key")
        let identity = ["--identity", s.path("office.key")]
        var receiver: ReceiverProcess? = try ReceiverProcess(s, extra: identity)
        let port = Int(receiver!.url.split(separator: ":").last ?? "") ?? 0
        let spare = Peer.freePort()
        let receiptKey = receiver!.run("receive", "key").out.trimmingCharacters(in: .whitespacesAndNewlines)
        var warehouse = Station(name: "warehouse", vault: "warehouse", token: receiver!.addStation("warehouse"))
        var desk = Station(name: "front-desk", vault: "desk", token: receiver!.addStation("front-desk"))
        let balancer = try PythonPeer(
            "balance-proxy.py", ["--upstream", receiver!.url, "--upstream", "http://127.0.0.1:\(spare)"], in: s)
        let office = balancer.url + "batches"

        func add(_ station: inout Station, _ files: [String: [UInt8]], tags: [String]) {
            let inbox = "inbox-\(station.vault)"
            for (name, bytes) in files {
                let path = s.path("\(inbox)/\(name)")
                try? FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                FileManager.default.createFile(atPath: path, contents: Data(bytes))
                station.files[name] = bytes
            }
            let r = s.run(
                ["add", "-r", s.path(inbox), "--vault", station.vault] + tags.flatMap { ["--tag", $0] })
            #expect(r.status == 0, "\(r.stderr)")
            try? FileManager.default.removeItem(atPath: s.path(inbox))
        }
        func upload(_ station: Station) -> CLIResult {
            s.run(
                ["upload", "--to", "office", "--vault", station.vault], env: ["VAULT_UPLOAD_TOKEN": station.token])
        }
        /// Sends until the office took everything (a station sends again what met a closed door).
        func deliver(_ station: Station) {
            var last = upload(station)
            Peer.poll(within: 180, every: 200_000) {
                if last.status == 0 { return true }
                last = upload(station)
                return last.status == 0
            }
            #expect(last.status == 0, "\(station.name): \(last.stderr)")
        }

        // The stations: the warehouse seals to the office, the front desk does not.
        for (station, sealed) in [(warehouse, true), (desk, false)] {
            #expect(s.run(["init", "--vault", station.vault, "--kdf", "insecure-test"]).status == 0)
            let sealing = sealed ? ["--recipient", recipient] : []
            let r = s.run(
                ["destination", "add", "office", office, "--receipt-key", receiptKey, "--vault", station.vault]
                    + sealing)
            #expect(r.status == 0, "\(r.stderr)")
        }
        add(
            &warehouse,
            [
                "2026/03/scan 1.pdf": .random(70_000, seed: 1),
                "clients/Acme GmbH/offer.pdf": .random(200_000, seed: 2),
                "clients/Acme GmbH/2026-03-01 invoice #7.pdf": .random(9_000, seed: 3),
                "Ümlaut & Co/notes (draft).txt": Array("Grüße aus dem Lager\n".utf8)
            ], tags: ["warehouse", "2026"])
        deliver(warehouse)
        add(
            &desk,
            ["letters/2026/march.txt": Array("Dear office,\n".utf8), "odd name 'quoted' [1].txt": .random(5, seed: 4)],
            tags: ["front"])
        deliver(desk)

        // Tuesday: a 300 MiB scan at the front desk; the receiver is killed while it takes it.
        try s.writeLarge("scan-300.tif", mebibytes: 300, seed: 5)
        let big = try Data(contentsOf: URL(fileURLWithPath: s.path("scan-300.tif")))
        let addedBig = s.run(
            ["add", s.path("scan-300.tif"), "--name", "big/scan-300.tif", "--tag", "front", "--vault", desk.vault])
        #expect(addedBig.status == 0, "\(addedBig.stderr)")
        desk.files["big/scan-300.tif"] = Array(big)
        try FileManager.default.removeItem(atPath: s.path("scan-300.tif"))
        let sending = s.spawn(
            ["upload", "--to", "office", "--vault", desk.vault], env: ["VAULT_UPLOAD_TOKEN": desk.token])
        let staging = s.path("office/staging")
        let midBatch = Peer.poll(within: 240, every: 50_000) {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []
            return files.contains { f in
                ((try? FileManager.default.attributesOfItem(atPath: staging + "/" + f)[.size]) as? UInt64 ?? 0)
                    > 64 << 20
            }
        }
        #expect(midBatch, "the receiver never had 64 MiB of the scan staged")
        kill(receiver!.pid, SIGKILL)
        waitpid(receiver!.pid, nil, 0)
        receiver = try ReceiverProcess(s, extra: identity, create: false, listen: "127.0.0.1:\(port)")
        _ = s.wait(sending)
        deliver(desk)
        #expect(receiver!.documents.count == 7, "\(receiver!.documents.count) documents at the office")

        // Wednesday: the office changes its password; the stations deliver meanwhile.
        let newPassword = "office password of wednesday"
        s.write("new-password", Array((newPassword + "\n").utf8))
        receiver = nil
        let changed = s.run(
            ["passwd", "--vault", "office", "--new-password-file", s.path("new-password")],
            env: ["VAULT_PASSWORD": ReceiverProcess.password])
        #expect(changed.status == 0, "\(changed.stderr)")
        add(&warehouse, ["2026/03/scan 2.pdf": .random(33_000, seed: 6)], tags: ["warehouse"])
        let closed = upload(warehouse)
        #expect(closed.status != 0, "the office was closed: \(closed.stderr)")
        receiver = try ReceiverProcess(
            s, extra: identity, create: false, listen: "127.0.0.1:\(port)",
            environment: ["VAULT_PASSWORD": newPassword])
        deliver(warehouse)
        officeEnv["VAULT_PASSWORD"] = newPassword

        // Thursday: the office moves to the store and two receivers serve it behind the balancer.
        receiver = nil
        let pushed = s.run(["push", url, "--vault", s.path("office")], env: officeEnv)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect(pushed.stderr.contains("went to the store"), "\(pushed.stderr)")
        var first = officeEnv, second = officeEnv
        first["XDG_CACHE_HOME"] = s.path("cache-r1")
        second["XDG_CACHE_HOME"] = s.path("cache-r2")
        let r1 = try ReceiverProcess(
            s, vault: "r1", extra: identity, listen: "127.0.0.1:\(port)", location: url, environment: first)
        let r2 = try ReceiverProcess(
            s, vault: "r2", extra: identity, listen: "127.0.0.1:\(spare)", location: url, environment: second)
        add(&warehouse, ["clients/Beta AG/order.pdf": .random(12_000, seed: 7)], tags: ["warehouse"])
        add(&desk, ["letters/2026/thursday.txt": Array("Thursday's letter\n".utf8)], tags: ["front"])
        deliver(warehouse)
        deliver(desk)
        #expect(r1.log.contains("result=200") && r2.log.contains("result=200"), "\(r1.log)\n\(r2.log)")

        // The stations' ids, then Friday: each frees its space once the office confirmed.
        var stationIDs: [String: String] = [:]
        for station in [warehouse, desk] {
            let listed = s.run(["list", "--json", "--vault", station.vault])
            let rows = (try? JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
            #expect(rows.count == station.files.count, "\(station.name): \(rows.count) documents")
            for row in rows {
                stationIDs[row["id"] as? String ?? ""] = station.name + ":" + (row["name"] as? String ?? "")
            }
            let removed = s.run(["remove", "--delivered-to", "office", "--vault", station.vault])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(s.run(["list", "--json", "--vault", station.vault]).out == "[]\n")
            let audit = s.run(["audit", "--vault", station.vault])
            #expect(audit.status == 0, "\(station.name): \(audit.out)\(audit.stderr)")
        }

        // The office: every document once, whole, with its folder, tags and station id.
        officeEnv["XDG_CACHE_HOME"] = s.path("cache-clone")
        let cloned = s.run(["clone", url, "--vault", s.path("clone")], env: officeEnv)
        #expect(cloned.status == 0, "\(cloned.stderr)")
        let listed = s.run(["list", "--json", "--vault", s.path("clone")], env: officeEnv)
        let rows = (try? JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
        let expected = warehouse.files.count + desk.files.count
        #expect(rows.count == expected, "\(rows.count) documents at the office, \(expected) sent")
        let got = s.run(["get", "--all", "-o", s.path("received"), "--vault", s.path("clone")], env: officeEnv)
        #expect(got.status == 0, "\(got.stderr)")
        for (station, tag) in [(warehouse, "warehouse"), (desk, "front")] {
            for (name, bytes) in station.files {
                let row = rows.first { $0["name"] as? String == name }
                #expect(row != nil, "\(name) is not at the office")
                #expect((row?["tags"] as? [String])?.contains(tag) == true, "\(name): \(row?["tags"] ?? "")")
                let file = s.path("received/\(name)")
                let kept = (try? Data(contentsOf: URL(fileURLWithPath: file))).map(Array.init)
                #expect(kept == bytes, "\(name) differs at the office")
            }
        }
        let batches = s.run(["receive", "--vault", url, "batches", "--json"], env: officeEnv).out
        let named = batches.components(separatedBy: #""stationID":""#).dropFirst().map { String($0.prefix(32)) }
        #expect(named.count == expected && Set(named) == Set(stationIDs.keys), "\(named) vs \(stationIDs)")
        #expect(batches.contains(#""sealed":true"#) && batches.contains(#""sealed":false"#))
        // What a station reported is found at the office by the station's id, on the store as in a folder.
        let offer = try #require(stationIDs.first { $0.value == "warehouse:clients/Acme GmbH/offer.pdf" }?.key)
        let byStationID = s.run(
            ["get", String(offer.prefix(12)), "-o", s.path("offer.pdf"), "--vault", url], env: officeEnv)
        #expect(byStationID.status == 0, "\(byStationID.stderr)")
        let offerBytes = try Data(contentsOf: URL(fileURLWithPath: s.path("offer.pdf")))
        #expect(Array(offerBytes) == warehouse.files["clients/Acme GmbH/offer.pdf"])
        for dir in ["clone"] {
            let audit = s.run(["audit", "--vault", s.path(dir)], env: officeEnv)
            #expect(audit.status == 0, "\(dir): \(audit.out)\(audit.stderr)")
        }
        let store = s.run(["audit", "--vault", url, "--deep"], env: officeEnv)
        #expect(store.status == 0, "\(store.out)\(store.stderr)")
    }
}
