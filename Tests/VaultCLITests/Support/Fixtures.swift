import Crypto
import Foundation
import Testing
import VaultTestSupport

/// What many CLI suites need, kept here rather than as one suite's statics.
enum Fixtures {
    /// The bearer token the test receivers take.
    static let uploadToken = ["VAULT_UPLOAD_TOKEN": "test-token"] as [String: String?]

    /// Adds `count` documents of random bytes (`size(i)` each) through standard input, named
    /// `doc N.bin`; returns their ids in order and each one's bytes.
    static func addDocuments(
        _ s: Sandbox, count: Int, size: (Int) -> Int = { 1000 + $0 * 17 }, seed: UInt64 = 7
    ) -> ([String], [String: [UInt8]]) {
        var ids: [String] = [], originals: [String: [UInt8]] = [:]
        for i in 0..<count {
            let bytes = [UInt8].random(size(i), seed: UInt64(i) + seed)
            let r = s.run("add", "-", "--name", "doc \(Int(seed) - 7 + i).bin", stdin: bytes)
            precondition(r.status == 0, r.stderr)
            let id = r.out.trimmingCharacters(in: .newlines)
            ids.append(id)
            originals[id] = bytes
        }
        return (ids, originals)
    }

    /// A command's standard output as one JSON object (empty when it is not one).
    static func json(_ r: CLIResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any] ?? [:]
    }

    /// Validates the JSON in `file` against `docs/schemas/SCHEMA.schema.json` with the
    /// jsonschema peer (Draft 2020-12): its exit status and what it said.
    static func validate(_ file: String, schema: String) -> (status: Int32, output: String) {
        let python = Sandbox.repository.appendingPathComponent(".build-peers/venv/bin/python").path
        let schemaPath = Sandbox.repository.appendingPathComponent("docs/schemas/\(schema).schema.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", script, schemaPath, file]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return (-1, "cannot run \(python): \(error) (make test installs it)") }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, output)
    }

    static func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Waits until a temporary file in `dir` holds at least `bytes` bytes; false if none did in time.
    static func awaitTemporary(in dir: String, atLeast bytes: Int, pid: pid_t) -> Bool {
        var grown = false
        poll(every: 1000) {
            grown = entries(dir).contains { name in
                name.hasPrefix(".vault-tmp-")
                    && ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? 0)
                        >= bytes
            }
            return grown || !Peer.isRunning(pid)  // or it finished first
        }
        return grown
    }

    static func vaultWithLargeDocument(_ s: Sandbox, mebibytes: Int = 50) throws -> [UInt8] {
        s.initVault()
        try s.writeLarge("big.bin", mebibytes: mebibytes, seed: 11)
        let r = s.run("add", "big.bin")
        precondition(r.status == 0, r.stderr)
        return Array(try Data(contentsOf: URL(fileURLWithPath: s.path("big.bin"))))
    }

    /// A TCP socket on 127.0.0.1: bound to a port the OS picks, or connected to `port`.
    static func loopbackSocket(connectingTo port: UInt16? = nil) -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in(
            sin_family: sa_family_t(AF_INET), sin_port: (port ?? 0).bigEndian,
            sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                if port != nil {
                    precondition(connect(fd, $0, len) == 0, "cannot connect to 127.0.0.1:\(port!)")
                } else {
                    _ = bind(fd, $0, len); _ = getsockname(fd, $0, &len)
                }
            }
        }
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    /// What a terminal `columns` wide shows while vault runs on it (script's pseudo-terminal).
    static func onTerminal(_ s: Sandbox, columns: Int, _ args: String, env: [String: String?] = [:]) -> String {
        s.write("term.sh", Array("stty cols \(columns) rows 24; \"$1\" \(args)\n".utf8))
        return s.shell("script -qec \"sh term.sh $1\" /dev/null", env: env).out
    }

    /// The lines a terminal ends up showing, one per redraw: split at CR and LF, escape codes removed.
    static func redraws(_ screen: String) -> [String] {
        screen.replacingOccurrences(of: "\u{1B}[2K", with: "").split(whereSeparator: { $0 == "\r" || $0 == "\n" })
            .map(String.init).filter { !$0.allSatisfy { $0 == " " } }
    }

    /// Runs `command` (sh; `$1` is the vault binary) under util-linux's `script`, on a
    /// pseudo-terminal whose input is `typed`: what a user at a terminal sees and answers.
    static func atTerminal(_ s: Sandbox, _ command: String, typed: String, env: [String: String?] = [:]) -> CLIResult {
        s.write("typed.txt", Array(typed.utf8))
        s.write("cmd.sh", Array(command.utf8))
        return s.shell("script -qec \"sh cmd.sh '$1'\" /dev/null < typed.txt", env: env)
    }

    /// The newest history record, from `vault log --json`.
    static func lastRecord(_ s: Sandbox) -> [String: Any]? {
        let log = s.run("log", "--json")
        let records =
            ((try? JSONSerialization.jsonObject(with: Data(log.stdout))) as? [String: Any])?["records"]
            as? [[String: Any]]
        return records?.last
    }

    static func vaultIsIntact(_ s: Sandbox, documents: Int, vaultDir: String? = nil) {
        let env: [String: String?] = vaultDir.map { ["VAULT_DIR": $0] } ?? [:]
        let v = s.run(["verify"], env: env)
        #expect(v.status == 0, "\(v.out) \(v.stderr)")
        #expect(
            v.out.hasSuffix(
                "verified \(documents) document\(documents == 1 ? "" : "s"): \(documents) ok, 0 damaged; index ok\n"),
            "\(v.out)")
        let objects = entries((vaultDir ?? s.path("vault")) + "/objects")
        #expect(objects.count == documents, "\(objects)")
        #expect(!objects.contains { $0.hasPrefix(".vault-tmp-") }, "no temporary file survives")
    }

    /// The batch files `vault export` writes for the same selection and batching.
    static func exported(_ s: Sandbox, _ extra: [String] = []) -> [[UInt8]] {
        let out = "export-\(UUID().uuidString.prefix(6))"
        let r = s.run(["export", "--out", out, "-q"] + extra)
        precondition(r.status == 0, r.stderr)
        return ((try? FileManager.default.contentsOfDirectory(atPath: s.path(out))) ?? []).filter {
            $0.hasPrefix("batch-")
        }.sorted()
            .map { Array(FileManager.default.contents(atPath: s.path(out + "/" + $0))!) }
    }

    static func runID(_ r: CLIResult) -> String {
        (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])?["runId"] as? String ?? ""
    }

    /// 45 documents: 44 small ones of assorted sizes and, as the 25th, one of 12 MiB, so the
    /// default batching makes three batches: a single PUT, a multipart upload of 16 MiB of base64
    /// (three 8 MiB parts, or four of 5 MiB), and a single PUT again.
    static func addFortyFive(_ s: Sandbox) throws {
        var names: [String] = []
        for i in 1...45 {
            let name = String(format: "doc %02d.txt", i)
            if i == 25 {
                try s.writeLarge(name, mebibytes: 12, seed: 3)
            } else {
                s.write(name, .random(500 + i * 397, seed: UInt64(i)))
            }
            names.append(name)
        }
        let r = s.run(["add"] + names)
        precondition(r.status == 0, r.stderr)
    }

    /// `vault --vault <station>` with the store's variables.
    static func run(_ s: Sandbox, _ station: String, _ args: [String], env: [String: String?]) -> CLIResult {
        s.run(["--vault", s.path(station)] + args, env: env)
    }

    /// The ids `vault list --json` prints.
    static func ids(_ s: Sandbox, _ station: String, env: [String: String?]) -> Set<String> {
        let r = run(s, station, ["list", "--json"], env: env)
        guard let docs = try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]] else { return [] }
        return Set(docs.compactMap { $0["id"] as? String })
    }

    /// A station vault with documents of several sizes (one empty), and its receiver.
    static func station(_ s: Sandbox, count: Int = 5) -> [String: [UInt8]] {
        s.initVault()
        var originals: [String: [UInt8]] = [:]
        for i in 0..<count {
            let bytes = [UInt8].random([0, 5, 70_000, 1 << 20, 300_001][i % 5] + i, seed: UInt64(400 + i))
            s.write("doc-\(i)", bytes)
            let r = s.run("add", "doc-\(i)", "--name", "scan \(i).pdf")
            precondition(r.status == 0, r.stderr)
            originals["scan \(i).pdf"] = bytes
        }
        return originals
    }

    /// One document of the objects shape: `text` as its data, the SHA-256 of `claimed` as its digest.
    static func entry(_ id: String, _ name: String, _ text: String, as claimed: String) -> String {
        let data = Data(text.utf8).base64EncodedString()
        return #"{"Id":"\#(id)","Name":"\#(name)","ContentType":"text/plain","Size":\#(text.utf8.count),"#
            + #""SHA256":"\#(sha(Array(claimed.utf8)))","Data":"\#(data)"}"#
    }

    static func sha(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    static func read(_ path: String) -> [UInt8] { Array((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()) }
    static func write(_ path: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    /// `curl -sS -D - [args]` in the sandbox: the status, the headers (lowercased names) and the body.
    static func curl(_ s: Sandbox, _ args: [String]) -> (status: Int, headers: [String: String], body: String) {
        let quoted = args.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let r = s.shell("curl -sS -D curl.head -o curl.body \(quoted)")
        let head = (try? String(contentsOfFile: s.path("curl.head"), encoding: .utf8)) ?? ""
        let body =
            (try? Data(contentsOf: URL(fileURLWithPath: s.path("curl.body")))).map {
                String(decoding: $0, as: UTF8.self)
            } ?? ""
        var headers: [String: String] = [:]
        var status = r.status == 0 ? 0 : -Int(r.status)
        for line in head.split(separator: "\r\n") {
            if line.hasPrefix("HTTP/") { status = Int(line.split(separator: " ")[1]) ?? 0; headers = [:]; continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased(),
                value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + "\n" + value } ?? value
        }
        return (status, headers, body)
    }
}
