import ArgumentParser
import Foundation
import VaultCore
import VaultUpload

/// `--progress auto|bar|json|none`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto, bar, json, none
}

/// Shared progress option.
struct ProgressOptions: ParsableArguments {
    @Option(help: "Progress on stderr: bar (redrawn line), json (one event object per line), none, or auto (bar on a terminal, else none).")
    var progress: ProgressMode = .auto

    /// The mode after resolving `auto`.
    var resolved: ProgressMode {
        progress == .auto ? (Terminal.isTTY(2) ? .bar : .none) : progress
    }
}

/// Renders export events on stderr: a redrawn bar (documents, bytes, rate, ETA) or JSON lines.
/// Never writes to stdout, which may carry the payload.
final class ProgressRenderer: @unchecked Sendable {
    // @unchecked: events arrive from the exporting thread only.
    private let mode: ProgressMode
    private let start = Date()
    private var lastDraw = Date.distantPast
    private var batch = (0, 0)
    private var document = (0, 0, "")
    private var done: UInt64 = 0, total: UInt64 = 0
    private var drawn = false

    init(mode: ProgressMode) { self.mode = mode }

    func handle(_ event: ExportEvent) {
        switch mode {
        case .json: json(event)
        case .bar: bar(event)
        default: break
        }
    }

    /// Clears the bar line before other stderr output.
    func clear() {
        if drawn { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)); drawn = false }
    }

    /// Upload events: the bar counts payload bytes sent; retries and skips are shown as lines.
    func handle(_ event: UploadEvent) {
        switch (mode, event) {
        case (.json, _): uploadJSON(event)
        case (.bar, .started(_, let batches, _, let bytes, let confirmed, let resumed)):
            total = bytes
            batch = (confirmed, batches)
            if resumed { clear(); Terminal.err("vault: resuming: \(confirmed) of \(batches) batches already confirmed") }
        case (.bar, .attempt(let b, let n, let attempt, _, _)):
            batch = (b, n)
            document = (b, n, attempt > 1 ? "attempt \(attempt)" : "")
            draw(force: false, label: "upload")
        case (.bar, .sent(let d, let t)):
            done = d
            total = t
            draw(force: false, label: "upload")
        case (.bar, .retry(let b, let attempt, let delay, let reason)):
            clear()
            Terminal.warn(String(format: "batch %d: %@; retrying in %.1f s (attempt %d)", b, reason, delay, attempt + 1))
        case (.bar, .split(let b, _)):
            clear()
            Terminal.warn("batch \(b) is too large for the server; splitting it in two")
        case (.bar, .skipped(let id, let name, let e)):
            clear()
            Terminal.warn("skipped \(id.hex.prefix(12)) \(name): \(e.message)")
        case (.bar, .finished):
            draw(force: true, label: "upload")
            clear()
        default: break
        }
    }

    private func uploadJSON(_ event: UploadEvent) {
        let line: String
        switch event {
        case .started(let run, let batches, let docs, let bytes, let confirmed, let resumed):
            line = "{\"event\":\"started\",\"runId\":\"\(run)\",\"batches\":\(batches),\"documents\":\(docs),\"payloadBytes\":\(bytes),\"confirmedBatches\":\(confirmed),\"resumed\":\(resumed)}"
        case .attempt(let b, let n, let attempt, let docs, let bytes):
            line = "{\"event\":\"attempt\",\"batch\":\(b),\"of\":\(n),\"attempt\":\(attempt),\"documents\":\(docs),\"payloadBytes\":\(bytes)}"
        case .sent(let d, let t):
            let now = Date()
            guard d == t || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
            lastDraw = now
            line = "{\"event\":\"sent\",\"done\":\(d),\"total\":\(t)}"
        case .retry(let b, let attempt, let delay, let reason):
            line = "{\"event\":\"retry\",\"batch\":\(b),\"attempt\":\(attempt),\"delay\":\(String(format: "%.3f", delay)),\"reason\":\(JSONString.quote(reason))}"
        case .split(let b, let parts):
            line = "{\"event\":\"split\",\"batch\":\(b),\"into\":[\(parts.map(String.init).joined(separator: ","))]}"
        case .confirmed(let b, let n, let status, let duplicate):
            line = "{\"event\":\"confirmed\",\"batch\":\(b),\"of\":\(n),\"status\":\(status),\"duplicate\":\(duplicate)}"
        case .skipped(let id, let name, let e):
            line = "{\"event\":\"documentSkipped\",\"id\":\"\(id.hex)\",\"name\":\(JSONString.quote(name)),\"code\":\"\(e.code.rawValue)\",\"error\":\(JSONString.quote(e.message))}"
        case .document(let e):
            if case .progress = e { return }
            json(e)
            return
        case .finished(let batches, let docs, let bytes, let retries, let skipped):
            line = "{\"event\":\"finished\",\"batches\":\(batches),\"documents\":\(docs),\"payloadBytes\":\(bytes),\"retries\":\(retries),\"skipped\":\(skipped)}"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func bar(_ event: ExportEvent) {
        switch event {
        case .started(_, _, _, let plain, _): total = plain; return
        case .batchStarted(let i, let n, _, _): batch = (i, n); return
        case .documentStarted(_, let name, _, let pos, let of): document = (pos, of, name)
        case .progress(let d, let t): done = d; total = t
        case .documentSkipped(let id, let name, let e):
            clear()
            Terminal.warn("skipped \(id.hex.prefix(12)) \(name): \(e.message)")
        case .finished:
            draw(force: true)
            clear()
            return
        default: break
        }
        draw(force: false)
    }

    private func draw(force: Bool, label: String? = nil) {
        let now = Date()
        guard force || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = now
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let rate = Double(done) / elapsed
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        let width = 20
        let filled = Int(fraction * Double(width))
        let eta = rate > 0 && total > done ? String(format: "ETA %.0fs", Double(total - done) / rate) : ""
        let name = Terminal.printable(document.2)
        let shortName = name.count > 24 ? String(name.prefix(23)) + "…" : name
        let what = label == nil ? String(format: "doc %d/%d %@", document.0, document.1, shortName) : shortName
        let line = String(format: "batch %d/%d  %@  [%@%@] %.1f/%.1f MB  %.*f MB/s  %@",
                          batch.0, batch.1, what,
                          String(repeating: "#", count: filled), String(repeating: "-", count: width - filled),
                          Double(done) / 1e6, Double(total) / 1e6, rate < 10e6 ? 1 : 0, rate / 1e6, eta)
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line).utf8))
        drawn = true
    }

    private func json(_ event: ExportEvent) {
        let line: String
        switch event {
        case .started(let run, let docs, let batches, let plain, let payload):
            line = "{\"event\":\"started\",\"runId\":\"\(run)\",\"documents\":\(docs),\"batches\":\(batches),\"plaintextBytes\":\(plain),\"payloadBytes\":\(payload)}"
        case .batchStarted(let i, let n, let docs, let bytes):
            line = "{\"event\":\"batchStarted\",\"batch\":\(i),\"of\":\(n),\"documents\":\(docs),\"payloadBytes\":\(bytes)}"
        case .documentStarted(let id, let name, let size, let pos, let of):
            line = "{\"event\":\"documentStarted\",\"id\":\"\(id.hex)\",\"name\":\(JSONString.quote(name)),\"size\":\(size),\"position\":\(pos),\"of\":\(of)}"
        case .progress(let d, let t):
            let now = Date()
            guard d == t || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
            lastDraw = now
            line = "{\"event\":\"progress\",\"done\":\(d),\"total\":\(t)}"
        case .documentFinished(let id):
            line = "{\"event\":\"documentFinished\",\"id\":\"\(id.hex)\"}"
        case .documentSkipped(let id, let name, let e):
            line = "{\"event\":\"documentSkipped\",\"id\":\"\(id.hex)\",\"name\":\(JSONString.quote(name)),\"code\":\"\(e.code.rawValue)\",\"error\":\(JSONString.quote(e.message))}"
        case .batchFinished(let i, let n, let file, let bytes, let sha, let docs, let skipped):
            line = "{\"event\":\"batchFinished\",\"batch\":\(i),\"of\":\(n),\"file\":\(file.map(JSONString.quote) ?? "null"),\"payloadBytes\":\(bytes),\"sha256\":\(sha.map { "\"\($0)\"" } ?? "null"),\"documents\":\(docs),\"skipped\":\(skipped)}"
        case .finished(let batches, let docs, let skipped, let bytes):
            line = "{\"event\":\"finished\",\"batches\":\(batches),\"documents\":\(docs),\"skipped\":\(skipped),\"payloadBytes\":\(bytes)}"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
