import Foundation
import Testing
import VaultTestSupport

/// `vault receive --log-format`: lines a log collector parses, on the built binary. A refusal's
/// result has a space and a batch key a quote and a backslash; each comes back whole from the
/// line, at the level it is logged at.
@Suite(.blocking) struct ReceiveLogCLITests {
    /// Sends one refused batch (a wrong token) with a hostile key; the receiver's log lines.
    static func refusedBatchLog(format: String) throws -> [String] {
        let s = Sandbox()
        let office = try ReceiverProcess(s, extra: ["--log-format", format])
        _ = office.addStation("front-desk")
        let answer = office.curl(
            token: "not-a-token",
            [
                "-H", #"Idempotency-Key: k"1\x"#, "-H", "Content-Type: application/json", "--data", "{}",
                office.url + "/batches"
            ])
        #expect(answer.status == 401, "\(answer)")
        var lines: [String] = []
        #expect(
            poll(every: 20_000) {
                lines = office.log.split(separator: "\n").map(String.init)
                return lines.contains { $0.contains("401") }
            }, "the refusal is logged: \(office.log)")
        return lines
    }

    @Test func jsonLinesAreObjectsWithTheValuesWhole() throws {
        let lines = try Self.refusedBatchLog(format: "json")
        let objects = lines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: String]
        }
        #expect(objects.count == lines.count, "every line is one JSON object of strings: \(lines)")
        let refusal = try #require(objects.first { $0["result"]?.hasPrefix("401") == true }, "\(lines)")
        #expect(refusal["msg"] == "batch" && refusal["level"] == "warning", "\(refusal)")
        #expect(refusal["result"] == "401 unauthorized" && refusal["batch"] == #"k"1\x"#, "\(refusal)")
        #expect(refusal["time"]?.hasSuffix("Z") == true, "\(refusal)")
    }

    @Test func logfmtQuotesWhatWouldOtherwiseSplitAValue() throws {
        let lines = try Self.refusedBatchLog(format: "logfmt")
        let line = try #require(lines.first { $0.contains("401") }, "\(lines)")
        let fields = Self.logfmt(line)
        #expect(fields["msg"] == "batch" && fields["level"] == "warning", "\(line)")
        #expect(fields["result"] == "401 unauthorized", "\(line)")
        #expect(fields["batch"] == #"k"1\x"#, "\(line)")
        #expect(line.contains(#"batch="k\"1\\x""#), "quoted with escapes: \(line)")
    }

    /// A logfmt line read back as a log collector reads it (bare values end at a space; quoted
    /// ones at an unescaped quote, `\"` and `\\` escaped).
    static func logfmt(_ line: String) -> [String: String] {
        var out: [String: String] = [:]
        var rest = Substring(line)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " }
            guard let eq = rest.firstIndex(of: "=") else { break }
            let key = String(rest[..<eq])
            rest = rest[rest.index(after: eq)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let c = rest.first, c != "\"" {
                    rest = rest.dropFirst()
                    if c == "\\", let next = rest.first {
                        value.append(next == "n" ? "\n" : next == "t" ? "\t" : next)
                        rest = rest.dropFirst()
                    } else {
                        value.append(c)
                    }
                }
                rest = rest.dropFirst()
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            out[key] = value
        }
        return out
    }
}
