import ArgumentParser
import Dispatch
import Foundation
import VaultCore
import VaultRemote
import VaultUpload

/// `--progress auto|bar|json|none`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto, bar, json, none
}

/// Progress and summary options of export and upload.
struct ProgressOptions: ParsableArguments {
    @Option(help: "Progress on stderr: bar (redrawn line), json (one event object per line, nothing else), none, or auto (bar on a terminal, else none).")
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
    private let lock = NSLock()
    private let start = Date()
    private var lastJSON = Date.distantPast
    private var batch = (0, 0)
    private var document = (0, 0, "")
    private var label: String?
    private var done: UInt64 = 0, total: UInt64 = 0
    private var shown = 0
    private var timer: DispatchSourceTimer?

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
        locked { $0.erase() }
    }

    // MARK: Events

    func handle(_ event: ExportEvent) {
        locked { r in
            switch r.mode {
            case .json: r.emit(Self.line(event, elapsed: Date().timeIntervalSince(r.start)), throttled: Self.isProgress(event))
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
    func handle(_ event: ImportEvent) {
        locked { r in
            switch (r.mode, event) {
            case (.json, .progress(let d, let t)):
                r.emit(JSONOutput.line(Event("progress", done: d, total: t)), throttled: d != t)
            case (.json, _):
                r.emit(Self.line(event, elapsed: Date().timeIntervalSince(r.start)), throttled: false)
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
                var e = Event("progress", done: p.bytesDone, total: p.bytesTotal)
                e.files = p.objectsDone
                e.of = p.objectsTotal
                r.emit(JSONOutput.line(e), throttled: p.objectsDone != p.objectsTotal)
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
        case .documentSkipped(let id, let name, let e): say("vault: warning: skipped \(id.hex.prefix(12)) \(name): \(e.message)")
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
            if resumed { say("vault: resuming: \(confirmed) of \(batches) batches already confirmed") }
        case .attempt(let b, let n, let attempt, _, _):
            batch = (b, n)
            label = attempt > 1 ? "upload, attempt \(attempt)" : "upload"
        case .sent(let d, let t): done = d; total = t
        case .retry(let b, let attempt, let delay, let reason):
            say(String(format: "vault: warning: batch %d: %@; retrying in %.1f s (attempt %d)", b, Terminal.printable(reason), delay, attempt + 1))
        case .split(let b, _): say("vault: warning: batch \(b) is too large for the server; splitting it in two")
        case .resumed(let b, let at): say("vault: batch \(b): the server already has \(Terminal.size(at)); continuing from there")
        case .chunkSize(let bytes, let reason): say("vault: warning: the server refused a chunk (\(Terminal.printable(reason))); sending \(Terminal.size(UInt64(bytes))) chunks")
        case .skipped(let id, let name, let e): say("vault: warning: skipped \(id.hex.prefix(12)) \(name): \(e.message)")
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
        let elapsed = max(Date().timeIntervalSince(start), 0.001)
        let line = Self.compose(batch: batch, document: document, label: label, done: done, total: total,
                                rate: Double(done) / elapsed, width: Self.width)
        erase()
        Terminal.raw(line)
        shown = line.count
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
        Terminal.err(Terminal.printable(text))
    }

    /// The bar's text, at most `width - 1` characters (the last column would wrap on some
    /// terminals). What always shows: the batch, the document (or upload) and the byte counts;
    /// then, while there is room: up to 24 characters of the name, the bar (5 to 20 wide), the
    /// rate, the ETA, and the rest of the name. A long name is shortened with `…`.
    static func compose(batch: (Int, Int), document: (Int, Int, String), label: String?, done: UInt64, total: UInt64,
                        rate: Double, width: Int) -> String {
        let room = max(width - 1, 20)
        let head = batch.1 == 0 ? label ?? "file \(document.0)/\(document.1)"
                                                : "batch \(batch.0)/\(batch.1)  " + (label ?? "doc \(document.0)/\(document.1)")
        let name = label == nil ? Terminal.printable(document.2) : ""
        let figures = "\(Terminal.size(done))/\(Terminal.size(total))"
        let speed = "\(Terminal.size(UInt64(rate)))/s"
        let eta = rate > 0 && total > done ? String(format: "ETA %.0fs", Double(total - done) / rate) : ""
        var used = head.count + 2 + figures.count
        func fits(_ n: Int) -> Bool { used + n <= room }
        var nameWidth = 0
        let firstName = min(name.count, 24)
        if firstName > 0 && fits(1 + min(firstName, 8)) { nameWidth = min(firstName, room - used - 1); used += 1 + nameWidth }
        var barWidth = 0
        if fits(2 + 2 + 5) { barWidth = min(20, room - used - 4); used += 4 + barWidth }
        let showSpeed = fits(2 + speed.count)
        if showSpeed { used += 2 + speed.count }
        let showETA = !eta.isEmpty && fits(2 + eta.count)
        if showETA { used += 2 + eta.count }
        if nameWidth > 0 && name.count > nameWidth { nameWidth += min(name.count - nameWidth, room - used) }
        var line = head
        if nameWidth > 0 { line += " " + (nameWidth >= name.count ? name : name.prefix(nameWidth - 1) + "…") }
        if barWidth > 0 {
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
            let filled = Int(fraction * Double(barWidth))
            line += "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
        }
        line += "  " + figures
        if showSpeed { line += "  " + speed }
        if showETA { line += "  " + eta }
        return String(line.prefix(room))
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
        case .document(let e):
            if case .progress = e { return }
            emit(Self.line(e, elapsed: Date().timeIntervalSince(start)), throttled: false)
        case .sent(let d, let t):
            emit(JSONOutput.line(Event("sent", done: d, total: t)), throttled: d != t)
        default:
            emit(Self.line(event, elapsed: Date().timeIntervalSince(start)), throttled: false)
        }
    }

    /// One progress event as a JSON object; absent fields are left out.
    struct Event: Encodable {
        var event: String
        var runId: String?
        var batch: Int?
        var of: Int?
        var batches: Int?
        var documents: Int?
        var plaintextBytes: UInt64?
        var payloadBytes: UInt64?
        var confirmedBatches: Int?
        var resumed: Bool?
        var attempt: Int?
        var id: String?
        var name: String?
        var size: UInt64?
        var position: Int?
        var done: UInt64?
        var total: UInt64?
        var file: String?
        var sha256: String?
        var skipped: Int?
        var code: String?
        var error: String?
        var delay: Double?
        var reason: String?
        var into: [Int]?
        var status: Int?
        var duplicate: Bool?
        var offset: UInt64?
        var retries: Int?
        var seconds: Double?
        var files: Int?
        var bytes: UInt64?
        var path: String?
        var imported: Int?
        var failed: Int?

        init(_ event: String, done: UInt64? = nil, total: UInt64? = nil) {
            self.event = event
            self.done = done
            self.total = total
        }
    }

    static func line(_ event: ExportEvent, elapsed: Double) -> String {
        var e: Event
        switch event {
        case .started(let run, let docs, let batches, let plain, let payload):
            e = Event("started"); e.runId = run; e.documents = docs; e.batches = batches; e.plaintextBytes = plain; e.payloadBytes = payload
        case .batchStarted(let i, let n, let docs, let bytes):
            e = Event("batchStarted"); e.batch = i; e.of = n; e.documents = docs; e.payloadBytes = bytes
        case .documentStarted(let id, let name, let size, let pos, let of):
            e = Event("documentStarted"); e.id = id.hex; e.name = name; e.size = size; e.position = pos; e.of = of
        case .progress(let d, let t):
            e = Event("progress", done: d, total: t)
        case .documentFinished(let id):
            e = Event("documentFinished"); e.id = id.hex
        case .documentSkipped(let id, let name, let err):
            e = Event("documentSkipped"); e.id = id.hex; e.name = name; e.code = err.code.rawValue; e.error = err.message
        case .batchFinished(let i, let n, let file, let bytes, let sha, let docs, let skipped):
            e = Event("batchFinished"); e.batch = i; e.of = n; e.file = file; e.payloadBytes = bytes; e.sha256 = sha
            e.documents = docs; e.skipped = skipped
        case .finished(let batches, let docs, let skipped, let bytes):
            e = Event("finished"); e.batches = batches; e.documents = docs; e.skipped = skipped; e.payloadBytes = bytes
            e.seconds = (elapsed * 1000).rounded() / 1000
        }
        return JSONOutput.line(e)
    }

    static func line(_ event: ImportEvent, elapsed: Double) -> String {
        var e: Event
        switch event {
        case .started(let files, let bytes): e = Event("started"); e.files = files; e.bytes = bytes
        case .fileStarted(let pos, let of, let name): e = Event("fileStarted"); e.position = pos; e.of = of; e.name = name
        case .progress(let d, let t): e = Event("progress", done: d, total: t)
        case .fileSkipped(let path, let err): e = Event("fileSkipped"); e.path = path; e.code = err.code.rawValue; e.error = err.message
        case .fileFailed(let path, let err): e = Event("fileFailed"); e.path = path; e.code = err.code.rawValue; e.error = err.message
        case .finished(let imported, let failed, let skipped):
            e = Event("finished"); e.imported = imported; e.failed = failed; e.skipped = skipped
            e.seconds = (elapsed * 1000).rounded() / 1000
        }
        return JSONOutput.line(e)
    }

    static func line(_ event: UploadEvent, elapsed: Double) -> String {
        var e: Event
        switch event {
        case .started(let run, let batches, let docs, let bytes, let confirmed, let resumed):
            e = Event("started"); e.runId = run; e.batches = batches; e.documents = docs; e.payloadBytes = bytes
            e.confirmedBatches = confirmed; e.resumed = resumed
        case .attempt(let b, let n, let attempt, let docs, let bytes):
            e = Event("attempt"); e.batch = b; e.of = n; e.attempt = attempt; e.documents = docs; e.payloadBytes = bytes
        case .sent(let d, let t):
            e = Event("sent", done: d, total: t)
        case .retry(let b, let attempt, let delay, let reason):
            e = Event("retry"); e.batch = b; e.attempt = attempt; e.delay = (delay * 1000).rounded() / 1000; e.reason = reason
        case .split(let b, let parts):
            e = Event("split"); e.batch = b; e.into = parts
        case .resumed(let b, let at):
            e = Event("resumed"); e.batch = b; e.offset = at
        case .chunkSize(let bytes, let reason):
            e = Event("chunkSize"); e.bytes = UInt64(bytes); e.reason = reason
        case .confirmed(let b, let n, let status, let duplicate):
            e = Event("confirmed"); e.batch = b; e.of = n; e.status = status; e.duplicate = duplicate
        case .skipped(let id, let name, let err):
            e = Event("documentSkipped"); e.id = id.hex; e.name = name; e.code = err.code.rawValue; e.error = err.message
        case .document(let inner):
            return line(inner, elapsed: elapsed)
        case .finished(let batches, let docs, let bytes, let retries, let skipped):
            e = Event("finished"); e.batches = batches; e.documents = docs; e.payloadBytes = bytes; e.retries = retries
            e.skipped = skipped; e.seconds = (elapsed * 1000).rounded() / 1000
        }
        return JSONOutput.line(e)
    }
}
