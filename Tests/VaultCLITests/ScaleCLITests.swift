import Foundation
import Testing

/// Issue 22: a command's cost does not grow with the vault. Asserted on work done — the bytes the
/// `vault` process reads and writes (`/proc/self/io` through `VAULT_IO_REPORT`) — not on time:
/// the same command in a vault of 20,000 documents and in one of 10 moves about the same bytes.
/// (The index before issue 22 was one sealed blob of 6 MB at 20,000 documents, read by every
/// command and rewritten by every change.)
@Suite(.serialized) struct ScaleCLITests {
    /// Bytes read plus written by one `vault` command.
    static func io(_ s: Sandbox, _ vault: String, _ args: [String]) throws -> (result: CLIResult, bytes: Int) {
        let report = s.path("io-\(UUID().uuidString)")
        let r = s.run(["--vault", vault] + args, env: ["VAULT_IO_REPORT": report])
        let text = try String(contentsOfFile: report, encoding: .utf8)
        var bytes = 0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == "rchar" || parts[0] == "wchar", let n = Int(parts[1]) { bytes += n }
        }
        #expect(bytes > 0, "the I/O report is empty: \(text)")
        return (r, bytes)
    }

    /// Makes `name` with `count` documents of 4 KiB through vault-fixture (`per` per record).
    static func fixture(_ s: Sandbox, _ name: String, _ count: Int, per: Int) {
        let r = s.shell("\"$(dirname \"$1\")/vault-fixture\" \(name) \(count) \(per)")
        #expect(r.status == 0, "vault-fixture: \(r.stderr)")
    }

    @Test func addGetAndRemoveMoveTheSameBytesAt20000DocumentsAsAt10() throws {
        let s = Sandbox()
        Self.fixture(s, "small", 10, per: 1)
        Self.fixture(s, "large", 20_000, per: 1000)
        s.write("new.bin", .random(4096, seed: 2201))
        var costs: [String: [Int]] = [:]
        for vault in ["small", "large"] {
            // A first command after the fixture settles nothing: the index is current already.
            let (added, addBytes) = try Self.io(s, vault, ["add", "new.bin"])
            try #require(added.status == 0, "\(added.stderr)")
            let id = added.out.trimmingCharacters(in: .whitespacesAndNewlines)
            let (byName, nameBytes) = try Self.io(s, vault, ["get", "new.bin"])
            #expect(byName.status == 0 && byName.stdout == .random(4096, seed: 2201))
            let (byID, idBytes) = try Self.io(s, vault, ["get", String(id.prefix(8))])
            #expect(byID.status == 0 && byID.stdout == .random(4096, seed: 2201))
            let (old, oldBytes) = try Self.io(s, vault, ["get", "doc-5.txt"])
            #expect(old.status == 0 && old.stdout.count == 4096)
            let (removed, removeBytes) = try Self.io(s, vault, ["remove", String(id.prefix(8))])
            #expect(removed.status == 0, "\(removed.stderr)")
            costs[vault] = [addBytes, nameBytes, idBytes, oldBytes, removeBytes]
        }
        let names = ["add", "get by name", "get by id prefix", "get an early document", "remove"]
        for (i, name) in names.enumerated() {
            let small = costs["small"]![i], large = costs["large"]![i]
            print("\(name): \(small) bytes at 10 documents, \(large) at 20,000")
            // A B-tree one or two levels deeper reads a few more pages; a whole-index read or
            // rewrite would be megabytes.
            #expect(large - small < 256 << 10, "\(name): \(large) bytes at 20,000 documents against \(small) at 10")
        }
        #expect(s.run(["--vault", "large", "audit"]).status == 0)
    }

    @Test func theSameAnswersBeforeAndAfterTheIndexIsDeletedAndRebuilt() throws {
        let s = Sandbox()
        Self.fixture(s, "v", 2_000, per: 100)
        s.write("extra.txt", Array("extra".utf8))
        #expect(s.run(["--vault", "v", "add", "extra.txt", "--tag", "t3"]).status == 0)
        let gone = s.run(["--vault", "v", "remove", "doc-7.txt"])
        #expect(gone.status == 0, "\(gone.stderr)")
        func answers() -> [String] {
            [s.run(["--vault", "v", "list", "--json"]).out,
             s.run(["--vault", "v", "list"]).out,
             s.run(["--vault", "v", "list", "--tag", "t3", "--json"]).out,
             s.run(["--vault", "v", "get", "doc-1234.txt"]).out,
             s.run(["--vault", "v", "get", "doc-7.txt"]).stderr,
             s.run(["--vault", "v", "log", "--json"]).out]
        }
        let before = answers()
        #expect(before[0].hasPrefix("[{") && before[2].contains("extra.txt") && before[4].contains("no document matches"))
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: s.path("v/index.db" + suffix)) }
        let after = answers()
        for (a, b) in zip(before, after) { #expect(a == b) }
        #expect(s.run(["--vault", "v", "audit"]).status == 0)
        // A row deleted behind vault's back is not a missing document: the rows are counted and
        // the index rebuilt before "not found".
        let listed = try JSONSerialization.jsonObject(with: Data(before[0].utf8)) as? [[String: Any]] ?? []
        let victim = try #require(listed.first { $0["name"] as? String == "doc-1500.txt" }?["id"] as? String)
        let sqlite = s.shell("sqlite3 v/index.db \"DELETE FROM documents WHERE hex(id) = upper('\(victim)')\"")
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        #expect(s.run(["--vault", "v", "get", "doc-1500.txt"]).stdout.count == 4096)
        #expect(answers() == before)
    }
}
