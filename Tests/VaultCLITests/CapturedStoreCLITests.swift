import Foundation
import Testing
import VaultS3
import VaultTestSupport

/// What a capture-only station captured, kept on a store (SeaweedFS): a receiver serving the store
/// puts each pair there as two objects, and the office opens them with its identity from the
/// store in place, from a clone and from a vault that pulls them; the store holds no plaintext
/// and nothing that opens it; removals and pushes carry both objects.
@Suite(.blocking) struct CapturedStoreCLITests {
    // Long: one story told in order, each step on what the ones before left.
    @Test func aStoreKeepsWhatWasCapturedAndTheOfficeOpensItFromThere() async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("capstore")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        let url = "s3://\(bucket)/office"
        func env(_ cache: String) -> [String: String?] {
            var e = S3Fixtures.env(sw)
            e["VAULT_PASSWORD"] = ReceiverProcess.password
            e["XDG_CACHE_HOME"] = s.path(cache)
            return e
        }
        let (ids, _) = try CaptureStationCLITests.station(s)
        let originals = CapturedDeliveryCLITests.originals
        #expect(CaptureAttackCLITests.writeWindows(s, originals.map { ($0.name, $0.bytes) }) > 40)

        // The office lives on the store; a receiver serves it, holding no identity.
        #expect(s.run(["init", "--vault", s.path("setup"), "--kdf", "insecure-test"], env: env("c-admin")).status == 0)
        #expect(s.run(["--vault", s.path("setup"), "push", url, "-q"], env: env("c-admin")).status == 0)
        let token = s.run(["receive", "--vault", url, "station", "add", "desk"], env: env("c-admin")).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let key = s.run(["receive", "--vault", url, "key"], env: env("c-admin")).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let receiver = try ReceiverProcess(s, vault: "r", location: url, environment: env("c-receiver"))
        #expect(s.run("destination", "add", "office", receiver.url + "/batches", "--receipt-key", key).status == 0)
        let up = s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        #expect(s.run("audit", "--require-receipts", "office").status == 0)

        // Two objects a document, and not a window of any document's plaintext among them.
        let keys = try await s3.listObjects(bucket: bucket, prefix: "office/objects/", pageSize: 1000).map(\.key)
        #expect(keys.filter { $0.hasSuffix(".meta.vlt") }.count == ids.count, "\(keys)")
        #expect(keys.count == 2 * ids.count, "\(keys)")
        let mirror = s.path("store-copy")
        try FileManager.default.createDirectory(atPath: mirror, withIntermediateDirectories: true)
        for k in try await s3.listObjects(bucket: bucket, prefix: "office/", pageSize: 1000).map(\.key) {
            let bytes = try await s3.object(bucket: bucket, key: k)
            try Data(bytes).write(to: URL(fileURLWithPath: mirror + "/" + k.replacingOccurrences(of: "/", with: "_")))
        }
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "in").count > 0, "the check finds what is there")
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "store-copy") == [], "the store")

        // Read in place: listed as sealed, refused without the identity, opened with it.
        let listed = s.run(["--vault", url, "list", "--json"], env: env("c-inplace"))
        #expect(listed.status == 0, "\(listed.stderr)")
        let stored = (try? JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]) ?? []
        #expect(stored.count == ids.count && stored.allSatisfy { $0["name"] as? String == "(sealed)" }, "\(stored)")
        let one = try #require(stored.first?["id"] as? String)
        let refused = s.run(["--vault", url, "get", one, "-o", s.path("refused")], env: env("c-inplace"))
        #expect(refused.status == 64 && refused.stderr.contains("--identity"), "\(refused.stderr)")
        func expectOpened(_ vault: String, cache: String, into folder: String) {
            let got = s.run(
                ["--vault", vault, "get", "--all", "-o", s.path(folder), "--identity", s.path("office.key")],
                env: env(cache))
            #expect(got.status == 0, "\(vault): \(got.stderr)")
            for d in originals {
                let bytes = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("\(folder)/\(d.name)"))))
                #expect(bytes.map(CapturedDeliveryCLITests.hex) == CapturedDeliveryCLITests.hex(d.bytes), "\(d.name)")
            }
            let verified = s.run(["--vault", vault, "verify"], env: env(cache))
            #expect(verified.status == 0, "\(vault): \(verified.stderr)")
        }
        expectOpened(url, cache: "c-inplace", into: "in-place")

        // The store receiver's operator pages serve each pair's files as the store keeps them.
        s.write("operator-password", Array((OperatorViewCLITests.operatorPassword + "\n").utf8))
        let op = s.run(
            ["receive", "--vault", url, "operator", "add", "alice", "--new-password-file", s.path("operator-password")],
            env: env("c-admin"))
        #expect(op.status == 0, "\(op.stderr)")
        let (status, session) = OperatorViewCLITests.signIn(s, receiver.url)
        #expect(status == 303)
        let cookie = ["-H", "Cookie: vault_session=\(try #require(session))"]
        for (path, key) in [("download", "\(one).vlt"), ("metadata", "\(one).meta.vlt")] {
            let got = Fixtures.curl(s, cookie + [receiver.url + "/ui/documents/\(one)/\(path)"])
            #expect(got.status == 200, "\(path)")
            let body = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("curl.body"))))
            let kept = try await s3.object(bucket: bucket, key: "office/objects/\(key)")
            #expect(path == "download" ? body == kept : kept.count > body.count && kept.suffix(body.count) == body[...])
        }

        // A clone, and the office's own folder vault by a pull, take each pair in, checked.
        let cloned = s.run(["clone", url, "--vault", s.path("copy"), "-q"], env: env("c-admin"))
        #expect(cloned.status == 0, "\(cloned.stderr)")
        expectOpened(s.path("copy"), cache: "c-admin", into: "from-clone")
        let pulled = s.run(["--vault", s.path("setup"), "pull", url, "-q"], env: env("c-admin"))
        #expect(pulled.status == 0, "\(pulled.stderr)")
        expectOpened(s.path("setup"), cache: "c-admin", into: "from-pull")

        // A removal pushed from the clone takes both objects off the store.
        #expect(s.run(["--vault", s.path("copy"), "remove", one], env: env("c-admin")).status == 0)
        let pushed = s.run(["--vault", s.path("copy"), "push", "-q"], env: env("c-admin"))
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let left = try await s3.listObjects(bucket: bucket, prefix: "office/objects/", pageSize: 1000).map(\.key)
        #expect(left.count == 2 * (ids.count - 1) && !left.contains { $0.contains(one) }, "\(left)")
    }

    /// The attack of CaptureAttackCLITests on the store: 100 documents (odd names, tags, one of
    /// 50 MB) captured and taken by a receiver serving a store; with the store's every object and
    /// the office's password, no 32-byte window of any document is found and nothing opens
    /// without the identity; with it, a clone opens every document byte for byte.
    @Test func aStoreHoldsNoWindowOfAHundredCapturedDocuments() async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("capattack")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        let url = "s3://\(bucket)/office"
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache")
        #expect(s.shell("age-keygen -o office.key 2>/dev/null").status == 0)
        s.write("office.recipients", Array("\(try SealedDeliveryCLITests.recipient(s, "office.key"))\n".utf8))
        #expect(s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("office.recipients")).status == 0)
        let docs = try CaptureAttackCLITests.documents(s)
        #expect(s.run("add", "-r", s.path("in"), "--tag", "scanned").status == 0)
        #expect(CaptureAttackCLITests.writeWindows(s, docs) > 40_000)
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "in").count == 100)

        #expect(s.run(["init", "--vault", s.path("setup"), "--kdf", "insecure-test"], env: env).status == 0)
        #expect(s.run(["--vault", s.path("setup"), "push", url, "-q"], env: env).status == 0)
        let token = s.run(["receive", "--vault", url, "station", "add", "desk"], env: env).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let receiver = try ReceiverProcess(s, vault: "r", location: url, environment: env)
        let up = s.run(["upload", "--url", receiver.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        Peer.stop(receiver.pid)

        let keys = try await s3.listObjects(bucket: bucket, prefix: "office/", pageSize: 1000).map(\.key)
        #expect(keys.filter { $0.hasSuffix(".meta.vlt") }.count == 100)
        try FileManager.default.createDirectory(atPath: s.path("store-copy"), withIntermediateDirectories: true)
        for k in keys {
            let bytes = try await s3.object(bucket: bucket, key: k)
            try Data(bytes).write(
                to: URL(fileURLWithPath: s.path("store-copy/" + k.replacingOccurrences(of: "/", with: "_"))))
        }
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "store-copy") == [], "the store")
        let listed = s.run(["--vault", url, "list", "--json"], env: env)
        let ids = ((try? JSONSerialization.jsonObject(with: Data(listed.stdout))) as? [[String: Any]] ?? [])
            .compactMap { $0["id"] as? String }
        #expect(ids.count == 100)
        for id in ids.prefix(3) {
            let r = s.run(["--vault", url, "get", id, "-o", s.path("stolen-\(id)")], env: env)
            #expect(r.status == 64, "\(r.stderr)")
        }
        #expect(s.run(["clone", url, "--vault", s.path("copy"), "-q"], env: env).status == 0)
        #expect(CaptureAttackCLITests.filesHoldingWindows(s, "copy") == [], "a clone of the store")
        let got = s.run(
            ["--vault", s.path("copy"), "get", "--all", "-o", s.path("opened"), "--identity", s.path("office.key")],
            env: env)
        #expect(got.status == 0, "\(got.stderr)")
        for d in docs {
            // `add -r in` names each document by its path under `in`.
            let opened = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("opened/" + d.path.dropFirst(3)))))
            #expect(opened.map(CapturedDeliveryCLITests.hex) == CapturedDeliveryCLITests.hex(d.bytes), "\(d.path)")
        }
    }

    /// A password change travels with captured pairs: the office changes it while the store holds
    /// pairs another replica received (taken in under the retired key, sealed again), its push
    /// carries the change with every record sealed anew, and the other replica takes it on pull.
    // Long: one story told in order, each step on what the ones before left.
    @Test func aPasswordChangeTravelsWithWhatCameCaptured() async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("cappasswd")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        let url = "s3://\(bucket)/office"
        let old = ReceiverProcess.password, new = "the office's new password"
        func env(_ password: String, _ newPassword: String? = nil) -> [String: String?] {
            var e = S3Fixtures.env(sw)
            e["VAULT_PASSWORD"] = password
            e["VAULT_NEW_PASSWORD"] = newPassword
            e["XDG_CACHE_HOME"] = s.path("cache")
            return e
        }
        func run(_ vault: String, _ args: [String], _ password: String = old, new: String? = nil) -> CLIResult {
            s.run(["--vault", s.path(vault)] + args, env: env(password, new))
        }
        // The office receives the station's first documents and pushes them.
        let (_, office, token) = try CapturedDeliveryCLITests.stationAndBlindOffice(s)
        #expect(s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 0)
        #expect(s.run("remove", "--delivered-to", "office").status == 0)
        Peer.stop(office.pid)
        #expect(run("office", ["push", url, "-q"]).status == 0)
        // A replica of it receives the station's next two and pushes them: the office lacks them.
        #expect(s.run(["clone", url, "--vault", s.path("b"), "-q"], env: env(old)).status == 0)
        let replica = try ReceiverProcess(s, vault: "b", create: false)
        let token2 = replica.addStation("desk-2")
        #expect(s.run("destination", "add", "b", replica.url + "/batches").status == 0)
        let later: [(name: String, bytes: [UInt8])] = [("later-1.txt", Array("the second batch, one".utf8)),
            ("later-2.bin", [UInt8].random(300_000, seed: 62))]
        for d in later {
            s.write(d.name, d.bytes)
            #expect(s.run("add", s.path(d.name)).status == 0)
        }
        #expect(s.run(["upload", "--to", "b"], env: ["VAULT_UPLOAD_TOKEN": token2]).status == 0)
        Peer.stop(replica.pid)
        #expect(run("b", ["push", "-q"]).status == 0)

        // The office changes its password and pushes: it takes in the replica's pairs first.
        let changed = run("office", ["passwd"], old, new: new)
        #expect(changed.status == 0, "\(changed.stderr)")
        let carried = run("office", ["push", url], new)
        #expect(carried.status == 0, "\(carried.stderr)")
        #expect(carried.stderr.contains("under the new password"), "\(carried.stderr)")
        let everything = CapturedDeliveryCLITests.originals + later
        func expectAll(_ vault: String, _ folder: String) {
            let got = run(vault, ["get", "--all", "-o", s.path(folder), "--identity", s.path("office.key")], new)
            #expect(got.status == 0, "\(vault): \(got.stderr)")
            for d in everything {
                let bytes = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("\(folder)/\(d.name)"))))
                #expect(bytes.map(CapturedDeliveryCLITests.hex) == CapturedDeliveryCLITests.hex(d.bytes), "\(d.name)")
            }
            let audit = run(vault, ["audit", "--deep"], new)
            #expect(audit.status == 0, "\(vault): \(audit.out)\(audit.stderr)")
        }
        expectAll("office", "at-office")
        // A clone with the new password, and the replica taking the change on pull, open them all.
        #expect(s.run(["clone", url, "--vault", s.path("c"), "-q"], env: env(new)).status == 0)
        expectAll("c", "at-clone")
        let pulled = run("b", ["pull"], old, new: new)
        #expect(pulled.status == 0, "\(pulled.stderr)")
        expectAll("b", "at-replica")
        #expect(run("c", ["list"], old).status == 77)
    }

    /// A pair changed on the store is not taken in by a pull, and not served in place.
    @Test func aPairChangedOnTheStoreIsRefused() async throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("capforged")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        let url = "s3://\(bucket)/office"
        var env = S3Fixtures.env(sw)
        env["VAULT_PASSWORD"] = ReceiverProcess.password
        env["XDG_CACHE_HOME"] = s.path("cache")
        _ = try CaptureStationCLITests.station(s)
        let office = try ReceiverProcess(s)
        let token = office.addStation("desk")
        #expect(s.run("destination", "add", "office", office.url + "/batches").status == 0)
        #expect(s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token]).status == 0)
        Peer.stop(office.pid)
        let push = s.run(["--vault", s.path("office"), "push", url, "-q"], env: env)
        #expect(push.status == 0, "\(push.stderr)")

        // Someone with the office's public recipient seals a file of the same length in one
        // document's place on the store.
        let victim = try #require(office.documents.first?["id"] as? String)
        let key = "office/objects/\(victim).vlt"
        let original = try await s3.object(bucket: bucket, key: key)
        s.write("forged.txt", [UInt8](repeating: 0x41, count: 64))
        let recipient = try SealedDeliveryCLITests.recipient(s, "office.key")
        #expect(s.shell("age -r \(recipient) -o forged.age forged.txt").status == 0)
        var forged = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("forged.age"))))
        forged += [UInt8](repeating: 0, count: max(0, original.count - forged.count))
        _ = try await s3.putObject(
            bucket: bucket, key: key, body: Array(forged.prefix(original.count)),
            contentType: "application/octet-stream")

        let inPlace = s.run(
            ["--vault", url, "get", victim, "-o", s.path("leak"), "--identity", s.path("office.key")], env: env)
        #expect(inPlace.status == 65, "\(inPlace.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("leak")))
        let clone = s.run(["clone", url, "--vault", s.path("copy"), "-q"], env: env)
        #expect(clone.status == 2, "\(clone.stderr)")
        #expect(clone.stderr.contains("not taken: objects/\(victim).vlt"), "\(clone.stderr)")
        #expect(inPlace.stderr.contains("its sealed files are not those received"), "\(inPlace.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("copy/objects/\(victim).vlt")))
        #expect(!FileManager.default.fileExists(atPath: s.path("copy/objects/\(victim).meta.vlt")))
    }
}
