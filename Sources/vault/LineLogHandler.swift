import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import VaultCore

/// `vault receive --log-format`: how each log line is written on standard error.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    /// swift-log's own lines (`TIME LEVEL label: key=value …`), for a person at a terminal.
    case text
    /// `time=… level=… msg=… key=value …`, a value quoted (`"…"`, `\"` and `\\` escaped, the
    /// invisible shown) when it is empty or holds a space, `=`, `"`, `\` or anything invisible.
    case logfmt
    /// One JSON object a line: `time`, `level`, `msg`, then the metadata, each a string.
    case json
}

/// A log handler writing one line per event on standard error, as logfmt or JSON lines, for log
/// collectors (Loki, Vector, journald's exporters) that parse them. swift-log ships only its
/// text handler, and no package of the machine's list writes these formats, so this is written
/// here: one function per format, each read back by a collector's rules (`ReceiveLogCLITests`).
struct LineLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    // swift-log's requirement, with every parameter it passes; the call site is not logged.
    func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        var all = metadata
        for (k, v) in explicit ?? [:] { all[k] = v }
        let fields = all.sorted { $0.key < $1.key }.map { ($0.key, "\($0.value)") }
        let time = UTCTime(millis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))).iso8601Millis
        let text =
            format == .json
            ? Self.json(time: time, level: level, message: "\(message)", fields: fields)
            : Self.logfmt(time: time, level: level, message: "\(message)", fields: fields)
        Terminal.raw(text + "\n")
    }

    /// One logfmt line.
    static func logfmt(time: String, level: Logger.Level, message: String, fields: [(String, String)]) -> String {
        ([("time", time), ("level", level.rawValue), ("msg", message)] + fields)
            .map { "\(key($0.0))=\(value($0.1))" }.joined(separator: " ")
    }

    /// One JSON object.
    static func json(time: String, level: Logger.Level, message: String, fields: [(String, String)]) -> String {
        let pairs = [("time", time), ("level", level.rawValue), ("msg", message)] + fields
        return "{" + pairs.map { k, v in quotedJSON(k) + ":" + quotedJSON(v) }.joined(separator: ",") + "}"
    }

    private static func quotedJSON(_ s: String) -> String {
        String(decoding: JSONString.quoted(s), as: UTF8.self)
    }

    /// A key as logfmt takes it: letters, digits, `_`, `-` and `.`; anything else becomes `_`.
    static func key(_ k: String) -> String {
        let kept = k.unicodeScalars.map { s -> Character in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "_-.".unicodeScalars.contains(s))
                ? Character(s) : "_"
        }
        return kept.isEmpty ? "_" : String(kept)
    }

    /// A value as logfmt takes it: bare when it is plain, else quoted, `"` and `\\` escaped and
    /// anything invisible shown as vault shows it on a terminal (``Terminal/printable(_:)``).
    static func value(_ v: String) -> String {
        let plain =
            !v.isEmpty
            && v.unicodeScalars.allSatisfy { s in
                s.value > 0x20 && s.value != 0x7F && s != "=" && s != "\"" && s != "\\"
                    && !s.properties.isWhitespace && s.properties.generalCategory != .control
                    && s.properties.generalCategory != .format
            }
        if plain { return v }
        let escaped = String(v.flatMap { c -> [Character] in c == "\\" || c == "\"" ? ["\\", c] : [c] })
        return "\"" + Terminal.printable(escaped) + "\""
    }
}
