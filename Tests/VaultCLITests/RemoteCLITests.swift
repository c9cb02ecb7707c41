import Foundation
import VaultTestSupport
import Testing
import VaultS3
#if canImport(Glibc)
import Glibc
#endif

/// Remote vaults on SeaweedFS: `vault remote`, `push`, `pull`, `clone`, with the built binary.
@Suite(.blocking) struct RemoteCLITests {
    /// Adds `count` documents to `station`: small ones of assorted sizes, and one of 20 MiB
    /// every `largeEvery`.
    static func addDocuments(_ s: Sandbox, _ station: String, count: Int, seed: UInt64, largeEvery: Int = 70) throws {
        let dir = "in-\(station)"
        try FileManager.default.createDirectory(atPath: s.path(dir), withIntermediateDirectories: true)
        for i in 0..<count {
            let name = "\(dir)/\(station) \(i).txt"
            if i % largeEvery == 7 {
                try s.writeLarge(name, mebibytes: 20, seed: seed &* 1000 &+ UInt64(i))
            } else {
                s.write(name, .random(200 + (i * 131) % 3000, seed: seed &* 1000 &+ UInt64(i)))
            }
        }
        let r = s.run(["--vault", s.path(station), "add", "-r", s.path(dir)])
        precondition(r.status == 0, r.stderr)
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func twoStationsPushAtOnceAThirdClonesAndARemovalReachesEveryone() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("stations")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw)
        let url = "s3://\(bucket)/office vault"
        let s = Sandbox()
        // Station A creates the vault and pushes it (empty): the store gets vault.json.
        #expect(Fixtures.run(s, "a", ["init", "--kdf", "insecure-test"], env: env).status == 0)
        #expect(Fixtures.run(s, "a", ["remote", "add", "office", url], env: env).status == 0)
        let first = Fixtures.run(s, "a", ["push"], env: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("the store's vault.json was written"))
        // Station B is a replica of it.
        let clone = Fixtures.run(s, "b", ["clone", url], env: env)
        #expect(clone.status == 0, "\(clone.stderr)")
        #expect(Fixtures.run(s, "b", ["remote"], env: env).out == "origin  s3://\(bucket)/office vault\n")
        // Each station's documents: 60 in `make test`, 200 in `make long`.
        let each = TestSize.pick(60, long: 200)
        try Self.addDocuments(s, "a", count: each, seed: 1)
        try Self.addDocuments(s, "b", count: each, seed: 2)
        // A fourth replica, to pull while the others push.
        #expect(Fixtures.run(s, "d", ["clone", url, "-q"], env: env).status == 0)
        // Both push at the same time, and D pulls meanwhile.
        let pa = s.spawn(["--vault", s.path("a"), "push", "--progress", "json"], env: env)
        let pb = s.spawn(["--vault", s.path("b"), "push", "--progress", "json"], env: env)
        // D pulls once a push is under way (its first progress line).
        _ = poll(every: 10_000) {
            s.errorsSoFar(pa).contains(#""event":"progress""#) || !Peer.isRunning(pa) || !Peer.isRunning(pb)
        }
        let pd = s.spawn(["--vault", s.path("d"), "pull", "-q"], env: env)
        let (ra, rb, rd) = (s.wait(pa), s.wait(pb), s.wait(pd))
        #expect(ra.status == 0 && rb.status == 0, "\(ra.stderr)\n\(rb.stderr)")
        // D took a consistent set: whatever it took is whole and authentic; the rest comes next time.
        #expect(rd.status == 0, "\(rd.stderr)")
        let partway = Fixtures.run(s, "d", ["verify"], env: env)
        #expect(partway.status == 0 && partway.out.contains(" 0 damaged"), "\(partway.out)\(partway.stderr)")
        let rest = Fixtures.run(s, "d", ["pull"], env: env)
        #expect(rest.status == 0, "\(rest.stderr)")
        let last = ra.events.compactMap { $0 }.last { $0["event"] as? String == "progress" }
        #expect(last?["files"] as? Int == each && last?["of"] as? Int == each, "\(ra.stderr.suffix(300))")
        let listed = try await s3.listObjects(bucket: bucket, prefix: "office vault/objects/")
        #expect(listed.count == 2 * each)
        // A third station clones; the first two pull each other's documents.
        let c = Fixtures.run(s, "c", ["clone", url, "--progress", "none"], env: env)
        #expect(c.status == 0, "\(c.stderr)")
        #expect(c.stderr.contains("cloned \(2 * each) documents"))
        for station in ["a", "b"] {
            let r = Fixtures.run(s, station, ["pull"], env: env)
            #expect(r.status == 0 && r.stderr.contains("pulled \(each) documents"), "\(r.stderr)")
        }
        let everyone = Fixtures.ids(s, "a", env: env)
        #expect(everyone.count == 2 * each)
        for station in ["b", "c", "d"] { #expect(Fixtures.ids(s, station, env: env) == everyone) }
        for station in ["a", "b", "c", "d"] {
            let v = Fixtures.run(s, station, ["verify"], env: env)
            #expect(
                v.status == 0 && v.out.contains("verified \(2 * each) documents: \(2 * each) ok, 0 damaged"),
                "\(v.out)\(v.stderr)")
            let audit = Fixtures.run(s, station, ["audit"], env: env)
            #expect(audit.status == 0, "\(audit.out)\(audit.stderr)")
        }
        // A removal on B reaches A and C.
        let gone = everyone.sorted()[17]
        #expect(Fixtures.run(s, "b", ["remove", gone], env: env).status == 0)
        let push = Fixtures.run(s, "b", ["push"], env: env)
        #expect(push.status == 0 && push.stderr.contains("1 removal"), "\(push.stderr)")
        #expect(
            try await s3.headObject(bucket: bucket, key: "office vault/objects/\(gone).vlt") == nil,
            "the store no longer holds it")
        #expect(try await s3.headObject(bucket: bucket, key: "office vault/removed/\(gone)") != nil)
        for station in ["a", "c"] {
            let r = Fixtures.run(s, station, ["pull"], env: env)
            #expect(r.status == 0 && r.stderr.contains("removed 1"), "\(r.stderr)")
            #expect(Fixtures.ids(s, station, env: env) == everyone.subtracting([gone]))
        }
        // The replicas' histories name the clone, the pulls and the removal, as the schema says.
        let log = Fixtures.run(s, "c", ["log", "--json"], env: env)
        let ops =
            ((try? JSONSerialization.jsonObject(with: Data(log.stdout)) as? [String: Any])?["records"]
            as? [[String: Any]])?.compactMap { $0["op"] as? String }
        #expect(ops == ["clone", "pull", "remove"], "\(log.out.prefix(400))")
        _ = FileManager.default.createFile(atPath: s.path("log.json"), contents: Data(log.stdout))
        let valid = Fixtures.validate(s.path("log.json"), schema: "log")
        #expect(valid.status == 0, "\(valid.output)")
        // Nothing is left to send or fetch (said in JSON as the schemas say).
        #expect(Fixtures.run(s, "a", ["push"], env: env).stderr.contains("pushed 0 documents"))
        let pushed = Fixtures.run(s, "a", ["push", "--json"], env: env)
        _ = FileManager.default.createFile(atPath: s.path("push.json"), contents: Data(pushed.stdout))
        #expect(
            pushed.status == 0 && pushed.stderr.isEmpty
                && Fixtures.validate(s.path("push.json"), schema: "push").status == 0, "\(pushed.out)")
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(pushed.stdout)) as? [String: Any])?["sent"] as? [String] == []
        )
        let pulled = Fixtures.run(s, "c", ["pull", "--json"], env: env)
        _ = FileManager.default.createFile(atPath: s.path("pull.json"), contents: Data(pulled.stdout))
        #expect(
            pulled.status == 0 && pulled.stderr.isEmpty
                && Fixtures.validate(s.path("pull.json"), schema: "pull").status == 0, "\(pulled.out)")
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(pulled.stdout)) as? [String: Any])?["fetched"] as? [String]
                == [])
    }

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func killedPushAndPullResumeWithoutSendingOrFetchingAnythingFinishedAgain() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("resume-remote")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        // 40 documents of 1 MiB: slow enough through the logging path to be killed midway.
        for i in 0..<40 { try s.writeLarge("d\(i).bin", mebibytes: 1, seed: 500 + UInt64(i)) }
        #expect(s.run(["add"] + (0..<40).map { "d\($0).bin" }).status == 0)
        let everything = Set(s.objects.filter { $0.hasSuffix(".vlt") })
        let url = "s3://\(bucket)/v"
        // Each run goes through a logging path of its own, stopped once its run ends: a request
        // of a killed run cannot reach the store, or the log, after that.
        func path() throws -> (PythonPeer, [String: String?]) {
            let p = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString], in: s)
            return (p, S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": p.url]) { _, b in b })
        }
        /// The objects (`<id>.vlt`) a path saw answered 200 to `method`.
        func objects(_ method: String, _ p: PythonPeer) -> [String] {
            p.entries.filter { $0["method"] as? String == method && ($0["status"] as? Int) == 200 }
                .compactMap { ($0["path"] as? String)?.split(separator: "?").first.map(String.init) }
                .filter { $0.contains("/objects/") }.compactMap { $0.split(separator: "/").last.map(String.init) }
        }
        func stored() async throws -> Set<String> {
            Set(
                try await s3.listObjects(bucket: bucket, prefix: "v/objects/").compactMap {
                    $0.key.split(separator: "/").last.map(String.init)
                })
        }

        let (first, firstEnv) = try path()
        let pid = s.spawn(["push", url, "--parallel", "1"], env: firstEnv)
        #expect(poll(every: 2000) { objects("PUT", first).count >= 10 || !Peer.isRunning(pid) })
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        first.stop()
        let held = try await stored()
        // The store holds what the path saw PUT (and at most the one PUT the path's stop cut off
        // between the store's answer and its log line).
        let seen = Set(objects("PUT", first))
        #expect(seen.count >= 10 && held.count < 40, "killed midway: \(seen.count) PUT, \(held.count) held")
        #expect(seen.isSubset(of: held) && held.count - seen.count <= 1, "\(seen.count) PUT, \(held.count) held")
        let (second, secondEnv) = try path()
        let again = s.run(["push", url], env: secondEnv)
        #expect(again.status == 0, "\(again.stderr)")
        let sent = Set(objects("PUT", second))
        #expect(sent.isDisjoint(with: held), "nothing the store held was sent again: \(sent.intersection(held))")
        // A PUT the killed push had in flight can land after the listing above (the path's stop
        // cuts the log line, not the store's write): the second push then finds it there.
        let there = everything.subtracting(sent)
        #expect(
            held.isSubset(of: there) && there.count - held.count <= 1,
            "\(held.count) held, \(there.count) not sent again")
        #expect(try await stored() == everything)
        #expect(again.stderr.contains("pushed \(40 - there.count) documents"), "\(again.stderr)")

        // A clone killed midway, then finished with pull: no object fetched twice.
        let replica = s.path("replica")
        let (third, thirdEnv) = try path()
        let cpid = s.spawn(["--vault", replica, "clone", url, "--parallel", "1"], env: thirdEnv)
        func taken() -> Set<String> {
            Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: replica + "/objects")) ?? []).filter {
                    $0.hasSuffix(".vlt")
                })
        }
        #expect(poll(every: 2000) { taken().count >= 10 || !Peer.isRunning(cpid) })
        kill(cpid, SIGKILL)
        _ = s.wait(cpid)
        third.stop()
        let kept = taken()
        #expect(kept.count >= 10 && kept.count < 40, "killed midway: \(kept.count)")
        let (fourth, fourthEnv) = try path()
        let pull = s.run(["--vault", replica, "pull"], env: fourthEnv)
        #expect(pull.status == 0, "\(pull.stderr)")
        // Distinct objects: on a loaded machine a GET can outlast the client's deadline and be
        // asked for again; what counts is that the pull fetched exactly what the replica lacked.
        let fetched = Set(objects("GET", fourth))
        #expect(
            fetched == everything.subtracting(kept),
            "only what the replica lacked: \(fetched.count) for \(40 - kept.count)")
        #expect(taken() == everything)
        let verify = s.run(["--vault", replica, "verify"])
        #expect(
            verify.status == 0 && verify.out.contains("verified 40 documents: 40 ok"), "\(verify.out)\(verify.stderr)")
        #expect(s.run(["--vault", replica, "audit"]).status == 0)
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: replica + "/objects")) ?? []).allSatisfy {
                !$0.hasPrefix(".vault-tmp-")
            })
    }

    // Long: a table of cases, read down the page.
    @Test func damagedForeignAndForgedObjectsAreNotTaken() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("damage")
        defer { Task { await s3.shutdown() } }
        let env = S3Fixtures.env(sw)
        let s = Sandbox()
        s.initVault()
        for i in 0..<3 { s.write("n\(i).txt", .random(5000 + i, seed: 90 + UInt64(i))) }
        let added = s.run("add", "n0.txt", "n1.txt", "n2.txt").out.split(separator: "\n").map(String.init)
        #expect(added.count == 3)
        let url = "s3://\(bucket)/v"
        #expect(s.run(["push", url], env: env).status == 0)
        // One byte flipped in a stored envelope: the clone takes the other two and exits 2.
        let victim = "v/objects/\(added[1]).vlt"
        var bytes = try await s3.object(bucket: bucket, key: victim)
        bytes[bytes.count - 40] ^= 0x01
        try await s3.putObject(bucket: bucket, key: victim, body: bytes, contentType: "application/octet-stream")
        let c = s.run(["--vault", s.path("c"), "clone", url], env: env)
        #expect(c.status == 2, "\(c.stderr)")
        #expect(
            c.stderr.contains("vault: warning: not taken: objects/\(added[1]).vlt: document \(added[1]): "),
            "\(c.stderr)")
        #expect(c.stderr.contains("cloned 2 documents"))
        #expect(!FileManager.default.fileExists(atPath: s.path("c/objects/\(added[1]).vlt")))
        // Pulled again, only that one is fetched again, and rejected again: 65, nothing taken.
        let p = s.run(["--vault", s.path("c"), "pull"], env: env)
        #expect(p.status == 65, "\(p.stderr)")
        #expect(
            p.stderr.hasSuffix(
                "vault: 1 object at s3://\(bucket)/v failed authentication and was not taken\n"
                    + """
                        vault: hint: the store's copy is damaged or not this vault's; push it again from a station \
                        that has it\n
                        """
            ), "\(p.stderr)")
        // An envelope of another vault under a valid name is foreign: rejected the same way.
        let other = Sandbox()
        other.initVault()
        other.write("x.txt", .random(700, seed: 5))
        let foreignID = other.run("add", "x.txt").out.trimmingCharacters(in: .whitespacesAndNewlines)
        let foreign = Array(FileManager.default.contents(atPath: other.path("vault/objects/\(foreignID).vlt"))!)
        try await s3.putObject(
            bucket: bucket, key: "v/objects/\(foreignID).vlt", body: foreign, contentType: "application/octet-stream")
        let f = s.run(["--vault", s.path("c"), "pull"], env: env)
        #expect(f.status == 65 && f.stderr.contains("not taken: objects/\(foreignID).vlt"), "\(f.stderr)")
        // A forged tombstone does not remove anything.
        try await s3.putObject(
            bucket: bucket, key: "v/removed/\(added[0])", body: .random(120, seed: 8),
            contentType: "application/octet-stream")
        let t = s.run(["--vault", s.path("c"), "pull"], env: env)
        #expect(
            t.stderr.contains(
                """
                    vault: warning: removed/\(added[0]) is not a tombstone of this vault, and hides nothing: the \
                    tombstone of document \(added[0]) is not a sealed tombstone file
                    """
            ), "\(t.stderr)")
        #expect(FileManager.default.fileExists(atPath: s.path("c/objects/\(added[0]).vlt")))
        // SlowDown on the way is retried: a push to a fresh prefix through a path that answers the
        // first two PUTs with 503 SlowDown still sends every object.
        let slow = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString, "--slowdown", "2"], in: s)
        let retried = s.run(
            ["push", "s3://\(bucket)/slow", "--parallel", "1"],
            env: env.merging(["AWS_ENDPOINT_URL": slow.url]) { _, b in b })
        #expect(retried.status == 0 && retried.stderr.contains("pushed 3 documents"), "\(retried.stderr)")
        #expect(slow.entries.filter { $0["fault"] as? String == "slowdown" }.count == 2)
        #expect(try await s3.listObjects(bucket: bucket, prefix: "slow/objects/").count == 3)
        // A store holding another vault is refused by push, and clone with a wrong password creates nothing.
        let refused = other.run(["push", url], env: env)
        #expect(refused.status == 73 && refused.stderr.contains("holds another vault"), "\(refused.stderr)")
        let wrong = s.run(
            ["--vault", s.path("w"), "clone", url],
            env: env.merging(["VAULT_PASSWORD": "not the password"]) { _, b in b })
        #expect(wrong.status == 77, "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("w")))
        // Names and URLs that are not remotes.
        #expect(s.run("remote", "add", "bad name", url).status == 64)
        #expect(s.run("remote", "add", "office", "https://example.com/x").status == 64)
        let none = s.run(["pull"], env: env)
        #expect(none.status == 64 && none.stderr.hasPrefix("vault: this vault has no remote\n"), "\(none.stderr)")
        let missing = s.run(["pull", "s3://\(bucket)/nothing-here"], env: env)
        #expect(
            missing.status == 3
                && missing.stderr.hasPrefix("vault: no vault at s3://\(bucket)/nothing-here (it has no vault.json)\n"),
            "\(missing.stderr)")
    }
}

/// `--vault s3://BUCKET/PREFIX`: list, get, verify and export read the store in place, with no
/// local replica; requests and bytes counted by the logging path in front of SeaweedFS.
/// `make test` reads 300 documents and a 64 MiB one, `make long` 1,000 and 1 GiB.
@Suite(.blocking) struct DirectRemoteReadCLITests {
    static let documents = TestSize.pick(300, long: 1000)
    static let largeMiB = TestSize.pick(64, long: 1024)

    // Long: one story told in order, each step on what the ones before left; split, it would read worse.
    @Test func aColdListReadsOnlyHeadersAndEverythingElseMatchesTheLocalVault() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("direct")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        try FileManager.default.createDirectory(atPath: s.path("many"), withIntermediateDirectories: true)
        for i in 0..<Self.documents {
            s.write("many/scan \(i).txt", .random(100 + (i * 37) % 1900, seed: 3000 + UInt64(i)))
        }
        #expect(s.run("add", "-r", s.path("many")).status == 0)
        let url = "s3://\(bucket)/direct"
        #expect(s.run(["push", url, "--parallel", "8"], env: S3Fixtures.env(sw)).status == 0)
        let path = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString], in: s)
        let env = S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": path.url]) { _, b in b }
        func objectGETs() -> [[String: Any]] {
            path.entries.filter {
                $0["method"] as? String == "GET" && ($0["path"] as? String ?? "").contains("/objects/")
            }
        }
        // A cold list: one ranged GET of at most 8 KiB per document, nothing else of the envelopes.
        let list = s.run(["--vault", url, "list", "--json"], env: env)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout == s.run("list", "--json").stdout, "the same records as the local vault")
        let heads = objectGETs()
        let bytes = heads.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) }
        #expect(heads.count == Self.documents)
        #expect(
            heads.allSatisfy {
                ($0["range"] as? String ?? "").hasPrefix("bytes=0-") && ($0["bytes"] as? Int ?? .max) <= 8192
            })
        print(
            """
                cold list of \(Self.documents) remote documents: \(heads.count) ranged GETs, \(bytes) bytes \
                (\(bytes / Self.documents) per document)
                """
        )
        // Warm: the sealed index in the cache folder answers; no envelope is read again.
        #expect(s.run(["--vault", url, "list"], env: env).status == 0)
        #expect(objectGETs().count == Self.documents)
        // The cache folder holds the sealed index and vault.json: no envelope, no plaintext.
        let cache = s.path(".cache/vault")
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []
        #expect(folders.count == 1)
        let kept =
            ((FileManager.default.enumerator(atPath: cache + "/" + (folders.first ?? ""))?.allObjects as? [String])
            ?? []).sorted()
        #expect(kept == ["index.db", "lock", "objects", "vault.json"], "\(kept)")
        // verify and export in place give what the local vault gives.
        let v = s.run(["--vault", url, "verify"], env: env)
        #expect(
            v.status == 0 && v.out.contains("verified \(Self.documents) documents: \(Self.documents) ok, 0 damaged"),
            "\(v.out)\(v.stderr)")
        let local = Fixtures.exported(s, ["--batch-size", "500"])
        let remote = s.run(["--vault", url, "export", "--out", "remote-out", "--batch-size", "500", "-q"], env: env)
        #expect(remote.status == 0, "\(remote.stderr)")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: s.path("remote-out"))) ?? []).filter {
            $0.hasPrefix("batch-")
        }.sorted()
        #expect(files.map { Array(FileManager.default.contents(atPath: s.path("remote-out/" + $0))!) } == local)
        // A byte changed on the store is caught by verify and get in place.
        let ids = s.run("list", "--json").stdout
        let first =
            ((try? JSONSerialization.jsonObject(with: Data(ids)) as? [[String: Any]])?.first?["id"] as? String) ?? ""
        let key = "direct/objects/\(first).vlt"
        var object = try await s3.object(bucket: bucket, key: key)
        object[object.count - 20] ^= 0x40
        try await s3.putObject(bucket: bucket, key: key, body: object, contentType: "application/octet-stream")
        let damaged = s.run(["--vault", url, "verify"], env: env)
        #expect(damaged.status == 65 && damaged.out.contains(first), "\(damaged.out)\(damaged.stderr)")
        let get = s.run(["--vault", url, "get", first], env: env)
        #expect(get.status == 65 && get.stderr.hasPrefix("vault: document \(first): "), "\(get.stderr)")
        // Commands that change a vault refuse a store read in place.
        let add = s.run(["--vault", url, "add", s.path("many/scan 1.txt")], env: env)
        #expect(
            add.status == 64
                && add.stderr.hasPrefix(
                    """
                        vault: this command needs a local vault; \(url) can be read in place only by list, get, \
                        verify, export, upload, log and audit (and served by receive)\n
                        """
                ), "\(add.stderr)")
    }

    @Test func aRangeOfALargeRemoteDocumentFetchesOnlyTheChunkGroupsCoveringIt() async throws {
        let (sw, s3, bucket) = try await S3Fixtures.freshBucket("range")
        defer { Task { await s3.shutdown() } }
        let s = Sandbox()
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: Self.largeMiB, seed: 77)
        #expect(s.run("add", "big.bin").status == 0)
        try FileManager.default.removeItem(atPath: s.path("big.bin"))
        let url = "s3://\(bucket)/g"
        #expect(s.run(["push", url], env: S3Fixtures.env(sw)).status == 0)
        let path = try PythonPeer("flip-proxy.py", ["--upstream", sw.endpoint.absoluteString], in: s)
        let env = S3Fixtures.env(sw).merging(["AWS_ENDPOINT_URL": path.url]) { _, b in b }
        let size = Self.largeMiB << 20, middle = size / 3 * 2
        for (range, label) in [
            ("\(middle)-\(middle + 99)", "100 bytes"), ("\(size - 824)-", "the last 824 bytes"),
            ("5000000-9000000", "4 MB")
        ] {
            let before = path.entries.count
            let r = s.run(["--vault", url, "get", "big.bin", "--range", range], env: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == s.run("get", "big.bin", "--range", range).stdout, "\(label)")
            let gets = path.entries.dropFirst(before).filter {
                $0["method"] as? String == "GET" && ($0["path"] as? String ?? "").contains("/objects/")
            }
            let served = gets.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) }
            // The head, then groups of 16 sealed chunks (1,048,832 bytes) covering the range.
            let parts = range.split(separator: "-", omittingEmptySubsequences: false)
            let start = Int(parts[0])!, end = parts[1].isEmpty ? size - 1 : Int(parts[1])!
            let groups = (end / (16 << 16)) - (start / (16 << 16)) + 1
            print(
                """
                    get --range \(range) of a \(Self.largeMiB) MiB remote document: \(gets.count) GETs, \(served) \
                    bytes (\(groups) covering group(s)): \(gets.map { $0["range"] as? String ?? "" })
                    """
            )
            #expect(served <= 8192 + groups * 16 * 65552, "\(label): \(served) bytes")
            #expect(served >= (end - start + 1))
        }
    }
}
