import Foundation
import Testing

/// The rest of the code names no platform: `Glibc`, `Darwin`, and Linux-only calls appear only
/// in the platform files (one per module, `Platform.swift`), each behind `#if` with a fallback.
@Suite struct PortabilityTests {
    /// Words that tie code to one platform.
    static let platformWords = [
        "Glibc", "Darwin", "fallocate", "sync_file_range", "posix_fadvise", "prctl", "PR_SET_",
        "O_DIRECT", "st_mtim", "FALLOC_FL", "SYNC_FILE_RANGE", "F_FULLFSYNC", "CVaultSystem"
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Sources")
    }

    /// Every Swift file under Sources/, relative path and text.
    static func swiftFiles() throws -> [(String, String)] {
        let root = sources.path
        let all = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return try all.filter { $0.hasSuffix(".swift") }.sorted().map {
            ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8))
        }
    }

    /// `path:line: word` for each platform word outside a platform file (comments ignored).
    static func offenders(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files where !path.hasSuffix("/Platform.swift") {
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                for word in platformWords where code.contains(word) { found.append("\(path):\(n + 1): \(word)") }
            }
        }
        return found
    }

    @Test func platformCallsStayInThePlatformFiles() throws {
        let files = try Self.swiftFiles()
        #expect(files.count > 40, "found only \(files.count) Swift files under \(Self.sources.path)")
        let offenders = Self.offenders(in: files)
        #expect(offenders.isEmpty, "platform calls outside Platform.swift:\n\(offenders.joined(separator: "\n"))")
        // And there is exactly one platform file per module that needs one.
        let platformFiles = files.map(\.0).filter { $0.hasSuffix("/Platform.swift") }
        #expect(platformFiles == ["VaultCore/Support/Platform.swift", "vault/Platform.swift"])
    }

    @Test func theCheckFindsPlantedCallsAndIgnoresComments() {
        let planted = [
            ("VaultCore/Store/X.swift", "import Foundation\n#if canImport(Glibc)\nlet t = st.st_mtim // x"),
            ("vault/Y.swift", "// Glibc is mentioned in a comment only"),
            ("vault/Platform.swift", "import Glibc\nprctl(PR_SET_DUMPABLE, 0)")
        ]
        #expect(
            Self.offenders(in: planted) == ["VaultCore/Store/X.swift:2: Glibc", "VaultCore/Store/X.swift:3: st_mtim"])
    }
}
