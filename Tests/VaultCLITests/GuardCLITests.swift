import Foundation
import Testing
import VaultTestSupport

/// Every check that loops over files it finds (symbol graphs, fuzz inputs, schemas, the manual's
/// examples) fails when it finds none: run here on an empty input, and on the real one.
@Suite(.blocking) struct GuardCLITests {
    /// Runs `arguments` from the repository's root; status and everything printed.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: arguments[0])
        p.arguments = Array(arguments.dropFirst())
        p.currentDirectoryURL = Sandbox.repository
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, output)
    }

    static func script(_ name: String) -> String { Sandbox.repository.appendingPathComponent("scripts/" + name).path }

    @Test func theDocumentationCoverageFailsWhenItFindsNoSymbolGraph() throws {
        let s = Sandbox()
        try FileManager.default.createDirectory(
            atPath: s.path("build/x86_64-unknown-linux-gnu/extracted-symbols/other/VaultCore"),
            withIntermediateDirectories: true)
        let r = try Self.run([Peer.python, Self.script("docs-coverage.py"), s.path("build"), "VaultCore", "VaultUpload"]
        )
        #expect(r.status == 1)
        #expect(r.output.contains("docs-coverage: no symbol graph of VaultCore under"), "\(r.output)")
        #expect(r.output.contains("no public symbol was counted"), "\(r.output)")
    }

    @Test func aFuzzReplayOfNothingFailsAndOfTheRegressionsReplaysEach() throws {
        let s = Sandbox()
        try FileManager.default.createDirectory(atPath: s.path("empty"), withIntermediateDirectories: true)
        let fuzzvault = URL(fileURLWithPath: Sandbox.binary).deletingLastPathComponent().appendingPathComponent(
            "fuzzvault"
        ).path
        let empty = try Self.run([fuzzvault, "s3", s.path("empty")])
        #expect(empty.status == 66 && empty.output == "fuzzvault s3: no input to replay\n", "\(empty.output)")
        let none = try Self.run([fuzzvault, "s3"])
        #expect(none.status == 66)
        let regressions = try FileManager.default.contentsOfDirectory(
            atPath: Sandbox.repository.appendingPathComponent("Fuzz/regressions/s3").path)
        let replayed = try Self.run([fuzzvault, "s3", "Fuzz/regressions/s3"])
        #expect(
            replayed.status == 0 && replayed.output.contains("fuzzvault s3: \(regressions.count) inputs replayed"),
            "\(replayed.output)")
        #expect(regressions.count >= 3)
    }

    @Test func theSchemaCheckFailsOnAnEmptyFolderAndPassesOnEverySchema() throws {
        let s = Sandbox()
        try FileManager.default.createDirectory(atPath: s.path("empty"), withIntermediateDirectories: true)
        let empty = try Self.run([Peer.python, Self.script("check-schemas.py"), s.path("empty")])
        #expect(empty.status == 1 && empty.output.contains("no *.schema.json in"), "\(empty.output)")
        let schemas = try FileManager.default.contentsOfDirectory(
            atPath: Sandbox.repository.appendingPathComponent("docs/schemas").path
        )
        .filter { $0.hasSuffix(".schema.json") }
        let all = try Self.run([Peer.python, Self.script("check-schemas.py"), "docs/schemas"])
        #expect(
            all.status == 0 && all.output.contains("\(schemas.count) of \(schemas.count) schemas valid"),
            "\(all.output)")
        #expect(schemas.count >= 19)
        // A schema whose $id names another file is refused.
        s.write(
            "empty/list.schema.json",
            Array(
                (#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "#
                    + #""$id": "https://vault.example/schemas/add.schema.json"}"#).utf8))
        let wrong = try Self.run([Peer.python, Self.script("check-schemas.py"), s.path("empty")])
        #expect(wrong.status == 1 && wrong.output.contains("does not name the file"), "\(wrong.output)")
    }

    @Test func theManualFailsWithoutTheREADMEsExamples() throws {
        let s = Sandbox()
        s.write("README.md", Array("# vault\n\n## Use\n\nNo examples here.\n".utf8))
        let page = s.path("page.1")
        s.write("page.1", Array(".Dd x\n.Sh DESCRIPTION\nExit codes:\n  0    success\n.Sh \"EXIT STATUS\"\n".utf8))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Peer.python)
        p.arguments = [Self.script("man-finish.py"), s.path("README.md")]
        p.standardInput = FileHandle(forReadingAtPath: page)
        let pipe = Pipe()
        p.standardError = pipe
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 1 && output.contains("man-finish: no examples"), "\(output)")
    }

    /// The `@Suite` lines of `source` without the `.blocking` trait.
    static func suitesNotBlocking(_ source: String) -> [String] {
        source.split(separator: "\n").filter { $0.hasPrefix("@Suite") && !$0.contains(".blocking") }.map(String.init)
    }

    /// Every CLI suite runs its tests on threads of their own (``BlockingTrait``): a suite
    /// without it would run its waiting tests on the two threads of the cooperative pool, and
    /// the whole suite would wait behind them.
    @Test func everyCLISuiteRunsOnThreadsOfItsOwn() throws {
        let folder = Sandbox.repository.appendingPathComponent("Tests/VaultCLITests").path
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".swift") }
        var suites = 0
        for file in files {
            let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            suites += text.split(separator: "\n").filter { $0.hasPrefix("@Suite") }.count
            #expect(Self.suitesNotBlocking(text).isEmpty, "\(file): \(Self.suitesNotBlocking(text))")
        }
        #expect(suites >= 20, "found \(suites) suites")
        // The check finds a planted offender.
        #expect(
            Self.suitesNotBlocking("@Suite struct Planted {}\n@Suite(.blocking) struct Fine {}") == [
                "@Suite struct Planted {}"
            ])
    }
}
