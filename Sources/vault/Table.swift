/// Tables and lines fitted to the terminal, so nothing wraps: on a terminal, a table's
/// flexible column (a name, a target) is shortened in the middle, then the least useful columns
/// are left out, and any line still too long is cut with `…`. Written to a pipe or a file,
/// nothing is shortened (scripts get whole rows; `--json` is the format for them).
final class FittedTable {
    struct Column {
        var title: String
        /// Right-aligned (sizes, counts).
        var alignRight = false
        /// Shortened in the middle when the row is too wide (keeps a name's start and extension).
        var flexible = false
        /// 0: always shown; otherwise left out, highest first, when shortening is not enough.
        var dropRank = 0
    }

    /// Rows whose widths decide the columns: the header and the first 1,000 rows (a longer
    /// cell further down is shortened to its column on a terminal, widens only its row elsewhere).
    static let window = 1000
    /// A flexible column is first shortened to this, before any column is left out.
    static let comfortable = 20
    /// …and to this at the narrowest.
    static let minimum = 8

    let columns: [Column]
    let output: BufferedOutput
    /// The terminal's width, or nil when standard output is not a terminal.
    let width: Int?
    private var pending: [[String]] = []
    private var layout: (shown: [Int], widths: [Int])?

    init(_ columns: [Column], output: BufferedOutput, width: Int? = FittedTable.stdoutWidth) {
        self.columns = columns
        self.output = output
        self.width = width
    }

    /// The width of the terminal on standard output, or nil when it is not a terminal.
    static var stdoutWidth: Int? { Platform.terminalColumns(1) }

    func add(_ row: [String]) {
        if let layout {
            output.append(line(row, layout))
            return
        }
        pending.append(row)
        if pending.count >= Self.window { flushWindow() }
    }

    /// Writes what is held back; nothing at all when there were no rows (the caller says so).
    func finish() {
        if layout == nil && !pending.isEmpty { flushWindow() }
    }

    private func flushWindow() {
        var natural = columns.map { DisplayWidth.cells($0.title) }
        for row in pending { for (i, c) in row.enumerated() { natural[i] = max(natural[i], DisplayWidth.cells(c)) } }
        let layout = Self.fit(columns, natural: natural, width: width)
        self.layout = layout
        output.append(line(columns.map(\.title), layout))
        for row in pending { output.append(line(row, layout)) }
        pending = []
    }

    /// Which columns show, and how wide, for rows of `natural` widths in `width` columns.
    static func fit(_ columns: [Column], natural: [Int], width: Int?) -> (shown: [Int], widths: [Int]) {
        var shown = Array(columns.indices)
        var widths = natural
        guard let width else { return (shown, widths) }
        let room = width - 1  // the last column would wrap on some terminals
        func total() -> Int { shown.reduce(0) { $0 + widths[$1] } + 2 * max(shown.count - 1, 0) }
        func shrink(to floor: Int) {
            for f in shown where columns[f].flexible && total() > room {
                widths[f] = max(
                    min(widths[f], max(floor, DisplayWidth.cells(columns[f].title))), widths[f] - (total() - room))
            }
        }
        shrink(to: comfortable)
        while total() > room,
            let drop = shown.filter({ columns[$0].dropRank > 0 }).max(by: {
                columns[$0].dropRank < columns[$1].dropRank
            })
        {
            shown.removeAll { $0 == drop }
        }
        for f in shown where columns[f].flexible && total() < room {  // room a dropped column freed
            widths[f] = min(natural[f], widths[f] + room - total())
        }
        shrink(to: minimum)
        return (shown, widths)
    }

    private func line(_ cells: [String], _ layout: (shown: [Int], widths: [Int])) -> String {
        var out = ""
        for (n, i) in layout.shown.enumerated() {
            let w = layout.widths[i]
            var c = cells[i]
            if width != nil && DisplayWidth.cells(c) > w {
                c = columns[i].flexible ? Terminal.middle(c, w) : DisplayWidth.prefix(c, cells: max(w - 1, 0)) + "…"
            }
            if n > 0 { out += "  " }
            let pad = String(repeating: " ", count: max(0, w - DisplayWidth.cells(c)))
            out += columns[i].alignRight ? pad + c : n == layout.shown.count - 1 ? c : c + pad
        }
        if let width { out = Terminal.cut(out, width - 1) }
        return out + "\n"
    }
}

extension Terminal {
    /// `text` in at most `width` terminal cells, shortened in the middle: `a-long…name.pdf`.
    static func middle(_ text: String, _ width: Int) -> String {
        guard DisplayWidth.cells(text) > width else { return text }
        guard width > 1 else { return String(DisplayWidth.prefix(text, cells: width)) }
        let head = (width - 1 + 1) / 2
        let start = DisplayWidth.prefix(text, cells: head)
        // A wide character that did not fit the start leaves its cell to the end.
        return start + "…" + DisplayWidth.suffix(text, cells: width - 1 - DisplayWidth.cells(start))
    }

    /// `text` in at most `width` terminal cells, cut at the end with `…`.
    static func cut(_ text: String, _ width: Int) -> String {
        guard DisplayWidth.cells(text) > width else { return text }
        return width > 0 ? DisplayWidth.prefix(text, cells: width - 1) + "…" : ""
    }
}
