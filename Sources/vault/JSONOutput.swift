import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// JSON for scripts, from `Codable` values: one line, sorted keys, `/` unescaped.
enum JSONOutput {
    /// `value` as one line of JSON, with a trailing newline; keys sorted, so the output is the
    /// same from run to run.
    static func line<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain structs of strings and numbers cannot fail.
        let text = String(decoding: try! encoder.encode(value), as: UTF8.self)
        return escapingInvisibles(text) + "\n"
    }

    /// `json` with the C1 controls and the bidirectional controls inside its strings written as
    /// `\uXXXX` (the same string to a parser; shown, not obeyed, on a terminal). They can only
    /// be inside strings: outside, JSON has none.
    static func escapingInvisibles(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x80...0x9F).contains($0.value) || Terminal.isBidiControl($0) })
        else { return json }
        var out = String.UnicodeScalarView()
        for u in json.unicodeScalars {
            if (0x80...0x9F).contains(u.value) || Terminal.isBidiControl(u) {
                out.append(contentsOf: ("\\u" + Hex.digits(u.value, width: 4)).unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return String(out)
    }

    /// `s` quoted as a JSON string, with the invisibles ``escapingInvisibles(_:)`` escapes
    /// escaped too (a payload's strings are ``JSONString``'s own, byte for byte: this is for
    /// what people may read on a terminal).
    static func quoted(_ s: String) -> [UInt8] {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return JSONString.quoted(s) }
        return Array(escapingInvisibles(String(decoding: JSONString.quoted(s), as: UTF8.self)).utf8)
    }

    /// Seconds since `start`, to the millisecond.
    static func seconds(since start: Date) -> Double {
        (Date().timeIntervalSince(start) * 1000).rounded() / 1000
    }

    /// ISO 8601 (UTC, seconds) for a time in milliseconds since 1970.
    static func iso(millis: Int64) -> String {
        UTCTime(millis: millis).iso8601
    }
}

/// `--json` on add, remove, export and upload: the result as one JSON object on stdout.
struct ResultOptions: ParsableArguments {
    @Flag(help: "Print the result as one JSON object on standard output.")
    var json = false
}

/// `-q` and `--json` on a command whose result is a line or a report and that has no progress.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print nothing but errors and warnings; the exit status is the result.")
    var quiet = false

    @Flag(help: "Print the result as one JSON object on standard output.")
    var json = false

    func validate() throws {
        if quiet && json { throw ValidationError("-q and --json contradict each other.") }
    }
}

/// `-q` on a command whose only output is the line on standard error that says what it changed.
struct QuietOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print nothing but errors and warnings; the exit status is the result.")
    var quiet = false
}
