#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultRemote

/// Everything the CLI says goes through here. Output rules (docs/CLI.md): results on stdout;
/// errors, warnings and progress on stderr, prefixed `vault:`; hints on a second line.
enum Terminal {
    static func isTTY(_ fd: Int32) -> Bool { Platform.isTerminal(fd) }

    /// Standard output and error, written through the same retrying writer as files.
    static let stdout = OpenFile.standard(1, name: "standard output")
    static let stderr = OpenFile.standard(2, name: "standard error")

    /// Prints text to stdout.
    static func out(_ text: String) {
        var t = text
        t.withUTF8 { try? stdout.write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes bytes to stdout as they are.
    static func outBytes(_ bytes: UnsafeRawBufferPointer) {
        try? stdout.write(bytes)
    }

    /// Writes text to stderr as it is (progress bars, JSON lines).
    static func raw(_ text: String) {
        var t = text
        t.withUTF8 { try? stderr.write(UnsafeRawBufferPointer($0)) }
    }

    /// Prints a line to stderr, with control characters shown, not obeyed (whatever part of
    /// it came from a name, a URL or a server); its own line breaks stay.
    static func err(_ line: String) {
        var t =
            line.split(separator: "\n", omittingEmptySubsequences: false).map { printable(String($0)) }.joined(
                separator: "\n") + "\n"
        t.withUTF8 { try? stderr.write(UnsafeRawBufferPointer($0)) }
    }

    /// Prints an error as `vault: message` and, if there is one, `vault: hint: ...`.
    static func report(_ error: VaultError) {
        let error = Hints.complete(error)
        err("vault: \(printable(error.description))")
        if let hint = error.hint { err("vault: hint: \(hint)") }
    }

    /// Set while a progress line is on screen without its newline.
    // nonisolated(unsafe): written by the progress renderer on one thread; the interrupt thread
    // only reads it on the way out, where a stale value costs at most a blank line.
    nonisolated(unsafe) static var lineOpen = false

    /// Says `vault: interrupted` on a line of its own (called on the interrupt thread).
    static func interrupted() {
        if lineOpen { err("") }
        err("vault: interrupted")
    }

    /// A warning on stderr.
    static func warn(_ message: String) { err("vault: warning: \(printable(message))") }

    /// Names each object under a store's `removed/` that is not this vault's tombstone (with why).
    static func warnRefusedTombstones(_ refused: [RejectedObject]) {
        for r in refused { warn("\(r.key) is not a tombstone of this vault, and hides nothing: \(r.error.message)") }
    }

    /// `text` with control characters escaped, so a hostile document name cannot move the
    /// cursor or fake output lines.
    static func printable(_ text: String) -> String {
        // Most names are printable ASCII: returned as they are (list prints 100,000 a second).
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
                out += "\\x" + Hex.digits(scalar.value)
            case _ where Self.isBidiControl(scalar):
                // Shown, not obeyed: U+202E would print `invoice\u{202E}fdp.exe` as "invoiceexe.pdf".
                out += "\\u" + Hex.digits(scalar.value, width: 4)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Why `url` cannot name a destination for people to read, if it cannot: a control
    /// character in it, or one percent-encoded in its host (a host has none; `%1b` there would
    /// print as an escape sequence wherever the host is shown decoded).
    static func urlControlProblem(_ url: String) -> String? {
        if url.unicodeScalars.contains(where: {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || isBidiControl($0)
        }) {
            return "it holds a control character"
        }
        if let host = URLComponents(string: url)?.host,
            host.unicodeScalars.contains(where: {
                $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || isBidiControl($0)
            })
        {
            return "its host holds a percent-encoded control character"
        }
        return nil
    }

    /// The scalars that reorder the text around them (embeddings, overrides, isolates, marks).
    static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Human size: 1023 B, 1.5 KiB, 12.3 MiB, ... (see ``ByteSize/text(_:)``).
    static func size(_ bytes: UInt64) -> String { ByteSize.text(bytes) }
}
