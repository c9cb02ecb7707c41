import Crypto
import Foundation
import Testing
import VaultTestSupport

/// Issue 62, point 5, through the built binaries: a capture-only station of 100 documents (a
/// 50 MB one, odd names, tags), its folder and its password in an attacker's hands, and the
/// blind receiver's folder and password after delivery: no 32-byte window of any document is in
/// any file under either, and neither opens a document; the office's identity opens everything.
/// Post-quantum recipients, end to end.
@Suite(.blocking) struct CaptureAttackCLITests {
    /// 99 text documents of 40 to 4,000 bytes under odd names in folders, tagged by folder, and
    /// a 50 MB one of random bytes; each text is printable ASCII without a line break, so that
    /// GNU grep can look for its windows as fixed strings.
    static func documents(_ s: Sandbox) throws -> [(path: String, bytes: [UInt8])] {
        var out: [(String, [UInt8])] = []
        let names = ["scan", "Rechnung März", #"quote "x""#, "dash-name", "über ünd", "a b", "ÆØÅ", "semi;colon"]
        for n in 0..<99 {
            var rng = SeededBytes(seed: UInt64(1000 + n))
            let length = 40 + Int(rng.next() % 3960)
            let text = (0..<length).map { _ in UInt8(0x20 + rng.next() % 95) }
            let folder = ["north", "south", "east"][n % 3]
            out.append(("in/\(folder)/\(names[n % names.count]) \(n).txt", text))
        }
        out.append(("in/north/large scan.tiff", .random(50_000_000, seed: 6250)))
        for (path, bytes) in out {
            try FileManager.default.createDirectory(
                atPath: s.path((path as NSString).deletingLastPathComponent), withIntermediateDirectories: true)
            s.write(path, bytes)
        }
        return out
    }

    /// Every 32-byte window of the text documents that starts at a multiple of 4, and one every
    /// 64 KiB of the large one (those without a line break), one a line: GNU grep's fixed
    /// strings. Returns how many.
    static func writeWindows(_ s: Sandbox, _ documents: [(path: String, bytes: [UInt8])]) -> Int {
        var lines: [UInt8] = []
        var count = 0
        for d in documents where d.bytes.count >= 32 {
            let stride = d.bytes.count > 1 << 20 ? 65_536 : 4
            for start in Swift.stride(from: 0, through: d.bytes.count - 32, by: stride) {
                let w = d.bytes[start..<(start + 32)]
                if w.contains(0x0A) || w.contains(0) { continue }
                lines += w + [0x0A]
                count += 1
            }
        }
        s.write("windows.txt", lines)
        return count
    }

    /// The files under `folder` holding any window (`grep -a -F -l -r`).
    static func filesHoldingWindows(_ s: Sandbox, _ folder: String) -> [String] {
        let r = s.shell("LC_ALL=C grep -a -F -l -r -f windows.txt '\(s.path(folder))'")
        return r.out.split(separator: "\n").map(String.init)
    }

    @Test func neitherTheStationNorTheBlindReceiverHoldsOrOpensWhatWasCaptured() throws {
        guard SealedDeliveryCLITests.requireAge() else { return }
        let s = Sandbox()
        #expect(s.shell("age-keygen -o office.key 2>/dev/null").status == 0)
        s.write("office.recipients", Array("\(try SealedDeliveryCLITests.recipient(s, "office.key"))\n".utf8))
        #expect(s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("office.recipients")).status == 0)
        let docs = try Self.documents(s)
        for folder in ["north", "south", "east"] {
            let added = s.run("add", "-r", s.path("in/\(folder)"), "--tag", folder)
            #expect(added.status == 0, "\(added.stderr)")
        }
        #expect(s.run("list", "--json").out.components(separatedBy: "\"id\"").count - 1 == 100)
        let windows = Self.writeWindows(s, docs)
        #expect(windows > 40_000)
        // The check finds what is there: every source file holds its windows.
        #expect(Self.filesHoldingWindows(s, "in").count == 100)
        #expect(Self.filesHoldingWindows(s, "vault") == [], "the station's folder")
        let list = s.run("list", "--json")
        let ids = ((try? JSONSerialization.jsonObject(with: Data(list.stdout))) as? [[String: Any]] ?? [])
            .compactMap { $0["id"] as? String }
        for id in ids.prefix(3) {
            let r = s.run("get", id, "-o", s.path("stolen-\(id)"))
            #expect(r.status == 64 && r.stderr.contains("capture-only station"), "\(r.stderr)")
        }
        #expect(s.run("export", "--out", s.path("stolen")).status == 64)

        // Delivered to a receiver that holds no identity: its folder holds nothing either.
        let office = try ReceiverProcess(s)
        let token = office.addStation("desk")
        let key = office.run("receive", "key").out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(s.run("destination", "add", "office", office.url + "/batches", "--receipt-key", key).status == 0)
        let up = s.run(["upload", "--to", "office"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        #expect(office.documents.count == 100)
        #expect(Self.filesHoldingWindows(s, "office") == [], "the receiver's folder")
        let first = try #require(office.documents.first?["id"] as? String)
        #expect(office.run("get", first, "-o", s.path("stolen-office")).status == 64)
        #expect(office.run("export", "--out", s.path("stolen-outbox")).status == 64)
        #expect(!FileManager.default.fileExists(atPath: s.path("stolen-office")))

        // The office's identity opens everything, byte for byte, under the names captured.
        let got = office.run("get", "--all", "-o", s.path("opened"), "--identity", s.path("office.key"))
        #expect(got.status == 0, "\(got.stderr)")
        for d in docs {
            // `add -r in/FOLDER` names each document by its path under FOLDER.
            let name = (d.path as NSString).lastPathComponent
            let opened = try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("opened/" + name))))
            #expect(opened == d.bytes, "\(d.path)")
        }
        // And the station's records of delivery let it free its space.
        #expect(s.run("audit", "--require-receipts", "office").status == 0)
        #expect(s.run("remove", "--delivered-to", "office").status == 0)
        #expect(s.run("list", "--json").out.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    /// A station sealed to a post-quantum recipient (ML-KEM-768 + X25519), delivered to a blind
    /// receiver, opened at the office by `vault get --identity` with the post-quantum identity.
    @Test func postQuantumRecipientsWorkEndToEnd() throws {
        let s = Sandbox()
        let pq = s.run("keygen", "--post-quantum", "--out", s.path("pq.key")).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(pq.hasPrefix("age1pq1"))
        s.write("pq.recipients", Array("\(pq)\n".utf8))
        #expect(s.run("init", "--kdf", "insecure-test", "--capture-for", s.path("pq.recipients")).status == 0)
        let bytes = [UInt8].random(300_000, seed: 62)
        try FileManager.default.createDirectory(atPath: s.path("in/deep"), withIntermediateDirectories: true)
        s.write("in/deep/scan.bin", bytes)
        #expect(s.run("add", "-r", s.path("in"), "--tag", "pq").status == 0)
        let office = try ReceiverProcess(s)
        let token = office.addStation("desk")
        let up = s.run(["upload", "--url", office.url + "/batches"], env: ["VAULT_UPLOAD_TOKEN": token])
        #expect(up.status == 0, "\(up.stderr)")
        let stored = try #require(office.documents.first?["id"] as? String)
        let head = try Array(Data(contentsOf: URL(fileURLWithPath: s.path("office/objects/\(stored).vlt"))).prefix(200))
        #expect(String(decoding: head, as: UTF8.self).contains("-> mlkem768x25519 "))
        let got = office.run("get", "--all", "-o", s.path("opened"), "--identity", s.path("pq.key"))
        #expect(got.status == 0, "\(got.stderr)")
        #expect((try? Array(Data(contentsOf: URL(fileURLWithPath: s.path("opened/deep/scan.bin"))))) == bytes)
        // A classic identity that is not the office's opens nothing.
        #expect(s.run("keygen", "--out", s.path("other.key")).status == 0)
        let wrong = office.run("get", stored, "-o", s.path("wrong"), "--identity", s.path("other.key"))
        #expect(wrong.status != 0 && !FileManager.default.fileExists(atPath: s.path("wrong")), "\(wrong.stderr)")
    }
}

/// A small deterministic generator (SplitMix64) for the documents' lengths and texts.
struct SeededBytes {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
