import Foundation
import VaultTestSupport
import Testing

/// `vault upload` against the fault-injecting receiver on 127.0.0.1.
@Suite(.blocking) struct UploadCLITests {

    /// Adds `count` documents; returns (ids, originals by id).

    static func checkStore(_ r: Receiver, _ originals: [String: [UInt8]]) throws {
        for (id, bytes) in originals {
            #expect(
                Array(try Data(contentsOf: URL(fileURLWithPath: r.storePath + "/" + id))) == bytes,
                "\(id) differs at the receiver")
        }
    }

    @Test func fortyFiveDocumentsArriveExactlyOnceAndByteIdentical() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, originals) = Fixtures.addDocuments(s, count: 45)
        let r = Receiver(in: s)
        let up = s.run(["upload", "--url", r.url, "--progress", "json"], env: Fixtures.uploadToken)
        #expect(up.status == 0, "\(up.stderr)")
        #expect(r.accepted == ids)
        #expect(r.statuses == ["200", "200", "200"])
        try Self.checkStore(r, originals)
        let batches = r.log.map { $0["batch"] as? String }
        #expect(batches == ["1/3", "2/3", "3/3"])
        // Every batch carries the history's head as it was when the run started: the back
        // office keeps a copy of it elsewhere (what `audit --expect-head` needs).
        let heads = Set(r.log.compactMap { $0["head"] as? String })
        #expect(heads.count == 1 && heads.first?.hasPrefix("46-") == true, "\(heads)")
        #expect(Set(r.log.compactMap { $0["key"] as? String }).count == 3)
        let finished = up.events.last ?? nil
        #expect(
            finished?["event"] as? String == "finished" && finished?["documents"] as? Int == 45
                && finished?["batches"] as? Int == 3,
            "the finished event is the summary: \(up.stderr)")
        // Positions count over the run, as in an export.
        let started = up.events.compactMap { $0 }.filter { $0["event"] as? String == "documentStarted" }
        #expect(started.map { $0["position"] as? Int } == (1...45).map { $0 })
        #expect(started.allSatisfy { $0["of"] as? Int == 45 })
        // The same command again sends nothing: the ledger says the destination has every document.
        let again = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
        #expect(again.status == 0)
        #expect(
            again.stderr
                == """
                    vault: nothing new to send to \(r.url): it has confirmed every selected document (--new-run sends \
                    them again)\n
                    """
        )
        #expect(r.log.count == 3)
        // --all sends the same run again: its journal says every batch is confirmed.
        let all = s.run(["upload", "--url", r.url, "--all"], env: Fixtures.uploadToken)
        #expect(all.status == 0)
        #expect(all.stderr.hasPrefix("vault: nothing to send: all 3 batches of run "))
        #expect(r.log.count == 3)
        // The journal holds no credentials and no plaintext.
        #expect(s.journalJobs.count == 1)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: s.path("vault/uploads/\(s.journalJobs[0]).journal")))
        #expect(sealed.starts(with: Array("VAULTSTA".utf8)), "the journal is a sealed state file")
        let journal = s.run("uploads", "show", s.journalJobs[0]).out
        #expect(!journal.contains("test-token") && !journal.contains("doc 0.bin"))
        #expect(journal.contains("\"status\" : \"complete\""), "the export manifest's status, shared")
    }

    @Test func faultsAreSurvived() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, originals) = Fixtures.addDocuments(s, count: 6, size: { 200_000 + $0 })
        let plan = """
            [{"action": "drop", "after": 100000},
             {"action": "status", "status": 503, "retryAfter": 1},
             {"action": "status", "status": 429},
             {"action": "slow", "rate": 2000000},
             {"action": "status", "status": 500},
             {"action": "ok"}]
            """
        let r = Receiver(in: s, faults: plan)
        let started = Date()
        let up = s.run(["upload", "--url", r.url, "--batch-size", "3", "--progress", "json"], env: Fixtures.uploadToken)
        #expect(up.status == 0, "\(up.stderr)")
        #expect(r.statuses == ["reset", "503", "429", "200", "500", "200"])
        #expect(r.accepted == ids)
        try Self.checkStore(r, originals)
        let retries = up.events.compactMap { $0 }.filter { $0["event"] as? String == "retry" }
        #expect(
            retries.contains {
                $0["batch"] as? Int == 1 && $0["attempt"] as? Int == 2 && $0["delay"] as? Double == 1.0
                    && $0["reason"] as? String == "503 Service Unavailable"
            }, "Retry-After is honoured: \(retries)")
        #expect(
            retries.contains {
                ["connection error: connection reset by peer", "the server closed the connection"].contains(
                    $0["reason"] as? String)
            })
        #expect(up.stderr.contains("\"retries\":4"))
        #expect(Date().timeIntervalSince(started) >= 1.0)
        #expect(!r.statuses.contains("411"), "every request carried Content-Length")
    }

    @Test func tooLargeSplitsThenNamesTheLimitForOneDocument() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, originals) = Fixtures.addDocuments(s, count: 4, size: { _ in 30_000 })
        let r = Receiver(in: s, maxBytes: 90_000)
        let up = s.run(["upload", "--url", r.url, "--progress", "json"], env: Fixtures.uploadToken)
        #expect(up.status == 0, "\(up.stderr)")
        #expect(r.statuses == ["413", "200", "200"])
        #expect(r.log.map { $0["batch"] as? String } == ["1/1", "1/2", "2/2"])
        #expect(r.accepted == ids)
        try Self.checkStore(r, originals)
        #expect(
            up.events.contains {
                $0?["event"] as? String == "split" && $0?["batch"] as? Int == 1 && $0?["into"] as? [Int] == [1, 2]
            })

        // One document too large alone: named with the server's limit, left undelivered, and
        // the documents after it still go (exit 2, as rclone and restic go past a file that fails).
        let big = s.run("add", "-", "--name", "big.bin", stdin: .random(100_000))
        let bigID = big.out.trimmingCharacters(in: .newlines)
        let (after, afterOriginals) = Fixtures.addDocuments(s, count: 2, size: { _ in 20_000 }, seed: 70)
        let one = s.run(["upload", "--url", r.url, "--batch-size", "1"], env: Fixtures.uploadToken)
        #expect(one.status == 2, "\(one.stderr)")
        #expect(
            one.stderr.contains(
                """
                    vault: warning: skipped \(bigID.prefix(12)) big.bin: it makes a 133547-byte payload, larger than \
                    the server accepts 
                    """
                    + """
                        (413 Payload Too Large): {\"error\": \"payload of 133547 bytes is larger than the limit of \
                        90000 bytes\", \"limit\": 90000}\n
                        """
            ), "\(one.stderr)")
        #expect(one.stderr.contains("vault: uploaded 2 documents in 2 batches"), "\(one.stderr)")
        // In a log, the warnings come before the summary line, not after it.
        let warned = one.stderr.range(of: "vault: warning: skipped")?.lowerBound
        let summed = one.stderr.range(of: "vault: uploaded 2 documents")?.lowerBound
        #expect(warned != nil && summed != nil && warned! < summed!, "\(one.stderr)")
        #expect(
            one.stderr.hasSuffix(
                "vault: 1 document was too large for the server and not delivered: \(bigID.prefix(12)) big.bin\n"
                    + """
                        vault: hint: the warnings above give the server's limit; the other documents were delivered; \
                        raise the limit, or leave it out with --exclude ID\n
                        """
            ),
            "\(one.stderr)")
        #expect(r.accepted == ids + after)
        try Self.checkStore(r, originals.merging(afterOriginals) { a, _ in a })
        // The next run tries it again (still too large: exit 2), and --exclude leaves it out.
        let again = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
        #expect(
            again.status == 2 && again.stderr.contains("1 document was too large for the server"), "\(again.stderr)")
        let excluded = s.run(
            ["upload", "--url", r.url, "--exclude", String(bigID.prefix(8))], env: Fixtures.uploadToken)
        #expect(excluded.status == 0 && excluded.stderr.contains("nothing new to send"), "\(excluded.stderr)")
        let status = s.run("status", "--json")
        #expect(status.out.contains("\"pending\":1"), "big.bin stays undelivered: \(status.out)")
    }

    /// A cron line keeps no token: it comes from a file or a command, read as the vault
    /// password is (one trailing newline dropped), never shown; an empty one stops the upload
    /// before anything is sent.
    @Test func theTokenComesFromAFileOrACommand() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 2)
        let r = Receiver(in: s)  // takes "test-token"
        s.write("office.token", Array("test-token\n".utf8))
        let file = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_FILE": s.path("office.token")])
        #expect(file.status == 0, "\(file.stderr)")
        #expect(r.statuses == ["200"])
        _ = Fixtures.addDocuments(s, count: 1, seed: 20)
        let command = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_COMMAND": "printf test-token"])
        #expect(command.status == 0 && r.statuses == ["200", "200"], "\(command.stderr)")
        _ = Fixtures.addDocuments(s, count: 1, seed: 30)
        s.write("wrong.token", Array("not-the-token\n".utf8))
        let wrong = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_FILE": s.path("wrong.token")])
        #expect(wrong.status == 76 && !wrong.stderr.contains("not-the-token"), "\(wrong.stderr)")
        #expect(wrong.stderr.hasSuffix("vault: hint: check the token in the file VAULT_UPLOAD_TOKEN_FILE names\n"))
        s.write("empty.token", Array("\n".utf8))
        let empty = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_FILE": s.path("empty.token")])
        #expect(
            empty.status == 64
                && empty.stderr
                    == """
                        vault: the upload token is empty
                        vault: hint: the file VAULT_UPLOAD_TOKEN_FILE names is empty\n
                        """,
            "\(empty.stderr)")
        let missing = s.run(["upload", "--url", r.url], env: ["VAULT_UPLOAD_TOKEN_FILE": s.path("nowhere.token")])
        #expect(
            missing.status == 3 && missing.stderr.hasPrefix("vault: VAULT_UPLOAD_TOKEN_FILE: cannot open "),
            "\(missing.stderr)")
        #expect(r.statuses == ["200", "200", "403"], "nothing sent with an empty or missing token")
    }

    @Test func credentialsAndRejections() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 2)
        let r = Receiver(in: s, token: nil, user: "alice", password: "s3cret")
        let wrong = s.run(
            ["upload", "--url", r.url], env: ["VAULT_UPLOAD_USER": "alice", "VAULT_UPLOAD_PASSWORD": "nope"])
        #expect(wrong.status == 76)
        #expect(
            wrong.stderr
                == """
                    vault: the server refused the credentials (403 Forbidden)
                    vault: hint: check VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD\n
                    """
        )
        #expect(r.statuses == ["403"], "no retries on an authentication failure")
        // Said to take none, it is sent none: the server's 401 (none set at all: UploadCredentialsCLITests).
        let none = s.run(["upload", "--url", r.url, "--no-credentials"])
        #expect(none.status == 76)
        #expect(
            none.stderr
                == """
                    vault: the server refused the credentials (401 Unauthorized)
                    vault: hint: none were sent: the server needs some (set VAULT_UPLOAD_TOKEN, or keep a token \
                    source with 'vault destination set NAME --token-file FILE')\n
                    """, "\(none.stderr)")
        let ok = s.run(
            ["upload", "--url", r.url, "--new-run"],
            env: ["VAULT_UPLOAD_USER": "alice", "VAULT_UPLOAD_PASSWORD": "s3cret"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(!ok.stderr.contains("s3cret") && !wrong.stderr.contains("nope"))

        let rejecting = Receiver(in: s, faults: #"[{"action": "status", "status": 422, "message": "schema says no"}]"#)
        let rej = s.run(["upload", "--url", rejecting.url], env: Fixtures.uploadToken)
        #expect(rej.status == 69)
        #expect(
            rej.stderr
                == "vault: the server rejected batch 1/1: 422 Unprocessable Entity: {\"error\": \"schema says no\"}\n")
        #expect(rejecting.statuses == ["422"])

        let argv = s.run(["upload", "--url", r.url, "--header", "Authorization: Bearer x"])
        #expect(argv.status == 64)
        #expect(argv.stderr.hasPrefix("vault: credentials never go on the command line"))
        let insecure = s.run(
            ["upload", "--url", "http://example.invalid/upload", "--insecure-http"], env: ["VAULT_PASSWORD": "wrong"])
        #expect(
            insecure.stderr.hasPrefix("vault: warning: sending documents unencrypted over http:// to example.invalid\n")
        )
        #expect(insecure.status == 77, "the wrong password stops it before any connection")
    }

    /// A refusal that names a document by its place leaves that one out; a server cannot make
    /// vault leave out a document that is not in the batch (a place past its end, 0, below 0,
    /// or not a number): such a refusal stops the run as any other 4xx, and nothing is left out.
    @Test func onlyADocumentInTheBatchCanBeRefusedByItsPlace() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        for place in ["4", "0", "-1", "\"1\"", "1.5", "9223372036854775808"] {
            let plan = #"[{"action": "status", "status": 400, "error": {"code": "x", "document": \#(place)}}]"#
            let hostile = Receiver(in: s, faults: plan)
            let r = s.run(["upload", "--url", hostile.url, "--new-run"], env: Fixtures.uploadToken)
            #expect(r.status == 69, "\(place): \(r.stderr)")
            #expect(r.stderr.hasPrefix("vault: the server rejected batch 1/1: 400 Bad Request: "), "\(r.stderr)")
            #expect(!r.stderr.contains("skipped"), "\(place): \(r.stderr)")
            #expect(hostile.statuses == ["400"], "\(place)")
        }
        // Only a client error refuses by place: a 501 (or a 3xx) refuses the batch.
        let serverError = Receiver(
            in: s, faults: #"[{"action": "status", "status": 501, "error": {"code": "x", "document": 1}}]"#)
        let stopped = s.run(["upload", "--url", serverError.url, "--new-run"], env: Fixtures.uploadToken)
        #expect(stopped.status == 69 && !stopped.stderr.contains("skipped"), "\(stopped.stderr)")
        // A document left out before the run stops is named all the same.
        let twice = Receiver(
            in: s,
            faults: #"""
                [{"action": "status", "status": 400, "error": {"code": 5, "document": 3}},
                 {"action": "status", "status": 400, "error": {"code": "x", "document": 9}}]
                """#)
        let named = s.run(["upload", "--url", twice.url, "--new-run"], env: Fixtures.uploadToken)
        #expect(named.status == 69, "\(named.stderr)")
        #expect(
            named.stderr.hasPrefix(
                "vault: warning: skipped \(ids[2].prefix(12)) doc 2.bin: the server refused it (400 Bad Request)\n"
                    + "vault: the server rejected batch 1/2: 400 Bad Request: "), "\(named.stderr)")
        // The second document, refused by its place: the batch's others go again, each alone, so
        // that none goes more than twice whatever else the server refuses.
        let plan =
            #"[{"action": "status", "status": 400, "error": {"code": "no", "document": 2, "message": "not this"}}]"#
        let r = Receiver(in: s, faults: plan)
        let sent = s.run(["upload", "--url", r.url, "--new-run", "--json"], env: Fixtures.uploadToken)
        #expect(sent.status == 2, "\(sent.stderr)")
        #expect(
            sent.stderr.hasPrefix(
                "vault: warning: skipped \(ids[1].prefix(12)) doc 1.bin: the server refused it (400 Bad Request): "
                    + "not this (no)\n"),
            "\(sent.stderr)")
        #expect(r.accepted == [ids[0], ids[2]] && r.statuses == ["400", "200", "200"], "\(r.statuses)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(sent.stdout)) as? [String: Any])
        #expect(result["refused"] as? [String] == [ids[1]] && result["sentDocuments"] as? Int == 2, "\(result)")
    }

    /// A run stopped after a refusal by place, then resumed: the resumed run does not send the
    /// left-out document again, and says an earlier attempt left it out (it warned of nothing);
    /// a left-out document removed before the resume is not counted as damaged.
    @Test(arguments: [false, true])
    func aResumedRunSaysWhichAttemptLeftADocumentOut(removedMeanwhile: Bool) throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        let r = Receiver(
            in: s,
            faults: #"""
                [{"action": "status", "status": 400, "error": {"code": "x", "document": 1}},
                 {"action": "status", "status": 400, "error": {"code": "x", "document": 9}}]
                """#)
        let first = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
        #expect(first.status == 69 && first.stderr.contains("skipped \(ids[0].prefix(12))"), "\(first.stderr)")
        if removedMeanwhile { #expect(s.run("remove", ids[0], "-q").status == 0) }
        let resumed = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
        #expect(r.accepted == [ids[1], ids[2]])
        if removedMeanwhile {
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(!resumed.stderr.contains("damaged"), "\(resumed.stderr)")
        } else {
            #expect(resumed.status == 2, "\(resumed.stderr)")
            #expect(
                resumed.stderr.hasSuffix(
                    """
                        vault: 1 document was refused by the server and not delivered: \(ids[0].prefix(12)) doc 0.bin
                        vault: hint: an earlier attempt at this run left it out; the other documents were delivered; \
                        a later upload tries again, or leave it out with --exclude ID

                        """), "\(resumed.stderr)")
            // The run is over; the next upload sends it again.
            let again = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
            #expect(again.status == 0 && r.accepted == ids[1...2] + [ids[0]], "\(again.stderr)")
        }
    }

    /// A server's words are cut at 300 Unicode scalars: one character can carry any number of
    /// combining marks, and 400,000 of them printed 800 KB.
    @Test func aServersWordsAreCutByScalarsNotCharacters() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 2)
        let marks = "a" + String(repeating: "\\u0301", count: 20_000)
        for error in [#"{"code": "x", "document": 2, "message": "\#(marks)"}"#, #""\#(marks)""#] {
            let r = Receiver(in: s, faults: #"[{"action": "status", "status": 400, "error": \#(error)}]"#)
            let sent = s.run(["upload", "--url", r.url, "--new-run"], env: Fixtures.uploadToken)
            #expect([2, 69].contains(sent.status), "\(sent.stderr.prefix(300))")
            #expect(sent.stderr.unicodeScalars.count < 2000, "\(sent.stderr.unicodeScalars.count) scalars")
            #expect(sent.stderr.contains("\u{301}…"))
        }
    }

    /// An answer that never ends, fast or trickled under the idle timeout, is read up to 1 MiB
    /// and for the timeout and 4 s more; its status is the answer. Before, vault read such a
    /// body for as long as the server sent it.
    @Test(arguments: [#"{"action": "endless", "status": 400}"#, #"{"action": "endless", "status": 400, "rate": 20}"#])
    func anAnswerThatNeverEndsIsReadOnlyAsFarAsItsBound(fault: String) throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 1)
        let endless = Receiver(in: s, faults: "[\(fault)]")
        let r = s.measureWith(["upload", "--url", endless.url, "--timeout", "2"], env: Fixtures.uploadToken)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("vault: the server rejected batch 1/1: 400 Bad Request: xxx"), "\(r.stderr)")
        #expect(r.stderr.count < 1000, "the server's words are cut: \(r.stderr.count) characters")
        #expect(r.maxRSSKiB < 256 << 10, "peak RSS \(r.maxRSSKiB) KiB")
        #expect(endless.statuses == ["400"])
    }

    @Test func retriesRunOutThenTheSameCommandResumes() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 4)
        let r = Receiver(
            in: s,
            faults: #"[{"action": "ok"}, {"action": "status", "status": 503}, {"action": "status", "status": 503}]"#)
        let first = s.run(["upload", "--url", r.url, "--batch-size", "2", "--retries", "1"], env: Fixtures.uploadToken)
        #expect(first.status == 75)
        #expect(
            first.stderr
                == """
                    vault: batch 2/2 failed 2 times, last: 503 Service Unavailable\nvault: hint: 1 of 2 batches are \
                    confirmed; run the same command again to resume\n
                    """
        )
        let second = s.run(["upload", "--url", r.url, "--batch-size", "2", "--resume"], env: Fixtures.uploadToken)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            second.stderr.contains("vault: uploaded 2 documents in 1 batch ("),
            "what this command sent: \(second.stderr)")
        #expect(second.stderr.contains("whose other 1 batch was confirmed before"), "\(second.stderr)")
        #expect(r.accepted == ids)
        #expect(r.log.filter { $0["batch"] as? String == "1/2" }.count == 1, "the confirmed batch is not sent again")
        let noJournal = s.run(["upload", "--url", r.url + "/other", "--resume"], env: Fixtures.uploadToken)
        #expect(noJournal.status == 3)
    }

    @Test func aDamagedDocumentAbortsItsRequest() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3, size: { _ in 300_000 })
        let object = s.path("vault/objects/\(ids[1]).vlt")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: object)))
        bytes[bytes.count - 30] ^= 4
        try Data(bytes).write(to: URL(fileURLWithPath: object))
        let r = Receiver(in: s)
        let stop = s.run(["upload", "--url", r.url], env: Fixtures.uploadToken)
        #expect(stop.status == 65)
        #expect(stop.stderr.hasPrefix("vault: document \(ids[1]): chunk 4 failed authentication\n"))
        #expect(r.accepted.isEmpty, "the server never received a complete body holding the damaged document")
        let skip = s.run(["upload", "--url", r.url, "--skip-bad", "--new-run"], env: Fixtures.uploadToken)
        #expect(skip.status == 2, "\(skip.stderr)")
        #expect(r.accepted == [ids[0], ids[2]])
    }

    @Test func killedMidwayAndResumedDeliversEveryDocumentOnce() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, originals) = Fixtures.addDocuments(s, count: 6, size: { _ in 1 << 20 })
        // Slow reads (4 MB/s) give time to kill the client during the second batch.
        let plan = "[" + (0..<6).map { _ in #"{"action": "slow", "rate": 4000000}"# }.joined(separator: ",") + "]"
        let r = Receiver(in: s, faults: plan)
        // Held as the second batch's attempt is journaled, and killed there.
        let (pid, paused) = s.spawn(
            ["upload", "--url", r.url, "--batch-size", "2"], env: Fixtures.uploadToken, pausingAt: "upload.attempt#2")
        let firstConfirmed =
            paused && r.log.contains { $0["batch"] as? String == "1/3" && ($0["status"] as? Int) == 200 }
        kill(pid, SIGKILL)
        _ = s.wait(pid)
        #expect(firstConfirmed)
        let resumed = s.run(["upload", "--url", r.url, "--batch-size", "2"], env: Fixtures.uploadToken)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(r.accepted.sorted() == ids.sorted())
        #expect(Set(r.accepted).count == r.accepted.count, "every document exactly once")
        #expect(r.log.filter { $0["batch"] as? String == "1/3" }.count == 1, "the confirmed batch was not sent twice")
        try Self.checkStore(r, originals)
    }

    @Test func journalsAreListedWithThePasswordAndPruned() throws {
        let s = Sandbox()
        s.initVault()
        let (ids, _) = Fixtures.addDocuments(s, count: 3)
        let r = Receiver(
            in: s, token: nil,
            faults: #"[{"action": "ok"}, {"action": "status", "status": 503}, {"action": "status", "status": 503}]"#)
        #expect(s.run("upload", "--url", r.url, ids[0], "--no-credentials").status == 0)
        #expect(s.run("upload", "--url", r.url, ids[1], ids[2], "--retries", "1", "--no-credentials").status == 75)
        // Journals are sealed: listing them needs the password.
        let noPassword: [String: String?] = [:]
        let refused = s.run(["uploads"], env: ["VAULT_PASSWORD": nil])
        #expect(refused.status != 0 && refused.stdout.isEmpty)
        func journals() throws -> [[String: Any]] {
            let out = s.run(["uploads", "--json"], env: noPassword)
            #expect(out.status == 0, "\(out.stderr)")
            return (try JSONSerialization.jsonObject(with: Data(out.stdout)) as! [String: Any])["journals"]
                as! [[String: Any]]
        }
        // Both may start in the same second (times are ISO 8601 seconds): find them by state.
        let both = try journals()
        let complete = both.first { $0["state"] as? String == "complete" },
            interrupted = both.first { $0["state"] as? String == "interrupted" }
        #expect(both.count == 2 && complete != nil && interrupted != nil, "\(both)")
        #expect(complete?["documents"] as? Int == 1 && interrupted?["documents"] as? Int == 2)
        #expect(both.allSatisfy { $0["target"] as? String == r.url })
        #expect(
            interrupted?["confirmed"] as? Int == 0 && interrupted?["batches"] as? Int == 1
                && complete?["confirmed"] as? Int == 1)
        let text = s.run(["uploads"], env: noPassword)
        let rows = text.out.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        }
        #expect(
            rows.count == 3 && rows[0].prefix(4) == ["JOB", "STATE", "BATCHES", "DOCS"],
            "a header and two rows: \(text.out)")
        #expect(
            rows.contains { $0.count > 4 && $0[1] == "interrupted" && $0[2] == "0/1" && $0[3] == "2" }, "\(text.out)")
        // prune: the complete one goes; the unfinished one is kept until it is 30 days old.
        let pruned = s.run(["uploads", "prune"], env: noPassword)
        #expect(pruned.status == 0 && pruned.stderr == "vault: removed 1 upload journal\n")
        #expect(try journals().map { $0["state"] as? String } == ["interrupted"])
        #expect(s.run(["uploads", "prune", "--abandoned-after", "0"], env: noPassword).status == 0)
        #expect(try journals().isEmpty)
        #expect(
            !(try FileManager.default.contentsOfDirectory(atPath: s.path("vault/uploads"))).contains {
                $0.hasSuffix(".journal") || $0.hasSuffix(".lock")
            })
        #expect(s.run(["uploads", "tidy"]).status == 64)
    }

    @Test func resumeNamesTheSettingsAnInterruptedRunWasStartedWith() throws {
        let s = Sandbox()
        s.initVault()
        _ = Fixtures.addDocuments(s, count: 4)
        let r = Receiver(in: s, faults: #"[{"action": "ok"}, {"action": "status", "status": 503}]"#)
        let first = s.run(["upload", "--url", r.url, "--batch-size", "2", "--retries", "0"], env: Fixtures.uploadToken)
        #expect(first.status == 75, "\(first.stderr)")
        let status = s.run("status")
        #expect(status.out.contains("1 interrupted upload"), "\(status.out)")
        let wrong = s.run(["upload", "--url", r.url, "--resume"], env: Fixtures.uploadToken)
        #expect(wrong.status == 3)
        #expect(
            wrong.stderr.hasPrefix("vault: the interrupted upload to \(r.url) (run ")
                && wrong.stderr.contains(") was started with --batch-size 2 (this command: 20)\n"),
            "\(wrong.stderr)")
        let right = s.run(["upload", "--url", r.url, "--resume", "--batch-size", "2"], env: Fixtures.uploadToken)
        #expect(
            right.status == 0 && right.stderr.contains("vault: uploaded 2 documents in 1 batch"),
            "this time's figures: \(right.stderr)")
    }

    @Test func aReadOnlyVaultSendsNothingItsHistoryCannotRecord() throws {
        let s = Sandbox()
        chmod(s.dir, 0o711)
        let box = s.path("box")
        try FileManager.default.createDirectory(atPath: box, withIntermediateDirectories: true)
        s.write("box/a.txt", .random(300, seed: 97))
        for p in [box, box + "/a.txt"] { chown(p, 65534, 65534) }
        let env: [String: String?] = ["VAULT_DIR": box + "/v", "HOME": box]
        #expect(s.runAsNobody(["init", "--kdf", "insecure-test"], env: env).status == 0)
        #expect(s.runAsNobody(["add", box + "/a.txt"], env: env).status == 0)
        // The history read-only to its owner: reading works, sending does not.
        chmod(box + "/v/log.vlt", 0o400)
        let list = s.runAsNobody(["list"], env: env)
        #expect(list.status == 0, "reading still works: \(list.stderr)")
        let export = s.runAsNobody(["export", "--out", box + "/out"], env: env)
        #expect(
            export.status == 74
                && export.stderr.hasPrefix(
                    "vault: the history cannot be recorded: \(box)/v/log.vlt is not writable; nothing was sent\n"),
            "\(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box + "/out"))
        let receiver = Receiver(in: s)
        let upload = s.runAsNobody(
            ["upload", "--url", receiver.url], env: env.merging(["VAULT_UPLOAD_TOKEN": "test-token"]) { _, b in b })
        #expect(upload.status == 74 && upload.stderr.contains("nothing was sent"), "\(upload.stderr)")
        #expect(receiver.log.isEmpty, "no request was made")
        // The whole folder read-only: a change fails with a hint that says why.
        chmod(box + "/v", 0o500)
        defer { chmod(box + "/v", 0o700) }
        let remove = s.runAsNobody(["remove", "a.txt"], env: env)
        #expect(
            remove.status == 74
                && remove.stderr.hasSuffix(
                    """
                        vault: hint: this user cannot write to the vault folder: is it read-only (or on a read-only \
                        file system)?\n
                        """
                ),
            "\(remove.stderr)")
    }
}
