import ArgumentParser
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import VaultCore
import VaultRemote
import VaultUpload

/// `--progress auto|bar|json|none`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto, bar, json, none
}

/// Progress and summary options of export and upload.
struct ProgressOptions: ParsableArguments {
    @Option(
        help:
            """
                Progress on stderr: bar (redrawn line), json (one event object per line, nothing else), none, or auto \
                (bar on a terminal, else none).
                """
    )
    var progress: ProgressMode = .auto

    @Flag(name: .shortAndLong, help: "Print no summary line (errors and warnings still appear).")
    var quiet = false

    /// The mode after resolving `auto`.
    var resolved: ProgressMode {
        progress == .auto ? (Terminal.isTTY(2) ? .bar : .none) : progress
    }

    /// True when the command should print its one-line summary on stderr: not with `--quiet`,
    /// and not with `--progress json`, whose `finished` event is the summary.
    var printsSummary: Bool { !quiet && resolved != .json }
}

/// Renders export and upload events on stderr, never on stdout (which may carry the payload):
/// - `bar`: one line redrawn by a timer every 200 ms (so it moves while a slow server reads),
///   fitted to the terminal's width (the name is shortened, the line never wraps), in the same
///   binary units as the summary; plain `\r` redraws without escape codes when `TERM=dumb` or
///   `NO_COLOR` is set.
/// - `json`: one JSON object per line per event.
final class ProgressRenderer: @unchecked Sendable {
    // @unchecked: the state is touched only with `lock` held (events come from the producing
    // thread or the HTTP client's task; the timer fires on its own queue).
    private let mode: ProgressMode
    private let lock = NIOLock()
    private let start = Date()
    private var lastJSON = Date.distantPast
    private var batch = (0, 0)
    private var document = (0, 0, "")
    private var label: String?
    private var done: UInt64 = 0, total: UInt64 = 0
    private var shown = 0
    private var timer: DispatchSourceTimer?
    /// Set by ``clear()``: the bar is not drawn again.
    private var stopped = false

    /// Redraw interval of the bar.
    static let interval = DispatchTimeInterval.milliseconds(200)

    init(mode: ProgressMode) {
        self.mode = mode
        guard mode == .bar else { return }
        let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "vault.progress"))
        t.schedule(deadline: .now() + Self.interval, repeating: Self.interval)
        t.setEventHandler { [weak self] in self?.locked { $0.draw() } }
        t.resume()
        timer = t
    }

    deinit { timer?.cancel() }

    private func locked(_ body: (ProgressRenderer) -> Void) {
        lock.lock(); defer { lock.unlock() }
        body(self)
    }

    /// Stops redrawing and clears the bar, before the summary or an error is printed.
    func clear() {
        timer?.cancel()
        timer = nil
        // Cancelling does not stop a tick already waiting for the lock: `stopped` keeps it (and
        // any late event) from drawing the bar again after it was cleared.
        locked { r in
            r.stopped = true
            r.erase()
        }
    }

    // MARK: Events

    func handle(_ event: ExportEvent) {
        locked { r in
            switch r.mode {
            case .json:
                if case .finished = event { r.emit(r.json(event, finished: true), throttled: false); return }
                r.emit(r.json(event), throttled: Self.isProgress(event))
            case .bar: r.update(event)
            default: break
            }
        }
    }

    /// Upload events: the bar counts payload bytes sent; retries and skips are shown as lines.
    func handle(_ event: UploadEvent) {
        locked { r in
            switch r.mode {
            case .json: r.uploadJSON(event)
            case .bar: r.update(event)
            default: break
            }
        }
    }

    /// Import events: the bar counts RNCryptor bytes read; skipped and failed files are named
    /// (as warnings, or as events in `json`).
    func handle(_ event: Importer.Event) {
        locked { r in
            switch (r.mode, event) {
            case (_, .imported): break  // the id goes to standard output
            case (.json, .progress(let d, let t)):
                r.emit(r.json(event), throttled: d != t)
            case (.json, .finished):
                r.emit(r.json(event, finished: true), throttled: false)
            case (.json, _):
                r.emit(r.json(event), throttled: false)
            case (_, .fileSkipped(let path, let e)):
                r.say("vault: warning: skipped \(path): \(e.message)")
            case (_, .fileFailed(let path, let e)):
                r.say("vault: warning: cannot import \(path): \(e.message)")
            case (.bar, .started(_, let bytes)): r.total = bytes
            case (.bar, .fileStarted(let pos, let of, let name)): r.document = (pos, of, name)
            case (.bar, .progress(let d, let t)): r.done = d; r.total = t
            case (.bar, .finished): r.draw()
            default: break
            }
        }
    }

    /// Push and pull: objects and bytes (`json`: a `progress` event with `objects`, `of`,
    /// `done` and `total`, at most every 200 ms and at the end).
    func handle(_ p: TransferProgress, label: String) {
        locked { r in
            switch r.mode {
            case .json:
                r.emit(JSONOutput.line(TransferLine(p)), throttled: p.objectsDone != p.objectsTotal)
            case .bar:
                r.label = "\(label) \(p.objectsDone)/\(p.objectsTotal) objects"
                r.done = p.bytesDone
                r.total = p.bytesTotal
            default: break
            }
        }
    }

    private func update(_ event: ExportEvent) {
        switch event {
        case .started(_, _, _, let plain, _): total = plain
        case .batchStarted(let i, let n, _, _): batch = (i, n)
        case .documentStarted(_, let name, _, let pos, let of): document = (pos, of, name)
        case .progress(let d, let t): done = d; total = t
        case .documentSkipped(let id, let name, let e):
            say("vault: warning: skipped \(id.hex.prefix(12)) \(name): \(Hints.withRemedy(e))")
        case .finished: draw()
        default: break
        }
    }

    private func update(_ event: UploadEvent) {
        label = "upload"
        switch event {
        case .started(_, let batches, _, let bytes, let confirmed, let resumed):
            total = bytes
            batch = (confirmed, batches)
            if resumed { say("vault: resuming: \(confirmed) of \(Plural.count(batches, "batch")) already confirmed") }
        case .attempt(let b, let n, let attempt, _, _):
            batch = (b, n)
            label = attempt > 1 ? "upload, attempt \(attempt)" : "upload"
        case .sent(let d, let t): done = d; total = t
        case .retry(let b, let attempt, let delay, let reason):
            say(
                "vault: warning: batch \(b): \(Terminal.printable(reason)); retrying in \(Seconds.tenths(delay)) s "
                    + "(attempt \(attempt + 1))")
        case .split(let b, _): say("vault: warning: batch \(b) is too large for the server; splitting it in two")
        case .resumed(let b, let at):
            say("vault: batch \(b): the server already has \(Terminal.size(at)); continuing from there")
        case .chunkSize(let bytes, let reason):
            say(
                """
                    vault: warning: the server refused a chunk (\(Terminal.printable(reason))); sending \
                    \(Terminal.size(UInt64(bytes))) chunks
                    """
            )
        case .skipped(let id, let name, let e):
            say("vault: warning: skipped \(id.hex.prefix(12)) \(name): \(Hints.withRemedy(e))")
        case .finished: draw()
        default: break
        }
    }

    // MARK: The bar

    /// Escape codes are allowed: not on a dumb terminal, not when NO_COLOR asks for plain output.
    private static let styled = environment("TERM") != "dumb" && environment("NO_COLOR") == nil

    /// The terminal's width in columns (TIOCGWINSZ on stderr), else $COLUMNS, else 80.
    static var width: Int {
        if let columns = Platform.terminalColumns(2) { return columns }
        return environment("COLUMNS").flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil } ?? 80
    }

    private func draw() {
        guard !stopped else { return }
        let elapsed = max(Date().timeIntervalSince(start), 0.001)
        let line = Self.compose(
            batch: batch, document: document, label: label, done: done, total: total,
            rate: Double(done) / elapsed, width: Self.width)
        erase()
        Terminal.raw(line)
        shown = DisplayWidth.cells(line)
        Terminal.lineOpen = true
    }

    private func erase() {
        guard shown > 0 else { return }
        Terminal.raw(Self.styled ? "\r\u{1B}[2K" : "\r" + String(repeating: " ", count: shown) + "\r")
        shown = 0
        Terminal.lineOpen = false
    }

    /// A whole line on stderr, with the bar out of its way (it is redrawn on the next tick).
    private func say(_ text: String) {
        erase()
        // On the bar's terminal a line never wraps (the error at the end carries the whole reason);
        // into a file or a pipe it is whole.
        let line = Terminal.printable(text)
        Terminal.err(Terminal.isTTY(2) ? Terminal.cut(line, Self.width - 1) : line)
    }

    /// The bar's text, at most `width - 1` characters (the last column would wrap on some
    /// terminals). What always shows: the batch, the document (or upload) and the byte counts;
    /// then, while there is room: the ETA, up to 24 characters of the name, the rate with a bar
    /// (5 to 20 wide) beside it, and the rest of the name. A long name is shortened with `…`.
    static func compose(
        batch: (Int, Int), document: (Int, Int, String), label: String?, done: UInt64, total: UInt64,
        rate: Double, width: Int
    ) -> String {
        let room = max(width - 1, 20)
        let head =
            batch.1 == 0
            ? label ?? "file \(document.0)/\(document.1)"
            : "batch \(batch.0)/\(batch.1)  " + (label ?? "doc \(document.0)/\(document.1)")
        let name = label == nil ? Terminal.printable(document.2) : ""
        let figures = "\(Terminal.size(done))/\(Terminal.size(total))"
        let speed = "\(Terminal.size(UInt64(rate)))/s"
        let eta = rate > 0 && total > done ? "ETA \(Seconds.whole(Double(total - done) / rate))s" : ""
        let nameCells = DisplayWidth.cells(name)
        var used = head.count + 2 + figures.count
        func fits(_ n: Int) -> Bool { used + n <= room }
        let showETA = !eta.isEmpty && fits(2 + eta.count)
        if showETA { used += 2 + eta.count }
        var nameWidth = 0
        let firstName = min(nameCells, 24)
        if firstName > 0 && fits(1 + min(firstName, 8)) {
            nameWidth = min(firstName, room - used - 1); used += 1 + nameWidth
        }
        // The rate before the bar's width: with both, the bar takes what is left (5 to 20).
        let showSpeed = fits(2 + speed.count + 4 + 5) || (!fits(4 + 5) && fits(2 + speed.count))
        if showSpeed { used += 2 + speed.count }
        var barWidth = 0
        if fits(2 + 2 + 5) { barWidth = min(20, room - used - 4); used += 4 + barWidth }
        if nameWidth > 0 && nameCells > nameWidth { nameWidth += min(nameCells - nameWidth, room - used) }
        var line = head
        // Widths in terminal cells: a CJK name takes two per character, and a bar that wrapped
        // would leave a line on screen at every redraw.
        if nameWidth > 0 {
            line += " " + (nameWidth >= nameCells ? name : DisplayWidth.prefix(name, cells: nameWidth - 1) + "…")
        }
        if barWidth > 0 {
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
            let filled = Int(fraction * Double(barWidth))
            line +=
                "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
        }
        line += "  " + figures
        if showSpeed { line += "  " + speed }
        if showETA { line += "  " + eta }
        return String(DisplayWidth.prefix(line, cells: room))
    }

    // MARK: JSON lines

    private static func isProgress(_ event: ExportEvent) -> Bool {
        if case .progress(let d, let t) = event { return d != t }
        return false
    }

    /// Writes a line; progress lines at most every 100 ms.
    private func emit(_ line: String, throttled: Bool) {
        let now = Date()
        if throttled {
            guard now.timeIntervalSince(lastJSON) >= 0.1 else { return }
            lastJSON = now
        }
        Terminal.raw(line)
    }

    private func uploadJSON(_ event: UploadEvent) {
        switch event {
        case .document(.progress):
            return  // the upload's own `sent` events count the bytes
        case .sent(let d, let t):
            emit(json(event), throttled: d != t)
        case .finished:
            emit(json(event, finished: true), throttled: false)
        default:
            emit(json(event), throttled: false)
        }
    }

    /// An event as one JSON line; a `finished` one with the seconds since the command started.
    private func json<E: Encodable>(_ event: E, finished: Bool = false) -> String {
        JSONOutput.line(TimedEvent(event: event, seconds: finished ? JSONOutput.seconds(since: start) : nil))
    }

    /// An event, and on `finished` the seconds it took.
    struct TimedEvent<E: Encodable>: Encodable {
        let event: E
        let seconds: Double?

        func encode(to encoder: any Encoder) throws {
            try event.encode(to: encoder)
            guard let seconds else { return }
            var c = encoder.container(keyedBy: ProgressJSON.Key.self)
            try c.encode(seconds, forKey: ProgressJSON.Key("seconds"))
        }
    }

    /// Push and pull: `{"event":"progress","done","total","files","of"}` (objects as files).
    struct TransferLine: Encodable {
        let p: TransferProgress
        init(_ p: TransferProgress) { self.p = p }

        func encode(to encoder: any Encoder) throws {
            try ProgressJSON.write(
                encoder, "progress",
                ["done": p.bytesDone, "total": p.bytesTotal, "files": p.objectsDone, "of": p.objectsTotal])
        }
    }
}
