import ArgumentParser
import Foundation
import VaultCore

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

    private func bar(_ event: ExportEvent) {
        switch event {
        case .started(_, _, _, let plain, _): total = plain; return
        case .batchStarted(let i, let n, _, _): batch = (i, n)
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

    private func draw(force: Bool) {
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
        let line = String(format: "batch %d/%d  doc %d/%d %@  [%@%@] %.1f/%.1f MB  %.0f MB/s  %@",
                          batch.0, batch.1, document.0, document.1, shortName,
                          String(repeating: "#", count: filled), String(repeating: "-", count: width - filled),
                          Double(done) / 1e6, Double(total) / 1e6, rate / 1e6, eta)
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
