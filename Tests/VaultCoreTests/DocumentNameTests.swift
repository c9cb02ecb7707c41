import Testing

@testable import VaultCore

/// The rule for names that cross to a back office (docs/RECEIVE.md): relative paths with
/// folders are taken; what could leave a folder or fake what a list shows is refused, with why.
@Suite struct DocumentNameTests {
    @Test(arguments: [
        "scan.pdf", "2026/03/scan.pdf", "clients/Acme GmbH/offer.pdf", "ünï 文件 🎉.pdf", "a/.hidden", "..x/y..",
        "...", "a b/c d", "C:\\dir\\scan.pdf", "back\\", String(repeating: "n", count: 4096)
    ])
    func aRelativePathIsTaken(name: String) {
        #expect(DocumentName.problem(name) == nil, "\(name)")
    }

    @Test(arguments: [
        ("", "is empty"),
        ("/etc/passwd", "is an absolute path (it starts with /)"),
        ("a//b", "has an empty folder name (// or a / at its end)"),
        ("a/", "has an empty folder name (// or a / at its end)"),
        ("..", "has a '..' part, which names a folder"),
        ("a/../../b", "has a '..' part, which names a folder"),
        ("./a", "has a '.' part, which names a folder"),
        ("scan\t1.pdf", "has a control character"),
        ("a\u{7F}", "has a control character"),
        ("a\u{85}", "has a control character"),
        ("evil\u{202E}fdp.exe", "has a control character"),
        ("a\u{2066}b", "has a control character"),
        ("line\u{2028}two", "has a control character")
    ])
    func whatCouldLeaveAFolderOrFakeAListIsRefused(name: String, why: String) {
        #expect(DocumentName.problem(name) == why, "\(name.debugDescription)")
    }

    /// NFC: a name decomposed (as macOS file names are) is composed; one in NFC is unchanged.
    @Test func namesAreKeptInNormalizationFormC() {
        let decomposed = "cafe\u{301}/re\u{301}sume\u{301}.pdf"
        let composed = "caf\u{E9}/r\u{E9}sum\u{E9}.pdf"
        #expect(Array(DocumentName.normalized(decomposed).utf8) == Array(composed.utf8))
        #expect(Array(DocumentName.normalized(composed).utf8) == Array(composed.utf8))
        #expect(DocumentName.normalized("plain/ascii.txt") == "plain/ascii.txt")
        // Hangul jamo compose too (the standard library's own tables, no ICU).
        #expect(Array(DocumentName.normalized("\u{1100}\u{1161}").utf8) == Array("\u{AC00}".utf8))
    }
}
