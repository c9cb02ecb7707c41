import Foundation
import Testing

/// Every way out of Swift 6's concurrency checking (`@unchecked Sendable`, `nonisolated(unsafe)`)
/// says why it is safe, next to it: a comment starting `// @unchecked:` or
/// `// nonisolated(unsafe):` within three lines.
@Suite struct ConcurrencyEscapesTests {
    /// `path:line` of each escape without its reason.
    static func unexplained(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (i, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                guard line.contains("@unchecked Sendable") || line.contains("nonisolated(unsafe)") else { continue }
                let window = lines[max(0, i - 3)...min(lines.count - 1, i + 3)]
                if !window.contains(where: { $0.contains("// @unchecked:") || $0.contains("// nonisolated(unsafe):") })
                {
                    found.append("\(path):\(i + 1)")
                }
            }
        }
        return found
    }

    @Test func everyEscapeSaysWhyItIsSafe() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Sources"
        ).standardized
        var files: [(String, String)] = []
        for case let url as URL in FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        where url.pathExtension == "swift" {
            files.append((url.path, try String(contentsOf: url, encoding: .utf8)))
        }
        #expect(files.count > 100)
        #expect(Self.unexplained(in: files) == [])
    }

    @Test func theCheckFindsAnEscapeWithoutAReason() {
        let planted = [
            ("a.swift", "final class A: @unchecked Sendable {\n    var x = 0\n}\n"),
            (
                "b.swift",
                "final class B: @unchecked Sendable {\n    // @unchecked: x is under a lock.\n    var x = 0\n}\n"
            ),
            ("c.swift", "nonisolated(unsafe) var y = 1\n")
        ]
        #expect(Self.unexplained(in: planted) == ["a.swift:1", "c.swift:1"])
    }
}
