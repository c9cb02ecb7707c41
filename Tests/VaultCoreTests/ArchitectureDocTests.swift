import Foundation
import Testing

/// docs/ARCHITECTURE.md names types, members, files and folders as they are in the code: one it
/// names that no longer exists fails here, so the floor plan cannot drift from the building.
struct ArchitectureDocTests {
    static var root: URL { SourceShapeTests.root }

    /// Every Swift file under Sources/ and Tests/, as one text to search.
    static func code() throws -> String {
        var text = ""
        for folder in ["Sources", "Tests"] {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for f in files where f.hasSuffix(".swift") {
                text += try String(contentsOf: base.appendingPathComponent(f), encoding: .utf8) + "\n"
            }
        }
        return text
    }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path)
    }

    /// `Name` is declared as a type, or is a module or a folder of one; `Name.member` also has
    /// that member declared.
    static func declared(_ span: String, in code: String) -> Bool {
        let parts = span.split(separator: ".", maxSplits: 1).map(String.init)
        let type = parts[0]
        let asType = code.range(
            of: #"\b(struct|class|enum|actor|protocol|typealias) \#(type)\b"#, options: .regularExpression) != nil
        let asFolder = exists("Sources/\(type)")
            || ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path))
                ?? []).contains { exists("Sources/\($0)/\(type)") }
        guard asType || asFolder else { return false }
        guard parts.count == 2 else { return true }
        let member = String(parts[1].prefix { $0.isLetter || $0.isNumber })
        return code.range(
            of: #"\b(func|case|var|let|struct|class|enum) `?\#(member)\b"#, options: .regularExpression) != nil
    }

    @Test func everyTypeFileAndLinkItNamesExists() throws {
        let doc = try String(
            contentsOf: Self.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let code = try Self.code()
        var checked = 0
        var missing: [String] = []
        for match in doc.matches(of: /`([^`\n]+)`/) {
            let span = String(match.1)
            if span.hasSuffix(".md") && !span.contains("/") {
                checked += 1
                if !Self.exists("docs/" + span) { missing.append("no document docs/\(span)") }
            } else if span.contains("/") && !span.contains(" ") && !span.contains("<") {
                checked += 1
                if !Self.exists(span) { missing.append("no file or folder \(span)") }
            } else if span.wholeMatch(of: /[A-Z][A-Za-z0-9]+(\.[A-Za-z]+(\([a-z:]*\))?)?/) != nil {
                checked += 1
                if !Self.declared(span, in: code) { missing.append("nothing declares \(span)") }
            }
        }
        for match in doc.matches(of: /\]\(([^)#]+)\)/) {
            checked += 1
            let target = "docs/" + String(match.1)
            if !Self.exists(target) { missing.append("a link to \(match.1), which is not there") }
        }
        #expect(checked > 60, "the document names \(checked) things: a pattern stopped matching")
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md: \(missing.joined(separator: "; "))")
    }
}
