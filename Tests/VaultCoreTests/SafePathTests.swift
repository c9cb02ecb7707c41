import Testing
import VaultCore

/// Where documents go under a folder or in an archive (`SafePath`).
struct SafePathTests {
    @Test func anArchivesNamesUnpackOnWindowsWithoutLeavingTheirFolder() {
        #expect(SafePath.portable(#"..\..\evil.txt"#) == ".._.._evil.txt")
        #expect(SafePath.portable(#"C:\Windows\evil.txt"#) == "C__Windows_evil.txt")
        #expect(SafePath.portable("x:y/aux.txt ") == "x_y/_aux.txt")
        #expect(SafePath.portable("a/CON/com1.log/nul") == "a/_CON/_com1.log/_nul")
        #expect(SafePath.portable("report?.pdf. . ") == "report_.pdf")
        #expect(SafePath.portable("...") == "_")
        #expect(SafePath.portable("inbox/scan \"7\" <draft>|½.pdf") == "inbox/scan _7_ _draft__½.pdf")
        #expect(SafePath.portable("console.txt/LPT10") == "console.txt/LPT10")
    }

    @Test func aClashBecomesUniqueWithoutTakingAnotherDocumentsName() {
        #expect(
            SafePath.unique(["a/r.pdf", "a/r.pdf", "a/r (2).pdf", "a/r.pdf"])
                == ["a/r.pdf", "a/r (3).pdf", "a/r (2).pdf", "a/r (4).pdf"])
        #expect(SafePath.unique(["x", "x", ".profile", ".profile"]) == ["x", "x (2)", ".profile", ".profile (2)"])
        #expect(SafePath.unique([]) == [])
    }
}
