import Foundation
import Testing
import VaultTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a user sees in a real terminal (tmux, which this project did not write) at 80 and 40
/// columns: `list`, `log`, `uploads`, the progress bar and retry warnings never wrap.
@Suite(.blocking) struct TerminalWidthCLITests {
    /// Runs `script` (sh; `$1` is the vault binary) in a detached tmux pane `columns` wide and 200
    /// lines high, waits (bounded) for it to finish, and returns the pane as shown and as tmux
    /// joins it (`capture-pane -J` makes one line of a wrapped one).
    static func inTmux(_ s: Sandbox, columns: Int, _ script: String) throws -> (shown: [String], joined: [String]) {
        let socket = "vault-" + URL(fileURLWithPath: s.dir).lastPathComponent
        s.write("run.sh", Array(script.utf8))
        s.write("finished", [])
        try? FileManager.default.removeItem(atPath: s.path("finished"))
        let start = s.shell(
            """
                tmux -L \(socket) -f /dev/null new-session -d -x \(columns) -y 200 -s t \"sh run.sh '$1'; touch \
                finished; exec sleep 600\"
                """,
            env: ["TERM": "xterm"])
        try #require(start.status == 0, "tmux: \(start.stderr)")
        defer { _ = s.shell("tmux -L \(socket) kill-server") }
        try #require(
            poll(within: 300, every: 100_000) { FileManager.default.fileExists(atPath: s.path("finished")) },
            "the commands did not finish within 5 minutes")
        func capture(_ flags: String) -> [String] {
            s.shell("tmux -L \(socket) capture-pane -p \(flags) -t t").out.split(
                separator: "\n", omittingEmptySubsequences: false
            )
            .map { String($0).replacingOccurrences(of: " +$", with: "", options: .regularExpression) }
            .reversed().drop { $0.isEmpty }.reversed()
        }
        return (capture(""), capture("-J"))
    }

    @Test(arguments: [80, 40])
    func tablesLinesAndTheBarFitTheTerminal(columns: Int) throws {
        let s = Sandbox()
        s.initVault()
        // A 29-character name with application/octet-stream (the review's case), a long name, and 64 MiB for the bar.
        s.write("quarterly-report-2026-final.b", .random(3000, seed: 1))
        #expect(s.run("add", "quarterly-report-2026-final.b").status == 0)
        #expect(
            s.run(
                ["add", "-", "--name", "a very long document name that goes on and on past any terminal.pdf"],
                stdin: Array("%PDF-1.7".utf8)
            ).status == 0)
        try s.writeLarge("big.bin", mebibytes: 64, seed: 5)
        #expect(s.run("add", "big.bin").status == 0)
        // A server that answers 503: the upload reaches it and stops, leaving an interrupted journal.
        let busy = Receiver(
            in: s, token: nil, faults: #"[{"action": "status", "status": 503}, {"action": "status", "status": 503}]"#)
        let (shown, joined) = try Self.inTmux(
            s, columns: columns,
            """
            "$1" export --out out --progress bar
            "$1" upload --url \(busy.url) --retries 1 --progress bar --no-credentials
            echo ---
            "$1" list
            "$1" log
            "$1" uploads

            """)
        // Tables and warnings never wrap (messages such as the summary may: they are sentences).
        let tables = Array(shown.drop { $0 != "---" })
        #expect(
            tables.count > 10 && tables == Array(joined.drop { $0 != "---" }),
            "a line wrapped at \(columns) columns:\n\(shown.joined(separator: "\n"))")
        for line in tables + shown.filter({ $0.hasPrefix("vault: warning:") }) {
            #expect(line.count < columns, "\(columns) columns: '\(line)' (\(line.count))")
        }
        // The bar was drawn and cleared: a wrapped bar would leave its first part on screen.
        #expect(!shown.contains { $0.hasPrefix("batch ") || $0.contains("[#") || $0.contains("[-") }, "\(shown)")
        let text = shown.joined(separator: "\n")
        #expect(joined.contains { $0.hasPrefix("vault: exported 3 documents (64 MiB) in 1 batch (85 MiB of payload)") })
        #expect(
            joined.contains { $0.hasPrefix("vault: warning: batch 1: 503 Service U") },
            "the retry is announced: \(text)")
        // list: a header, every document, the long name shortened in the middle.
        let ids = s.run("list", "--json").out.components(separatedBy: "\"id\":\"").dropFirst().map {
            String($0.prefix(12))
        }
        #expect(ids.count == 3)
        #expect(shown.contains { $0.hasPrefix("ID  ") && $0.contains("NAME") && $0.contains("SIZE") })
        for id in ids { #expect(shown.contains { $0.hasPrefix(id) }, "\(id) is listed") }
        #expect(shown.contains { $0.contains("a very") && $0.contains("…") && $0.contains(".pdf") })
        if columns == 80 {
            #expect(
                shown.contains { $0.contains("quarterly-report-2026-final.b") },
                "a 29-character name shows whole at 80 columns")
        }
        // log: human sizes, not raw byte counts.
        #expect(text.contains("64 MiB") && !text.contains("67108864"))
        // uploads: a header and the interrupted upload.
        #expect(shown.contains { $0.hasPrefix("JOB ") && $0.contains("STATE") && $0.contains("BATCHES") })
        let job = try #require(s.journalJobs.first)
        #expect(shown.contains { $0.hasPrefix(String(job.prefix(12)) + "  interrupted") }, "\(text)")
        #expect(s.run("uploads", "show", String(job.prefix(12))).out.contains(job), "a job's prefix names it")
    }

    /// Terminal cells as tmux draws them, written here apart from vault's own table (CJK and
    /// fullwidth forms take two cells, combining marks none), so the test does not check vault
    /// against itself.
    static func cells(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { n, u in
            switch u.value {
            case 0x0300...0x036F: n
            case 0x1100...0x115F, 0x2E80...0x9FFF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFF00...0xFF60, 0xFFE0...0xFFE6:
                n + 2
            default: n + 1
            }
        }
    }

    /// CJK and combining names in tmux at 50, 80 and 160 columns: `list` rows neither wrap nor
    /// lose their alignment (widths in cells, not characters), the bar with a long CJK name is
    /// redrawn on one line and cleared (a wrapped bar stacks a line per redraw), and `add` on a
    /// terminal says what it added.
    @Test(arguments: [50, 80, 160])
    func wideAndCombiningNamesKeepTheirColumns(columns: Int) throws {
        let s = Sandbox()
        s.initVault()
        let names = [
            "日本語の領収書.jpg", "Rechnung für Müller.pdf", "Cafe\u{301} crème.txt", "請求書・二〇二六年十一月分の最終版の写し.pdf",
            "quarterly-report-final-version-2026\u{202E}fdp.exe"
        ]
        try FileManager.default.createDirectory(atPath: s.path("inbox"), withIntermediateDirectories: true)
        for (i, name) in names.enumerated() { s.write("inbox/" + name, .random(2000 + i, seed: UInt64(40 + i))) }
        try s.writeLarge("inbox/大きなスキャン画像ファイルの名前がとても長い場合の表示テスト.bin", mebibytes: 48, seed: 9)
        let (shown, joined) = try Self.inTmux(
            s, columns: columns,
            """
            "$1" add -r inbox > ids.txt
            "$1" export --out out --progress bar
            echo ---
            "$1" list
            "$1" log --doc "$(head -c 8 ids.txt)"

            """)
        let text = shown.joined(separator: "\n")
        // Tables and the log never wrap (a summary may: it is a sentence).
        let table = Array(shown.drop { $0 != "---" }.dropFirst())
        #expect(
            table.count > 8 && table == Array(joined.drop { $0 != "---" }.dropFirst()),
            "a line wrapped at \(columns) columns:\n\(text)")
        for line in table {
            #expect(Self.cells(line) < columns, "\(columns) columns: '\(line)' takes \(Self.cells(line)) cells")
        }
        #expect(
            shown.contains { $0.hasPrefix("vault: added 6 documents (48 MiB)") },
            "add says what it added on a terminal: \(text)")
        // The right-to-left override is shown as an escape, never obeyed, and a shortened name
        // keeps the escape whole or leaves it out (no `\u…` or `…2efdp.exe` fragment).
        #expect(
            !text.contains("\u{202E}") && !text.contains(#"\u…"#)
                && text.range(of: #"…[0-9a-f]{1,3}fdp\.exe"#, options: .regularExpression) == nil, "\(text)")
        #expect(
            !shown.contains { $0.contains("[#") || $0.contains("[-") },
            "the bar was cleared, and never wrapped: \(text)")
        // list: every row's size ends where the header's SIZE does (in cells).
        let header = try #require(table.first { $0.hasPrefix("ID ") }, "\(text)")
        let sizeEnd = Self.cells(String(header[..<header.range(of: "SIZE")!.upperBound]))
        let rows = table.prefix {
            !$0.hasPrefix(" ") && !$0.first!.isNumber || $0.count > 12 && $0.prefix(12).allSatisfy(\.isHexDigit)
        }.filter { $0.prefix(12).allSatisfy(\.isHexDigit) }
        #expect(rows.count == 6, "\(text)")
        for row in rows {
            let size = try #require(row.range(of: #"[0-9.]+ (B|KiB|MiB)"#, options: .regularExpression), "\(row)")
            #expect(
                Self.cells(String(row[..<size.upperBound])) == sizeEnd,
                "misaligned at \(columns) columns:\n\(header)\n\(row)")
        }
        if columns == 160 {
            for name in names.prefix(3) {
                #expect(
                    text.contains(name.precomposedStringWithCanonicalMapping) || text.contains(name),
                    "\(name) whole at 160 columns")
            }
        }
    }

    /// Help at 80 columns: the exit-code table keeps its indentation and no example is broken
    /// mid-command (argument-parser wraps a long line at the margin, without indenting it).
    @Test func helpFitsEightyColumns() {
        let s = Sandbox()
        let commands = [
            "", "init", "add", "import", "restore", "list", "get", "tag", "remove", "verify", "export", "upload",
            "uploads",
            "uploads prune", "log", "audit", "passwd", "destination", "destination add", "status", "remote",
            "remote add",
            "push", "pull", "clone", "receive", "receive serve", "receive station", "receive station add",
            "receive key", "version"
        ]
        // The options every command takes are shown once, by `vault --help`, not in every command's help.
        #expect(s.shell("COLUMNS=80 \"$1\" help get").out.contains("--password-file") == false)
        #expect(s.shell("COLUMNS=80 \"$1\" --help").out.contains("--password-command"))
        let kdf = s.shell("COLUMNS=80 \"$1\" help init").out
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(kdf.contains("(values: interactive, moderate, sensitive; default: moderate)"), "\(kdf)")
        for command in commands {
            let r = s.shell("COLUMNS=80 \"$1\" help \(command)")
            #expect(r.status == 0, "\(command): \(r.stderr)")
            // A default is shown as a user types it, never as a Swift value's description
            // (`init --kdf` showed `KDFChoice(name: "moderate", parameters: ...)`).
            #expect(!r.out.contains("(name:") && !r.out.contains("VaultCore."), "vault help \(command): \(r.out)")
            var block = false
            for line in r.out.split(separator: "\n", omittingEmptySubsequences: false) {
                // Every line, the usage line too, fits the 80 columns docs/CLI.md promises.
                #expect(line.count <= 80, "vault help \(command): '\(line)' is \(line.count) characters")
                if line == "Examples:" || line == "Exit codes:" { block = true; continue }
                if line.isEmpty { block = false; continue }
                if block {
                    #expect(
                        line.hasPrefix("  ") && line.count <= 80,
                        "vault help \(command): '\(line)' is a broken example or code line")
                }
            }
        }
    }

    /// `vault --version` and `vault version --json` say what the binary is: version, commit,
    /// build, the libsodium it runs with (the one pkg-config reports here) and the platform.
    @Test func theVersionSaysWhatTheBinaryIs() throws {
        let s = Sandbox()
        let sodium = s.shell("pkg-config --modversion libsodium").out.trimmingCharacters(in: .whitespacesAndNewlines)
        let line = s.run("--version")
        #expect(line.status == 0)
        let pattern =
            #"^vault \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-modified)?|unknown), "#
            + #"(debug|release|release, static); libsodium "#
            + sodium + #"; linux/(x86_64|arm64)\)\n$"#
        #expect(line.out.range(of: pattern, options: .regularExpression) != nil, "\(line.out)")
        #expect(s.run("version").out == line.out)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(s.run("version", "--json").stdout)) as? [String: String])
        #expect(
            Set(json.keys) == ["version", "commit", "build", "libsodium", "platform"] && json["libsodium"] == sodium)
    }
}
