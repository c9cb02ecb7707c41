import Foundation
import Testing

/// How the code reads, checked over every Swift file of the project (Sources/, Examples/,
/// Fuzz/, Tests/): no control flow on message text, and no line over 120 columns.
@Suite struct SourceShapeTests {
    static var root: URL { PortabilityTests.sources.deletingLastPathComponent() }

    /// Every Swift file under `folders` of the project, relative path and text.
    static func swiftFiles(in folders: [String]) throws -> [(String, String)] {
        var out: [(String, String)] = []
        for folder in folders {
            let base = root.appendingPathComponent(folder).path
            let all = FileManager.default.enumerator(atPath: base)?.compactMap { $0 as? String } ?? []
            for path in all.sorted() where path.hasSuffix(".swift") && !path.contains(".build") {
                out.append(("\(folder)/\(path)", try String(contentsOfFile: base + "/" + path, encoding: .utf8)))
            }
        }
        return out
    }

    /// Deciding by what an error or an answer says in words: searching a message, a hint, a
    /// description or a reason (or a server's answer body) as text, or comparing it whole.
    /// Errors are matched by code, remedy or cause type; answers are parsed.
    static let proseDecisions = try! NSRegularExpression(
        pattern: #"\b(?:message|hint|description|localizedDescription|errorDescription|reason|body)\??\."#
            + #"(?:lowercased\(\)\.)?(?:contains(?!\(\d)|hasPrefix|hasSuffix|starts\(with|range\(of|firstRange|"#
            + #"replacingOccurrences)|\.message\s*[!=]=|"\\\((?:e|error)\)"\.(?:contains|hasPrefix)|"#
            + #"String\(describing: \w+\)\.(?:contains|hasPrefix)"#)

    /// `path:line` for each line of code (comments aside) in `files` that decides by prose.
    static func proseOffenders(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files {
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                if code.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                if proseDecisions.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    found.append("\(path):\(n + 1): \(code.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        return found
    }

    /// `path:line (columns)` for each line longer than `limit` columns.
    static func longLines(in files: [(String, String)], limit: Int = 120) -> [String] {
        var found: [String] = []
        for (path, text) in files {
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.count > limit {
                found.append("\(path):\(n + 1) (\(line.count) columns)")
            }
        }
        return found
    }

    /// A function, initializer or test declaration (not in a comment).
    static let declaration = try! NSRegularExpression(pattern: #"^\s*(?:[^/\s].*\s)?(?:func\s+\w|init[?!]?\s*[(<])"#)

    /// `path:line name (lines)` for each function longer than `limit` lines, counted from its
    /// declaration to its closing brace (braces in string literals and comments aside), unless
    /// a `// Long:` comment just above it says why.
    static func longFunctions(in files: [(String, String)], limit: Int = 80) -> [String] {
        var found: [String] = []
        for (path, text) in files {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var inText = false  // inside a multi-line string literal
            var code: [String] = []  // each line without its literals and comments
            for line in lines {
                var kept = ""
                if line.components(separatedBy: "\"\"\"").count % 2 == 0 {
                    inText.toggle()
                    code.append("")
                    continue
                }
                if !inText {
                    kept = line.replacingOccurrences(
                        of: #""(?:\\.|[^"\\])*""#, with: "\"\"", options: .regularExpression)
                    if let comment = kept.range(of: "//") { kept = String(kept[..<comment.lowerBound]) }
                }
                code.append(kept)
            }
            for (n, line) in lines.enumerated()
            where declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                var above = n - 1
                var explained = false
                while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("//")
                    || lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@")
                {
                    if lines[above].contains("// Long:") { explained = true }
                    above -= 1
                }
                var depth = 0, opened = false, end = n
                scan: for i in n..<code.count {
                    for c in code[i] {
                        if c == "{" { depth += 1; opened = true } else if c == "}" { depth -= 1 }
                        if opened && depth == 0 { end = i; break scan }
                    }
                    if !opened && i > n + 15 { break }  // a protocol requirement: no body
                }
                let length = end - n + 1
                if opened && length > limit && !explained {
                    found.append("\(path):\(n + 1) (\(length) lines)")
                }
            }
        }
        return found
    }

    @Test func noFunctionIsLongerThan80LinesUnlessACommentSaysWhy() throws {
        let files = try Self.swiftFiles(in: ["Sources", "Examples", "Fuzz", "Tests"])
        #expect(files.count > 200, "found only \(files.count) files")
        let long = Self.longFunctions(in: files)
        let list = long.joined(separator: "\n")
        #expect(long.isEmpty, "functions over 80 lines (split them, or say why above with // Long:):\n\(list)")
        // planted: 81 lines, braces in strings and comments not counted; then the same explained
        let body = (0..<79).map { _ in "    let s = \"}\" // }" }.joined(separator: "\n")
        let planted = "func f() {\n" + body + "\n}\n"
        #expect(Self.longFunctions(in: [("Sources/A.swift", planted)]) == ["Sources/A.swift:1 (81 lines)"])
        #expect(Self.longFunctions(in: [("Sources/A.swift", "// Long: a table.\n" + planted)]).isEmpty)
        #expect(Self.longFunctions(in: [("Sources/A.swift", "func f() {\n" + body + "}\n")]).isEmpty)
    }

    @Test func noCodeDecidesByTheTextOfAMessage() throws {
        let files = try Self.swiftFiles(in: ["Sources", "Examples", "Fuzz"])
        #expect(files.count > 150, "found only \(files.count) files")
        let offenders = Self.proseOffenders(in: files)
        let list = offenders.joined(separator: "\n")
        #expect(offenders.isEmpty, "decisions on prose (match the code, remedy or cause; parse answers):\n\(list)")
    }

    @Test func noLineIsLongerThan120Columns() throws {
        let files = try Self.swiftFiles(in: ["Sources", "Examples", "Fuzz", "Tests"])
        #expect(files.count > 200, "found only \(files.count) files")
        let long = Self.longLines(in: files)
        #expect(long.isEmpty, "lines over 120 columns:\n\(long.joined(separator: "\n"))")
        let text = String(repeating: "x", count: 120) + "\n" + String(repeating: "y", count: 121)
        let planted = [("Sources/A.swift", text)]
        #expect(Self.longLines(in: planted) == ["Sources/A.swift:2 (121 columns)"])
    }

    @Test func theProseCheckFindsPlantedDecisions() {
        let planted = [
            (
                "Sources/A.swift",
                #"case .failure(let e): return e.message.contains("key epoch") ? .otherEpoch : .damaged"#
            ),
            ("Sources/B.swift", #"if ["permission denied"].contains(where: e.message.contains) { x }"#),
            ("Sources/C.swift", #"let s = hint.replacingOccurrences(of: "; nothing was changed", with: "")"#),
            ("Sources/D.swift", #"duplicate: r.body.contains("\"duplicate\": true")"#),
            (
                "Sources/E.swift",
                """
                    // e.message.contains(\"x\") in a comment is prose about code\nlet m = e.message + \"; nothing \
                    was sent\"
                    """
            ),
            (
                "Sources/F.swift",
                "guard !body.contains(0) else { return }\nlet w = \"(\\(h.errorDescription.lowercased()))\""
            ),
            ("Sources/G.swift", "if e.reason.lowercased().contains(\"timed out\") { retry() }")
        ]
        #expect(
            Self.proseOffenders(in: planted).map { $0.prefix(while: { $0 != " " }) }
                == [
                    "Sources/A.swift:1:", "Sources/B.swift:1:", "Sources/C.swift:1:", "Sources/D.swift:1:",
                    "Sources/G.swift:1:"
                ])
    }
}
