import Foundation
import Testing
@testable import VaultCore

/// What keeps the `vault` binary free of Foundation's classes, and with them of ICU and libxml2
/// (docs/PERFORMANCE.md, "start-up and size"): the modules it links import only
/// FoundationEssentials, and what replaced Foundation's formatters, parsers and string
/// functions gives what they gave, compared here with Foundation itself on many inputs.
@Suite struct LeanBinaryTests {
    /// Folders under Sources/ of modules the binary does not link.
    static let notLinked = ["VaultFoundation/", "vault-fixture/"]

    /// `path:line: import` for each import of Foundation's ICU-bound modules, or of a library
    /// that brings them, in a module the binary links; `import Foundation` is allowed only as
    /// the fallback of `#if canImport(FoundationEssentials)` (platforms without it).
    static func offenders(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files where !notLinked.contains(where: { path.hasPrefix($0) }) {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
                ($0.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                    .trimmingCharacters(in: .whitespaces)
            }
            for (n, line) in lines.enumerated() {
                let words = line.split(separator: " ")
                guard let i = words.firstIndex(of: "import"), i + 1 < words.count else { continue }
                let module = words[i + 1]
                let fallback =
                    module == "Foundation" && n >= 3 && lines[n - 1] == "#else"
                    && lines[n - 2] == "import FoundationEssentials"
                    && lines[n - 3] == "#if canImport(FoundationEssentials)"
                if ["Foundation", "FoundationXML", "FoundationNetworking", "Mustache"].contains(module) && !fallback {
                    found.append("\(path):\(n + 1): \(line)")
                }
            }
        }
        return found
    }

    @Test func theModulesTheBinaryLinksImportOnlyFoundationEssentials() throws {
        let files = try PortabilityTests.swiftFiles()
        #expect(files.count > 100, "found only \(files.count) Swift files")
        #expect(files.contains { $0.1.contains("\nimport FoundationEssentials\n") })
        let offenders = Self.offenders(in: files)
        #expect(
            offenders.isEmpty, "imports that link Foundation's classes and ICU:\n\(offenders.joined(separator: "\n"))")
    }

    @Test func theCheckFindsPlantedImports() {
        let planted = [
            ("VaultCore/A.swift", "import Foundation\nlet a = 1"),
            ("VaultS3/B.swift", "#if canImport(FoundationXML)\nimport FoundationXML\n#endif"),
            ("VaultReceive/C.swift", "@preconcurrency import Mustache"),
            (
                "VaultCore/D.swift",
                "#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif"
            ),
            ("VaultFoundation/E.swift", "import Foundation"),
            ("vault/F.swift", "// import Foundation is mentioned only")
        ]
        #expect(
            Self.offenders(in: planted) == [
                "VaultCore/A.swift:1: import Foundation", "VaultS3/B.swift:2: import FoundationXML",
                "VaultReceive/C.swift:1: @preconcurrency import Mustache"
            ])
    }

    /// `path: Type` for each command whose configuration leaves its name to swift-argument-parser,
    /// which then derives it with `String(describing:)`: a scan of every protocol conformance in
    /// the binary per command at each start, about half of `vault --version`'s time.
    static func unnamedCommands(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files where path.hasPrefix("vault/") {
            var rest = text[...]
            while let r = rest.firstRange(of: "CommandConfiguration(") {
                let head = rest[r.upperBound...].prefix(400)
                if !head.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("commandName:") {
                    let before = text[..<r.lowerBound]
                    let type = before.ranges(of: "struct ").last.map { before[$0.upperBound...].prefix { $0.isLetter } }
                    found.append("\(path): \(type ?? "?")")
                }
                rest = rest[r.upperBound...]
            }
        }
        return found
    }

    @Test func everyCommandNamesItself() throws {
        let files = try PortabilityTests.swiftFiles()
        let configurations = files.filter { $0.0.hasPrefix("vault/") }.map {
            $0.1.ranges(of: "CommandConfiguration(").count
        }
        #expect(configurations.reduce(0, +) >= 40)
        #expect(Self.unnamedCommands(in: files).isEmpty, "\(Self.unnamedCommands(in: files))")
        let planted = [
            (
                "vault/A.swift",
                "struct Add: ParsableCommand {\n    static let configuration = CommandConfiguration(\n"
                    + "        abstract: \"x\")"
            ),
            (
                "vault/B.swift",
                "struct Get: ParsableCommand {\n    static let configuration = CommandConfiguration(\n"
                    + "        commandName: \"get\")"
            )
        ]
        #expect(Self.unnamedCommands(in: planted) == ["vault/A.swift: Add"])
    }

    /// Instants from before 1970 to 2200, leap days and ends of months among them.
    static let instants: [Int64] = {
        var generator = SystemRandomNumberGenerator()
        var millis: [Int64] = [
            0, -1, 999, 1000, 951_782_400_000, 951_868_799_999, 1_709_164_800_000, 4_107_542_399_999,
            -62_135_596_800_000, 253_402_300_799_000, 1_795_000_000_123
        ]
        for _ in 0..<3000 { millis.append(Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &generator)) }
        return millis
    }()

    @Test func timesAreWrittenAsFoundationsFormattersWroteThem() {
        let iso = ISO8601DateFormatter()
        let millis = ISO8601DateFormatter()
        millis.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func formatter(_ format: String) -> DateFormatter {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "UTC")
            f.dateFormat = format
            return f
        }
        let http = formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'")
        let compact = formatter("yyyyMMdd'T'HHmmss'Z'")
        let readable = formatter("yyyy-MM-dd HH:mm:ss 'UTC'")
        let minutes = formatter("yyyy-MM-dd HH:mm")
        // From 1582-10-15 (Foundation's calendar is Julian before).
        for m in Self.instants where m >= -12_219_292_800_000 {
            let date = Date(timeIntervalSince1970: Double(m) / 1000)
            let t = UTCTime(millis: m)
            #expect(t.iso8601 == iso.string(from: date), "\(m)")
            #expect(t.iso8601Millis == millis.string(from: date), "\(m)")
            #expect(t.httpDate == http.string(from: date), "\(m)")
            #expect(t.compact == compact.string(from: date), "\(m)")
            #expect(t.readable == readable.string(from: date), "\(m)")
            #expect(t.minutes == minutes.string(from: date), "\(m)")
            #expect(t.millis == m && UTCTime(date).millis == m, "\(m)")
        }
    }

    /// Times no calendar field can hold (an expiry 10^13 s away, infinity) are the range's ends,
    /// not a trap (found by a review: a receiver's `--upload-expiry 1e13` crashed it).
    @Test func timesBeyondTheYears1To9999AreTheirEnds() {
        let last = "9999-12-31T23:59:59Z", first = "0001-01-01T00:00:00Z"
        #expect(UTCTime(Date(timeIntervalSince1970: .infinity)).iso8601 == last)
        #expect(UTCTime(Date(timeIntervalSince1970: 1e13)).iso8601 == last)
        #expect(UTCTime(Date().addingTimeInterval(1e13)).httpDate == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(UTCTime(Date(timeIntervalSince1970: -.infinity)).iso8601 == first)
        #expect(UTCTime(Date(timeIntervalSince1970: .nan)).iso8601 == first)
        #expect(UTCTime(Date(timeIntervalSince1970: -1e300)).iso8601 == first)
        #expect(Seconds.tenths(.infinity) == "inf" && Seconds.whole(1e300) == "1e+300" && Seconds.whole(2.5) == "2")
    }

    @Test func timesAreReadAsFoundationsParsersReadThem() {
        let iso = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        let http = DateFormatter()
        http.locale = Locale(identifier: "en_US_POSIX")
        http.timeZone = TimeZone(identifier: "GMT")
        http.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        for m in Self.instants where m >= 0 {
            let date = Date(timeIntervalSince1970: Double(m) / 1000)
            let whole = Date(timeIntervalSince1970: Double(m / 1000))
            let text = iso.string(from: date), withMillis = fractional.string(from: date)
            #expect(UTCTime.parseISO8601(text) == iso.date(from: text) && iso.date(from: text) == whole, "\(text)")
            #expect(UTCTime.millis(iso8601: withMillis, fraction: true) == m, "\(withMillis)")
            let h = http.string(from: date)
            #expect(UTCTime.parseHTTPDate(h) == http.date(from: h), "\(h)")
            let d = String(text.prefix(10))
            #expect(UTCTime.parseDay(d) == day.date(from: d), "\(d)")
        }
        // Offsets, and what neither reads.
        for text in ["2026-11-26T10:05:03+01:00", "2026-11-26T08:05:03-01:00", "2026-11-26T09:05:03Z"] {
            #expect(UTCTime.parseISO8601(text) == iso.date(from: text), "\(text)")
            #expect(UTCTime.parseISO8601(text) == Date(timeIntervalSince1970: 1_795_683_903), "\(text)")
        }
        for text in [
            "", "2026-11-26", "2026-13-01T00:00:00Z", "2026-11-26T09:05:03", "2026-11-26 09:05:03Z",
            "x2026-11-26T09:05:03Z",
        ] {
            #expect(UTCTime.parseISO8601(text) == nil && iso.date(from: text) == nil, "\(text)")
        }
        // Where Foundation's parsers were lenient, vault now refuses: a day past the month's end
        // (Foundation read 2026-02-30 as March 2), 24:00 (as the next day's midnight), and an
        // HTTP date without its zone.
        #expect(iso.date(from: "2026-02-30T00:00:00Z") == Date(timeIntervalSince1970: 1_772_409_600))
        for text in ["2026-02-30T00:00:00Z", "2026-11-26T24:00:00Z", "2026-04-31T00:00:00Z"] {
            #expect(UTCTime.parseISO8601(text) == nil, "\(text)")
        }
        #expect(UTCTime.parseISO8601("2026-11-26T09:05:03.5Z") == nil)
        #expect(UTCTime.millis(iso8601: "2026-11-26T09:05:03.5Z", fraction: true) == 1_795_683_903_500)
        #expect(UTCTime.parseHTTPDate("Thu, 26 Nov 2026 09:05:03 GMT") == Date(timeIntervalSince1970: 1_795_683_903))
        for text in ["Thu, 26 Nov 2026 09:05:03", "Thu, 31 Nov 2026 09:05:03 GMT", "26 Nov 2026 09:05:03 GMT"] {
            #expect(UTCTime.parseHTTPDate(text) == nil, "\(text)")
        }
    }

    @Test func stringsAreTrimmedPaddedAndWrittenAsFoundationDid() {
        let scalars: [Unicode.Scalar] = [
            " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{1680}", "\u{2000}", "\u{200A}",
            "\u{200B}", "\u{2028}", "\u{2029}", "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}", "a", "é", "/", "\""
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                s.append(scalars.randomElement(using: &generator)!)
            }
            let text = String(s)
            #expect(text.trimmingSpaces() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(
                text.trimmingSpacesAndNewlines() == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(text.debugDescription)")
            #expect(text.trimming("/") == text.trimmingCharacters(in: CharacterSet(charactersIn: "/")))
            #expect(text.trimming("\"") == text.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
        for v in [0, 1, 9, 15, 16, 0x7F, 0xAB, 0xFF, 0x1F600] {
            #expect(Hex.digits(v) == String(format: "%02x", v) && Hex.digits(v, width: 4) == String(format: "%04x", v))
            #expect(Hex.digits(v, uppercase: true) == String(format: "%02X", v))
        }
        for v in [0, 7, 42, 99_999, 123_456] {
            #expect(
                zeroPadded(v, 12) == String(format: "%012d", v)
                    && String(v).padded(to: 5, leading: true) == String(format: "%5d", v))
        }
        for s in [0.0, 0.04, 0.05, 0.25, 0.35, 1.25, 2.449, 9.95, 12.0, 123.456, 3600.5] {
            #expect(Seconds.tenths(s) == String(format: "%.1f", s), "\(s)")
        }
        for s in [1.0, 30, 0.5, 2.5, 0.125, 600, 1e-3] { #expect(Seconds.text(s) == String(format: "%g", s), "\(s)") }
        #expect("set".padded(to: 8) == "set".padding(toLength: 8, withPad: " ", startingAt: 0))
    }
}
