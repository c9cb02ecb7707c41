import Foundation
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
}
