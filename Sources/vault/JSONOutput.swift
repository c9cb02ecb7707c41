import ArgumentParser
import Foundation

/// JSON for scripts, from `Codable` values: one line, sorted keys, `/` unescaped.
enum JSONOutput {
    /// `value` as one line of JSON, with a trailing newline; keys sorted, so the output is the
    /// same from run to run.
    static func line<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain structs of strings and numbers cannot fail.
        return String(decoding: try! encoder.encode(value), as: UTF8.self) + "\n"
    }

    /// Seconds since `start`, to the millisecond.
    static func seconds(since start: Date) -> Double {
        (Date().timeIntervalSince(start) * 1000).rounded() / 1000
    }

    /// ISO 8601 (UTC, seconds) for a time in milliseconds since 1970.
    static func iso(millis: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
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
