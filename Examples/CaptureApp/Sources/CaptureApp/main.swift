// What a capture app does with VaultCore and VaultUpload, end to end: keep captured files
// encrypted, hand a batch to the back office as a JSON payload in a file, let the user cancel,
// and deliver to the back office as `vault upload --remove-delivered` does. Every step checks
// its result; the run exits non-zero on the first thing that is not as expected.
// The back office's URL and the folder it stores into come from CAPTURE_APP_BACK_OFFICE and
// CAPTURE_APP_RECEIVED (`make example` starts one on 127.0.0.1).
import Foundation
import VaultCore
import VaultFoundation
import VaultUpload

func check(_ condition: Bool, _ what: String) {
    guard condition else {
        FileHandle.standardError.write(Data("capture-app: FAILED: \(what)\n".utf8))
        exit(1)
    }
    print("ok  \(what)")
}

/// Stand-ins for the camera: a 30 MB video, a photo and a scanned page, made from a fixed seed.
func capture(in folder: URL) throws -> [URL] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func bytes(_ n: Int) -> Data {
        var d = [UInt8](repeating: 0, count: n)
        for i in 0..<n {
            state = state &* 6364136223846793005 &+ 1442695040888963407; d[i] = UInt8(truncatingIfNeeded: state >> 33)
        }
        return Data(d)
    }
    let files = [("video.mov", 30_000_000), ("IMG_0042.jpg", 2_400_000), ("receipt scan (1).pdf", 180_000)]
    return try files.map { name, size in
        let url = folder.appendingPathComponent(name)
        try bytes(size).write(to: url)
        return url
    }
}

/// An app's own sink (say, the body of an upload it streams): counts what it is given, and
/// cancels the task that feeds it once it has seen `cancelAfter` bytes, as a user tapping
/// "Cancel" midway would.
final class CancellingSink: PayloadSink, @unchecked Sendable {
    // @unchecked: `received` is written by the export's writer thread only and read after the
    // export returned; `task` is guarded by `lock`.
    private(set) var received = 0
    private let cancelAfter: Int
    private let lock = NSLock()
    private var task: Task<ExportSummary, any Error>?
    init(cancelAfter: Int) { self.cancelAfter = cancelAfter }
    func feeds(_ task: Task<ExportSummary, any Error>) { lock.withLock { self.task = task } }
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        received += bytes.count
        if received >= cancelAfter { lock.withLock { task?.cancel() } }
    }
}

let work = FileManager.default.temporaryDirectory.appendingPathComponent("capture-app-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }

// 1. A vault for the app's documents, with the password the user chose.
let store = VaultStore(url: work.appendingPathComponent("vault"))
let vault = try await store.create(password: "correct horse battery staple", kdf: .interactive)
print("created a vault (\(vault.id.prefix(8))…)")

// 2. Captured files go in, each encrypted as it is read.
let captured = try capture(in: work)
// The whole capture in one add: a file whose contents are in the vault already is left out,
// any other error stops there (what was added stays); the app decides with `onError`.
let capturedAdd = try await vault.add(filesAt: captured, tags: ["2026-11"])
check(capturedAdd.added.count == 3 && capturedAdd.leftOut.isEmpty, "3 captured files added in one session")
var added = capturedAdd.added
let addedAgain = try await vault.add(filesAt: captured)
check(
    addedAgain.added.isEmpty && addedAgain.leftOut.map(\.error.code) == [.duplicate, .duplicate, .duplicate],
    "adding them again leaves all 3 out: their contents are in the vault")
let missing = work.appendingPathComponent("not-captured.jpg")
let stopping = try await vault.add(
    filesAt: [captured[2], missing, captured[1]], allowDuplicate: true, onError: { _, _ in .stop })
check(
    stopping.added.count == 1 && stopping.stopped?.url == missing && stopping.notTried == 1,
    "an app's policy stops at a missing file, keeping the one added before it")
try await vault.remove(stopping.added.map(\.id))
added.append(try await vault.add(Data("Meeting notes: deliver by Friday.".utf8), name: "notes.txt"))
let documents = try await vault.documents()
check(
    documents.map(\.metadata.name) == ["video.mov", "IMG_0042.jpg", "receipt scan (1).pdf", "notes.txt"],
    "4 documents listed, in the order added")

// 3. A range read: the first 16 bytes of the photo, decrypting only the chunk that holds them.
let head = try await vault.read(added[1].id, range: 0..<16)
check(head == (try Data(contentsOf: captured[1])).prefix(16), "a 16-byte range of the photo reads back")

// 4. One batch into a file the app opened, with progress as an AsyncSequence.
let export = try await vault.prepareExport()
print(
    "export planned: \(export.documents) documents, \(export.batchCount) batch, \(export.payloadBytes) bytes of payload"
)
let payloadURL = work.appendingPathComponent("batch.json")
_ = FileManager.default.createFile(atPath: payloadURL.path, contents: nil)
let handle = try FileHandle(forWritingTo: payloadURL)
let watcher = Task {
    // A slow consumer gets the newest value, never a backlog: how many it sees depends on it.
    var shown = 0.0
    var last: ExportProgress?
    for await p in export.progress {
        last = p
        if p.fractionCompleted - shown >= 0.25 || p.fractionCompleted == 1 {
            shown = p.fractionCompleted
            print(
                String(
                    format: "  %3.0f%%  %d of %d documents", p.fractionCompleted * 100, p.completedDocuments,
                    p.totalDocuments))
        }
    }
    return last
}
let summary = try await export.write(to: handle)
try handle.close()
let last = await watcher.value
check(last?.fractionCompleted == 1 && last?.completedDocuments == 4, "progress ended at 100%, 4 of 4 documents")
check(summary.payloadBytes == export.payloadBytes, "the payload is as long as planned (\(summary.payloadBytes) bytes)")

// The back office's view: JSON with every document, each matching its SHA-256.
let payload = try JSONSerialization.jsonObject(with: Data(contentsOf: payloadURL)) as! [String: [[String: Any]]]
let files = payload["Files"]!
check(files.count == 4, "the payload holds 4 files")
for (file, record) in zip(files, documents) {
    let data = Data(base64Encoded: file["Data"] as! String)!
    let hex = record.metadata.sha256.map { String(format: "%02x", $0) }.joined()
    check(
        file["SHA256"] as? String == hex && data.count == file["Size"] as? Int,
        "\(record.metadata.name): size and SHA-256 match")
}
check(
    Data(base64Encoded: files[0]["Data"] as! String) == (try Data(contentsOf: captured[0])),
    "the video is byte for byte the captured file")

// 5. A second export, cancelled midway by the user: it stops, throws CancellationError, and
//    its progress sequence ends.
let second = try await vault.prepareExport()
let sink = CancellingSink(cancelAfter: 4 << 20)
let task = Task { try await second.write(to: sink) }
sink.feeds(task)
do {
    _ = try await task.value
    check(false, "the cancelled export stopped")
} catch is CancellationError {
    check(
        sink.received < Int(second.payloadBytes) / 2,
        "the cancelled export stopped after \(sink.received) of \(second.payloadBytes) bytes with CancellationError")
}
var after = 0
for await _ in second.progress { after += 1 }
check(after <= 1, "its progress sequence ended")

// 6. Delivery to the back office: the same workflow as `vault upload --remove-delivered`
//    (VaultUpload's DocumentDelivery). The first delivery sends every document; the second has
//    nothing new (the delivery ledger); one that frees space removes what was delivered.
let environment = ProcessInfo.processInfo.environment
guard let office = environment["CAPTURE_APP_BACK_OFFICE"].flatMap(URL.init(string:)),
      let received = environment["CAPTURE_APP_RECEIVED"] else {
    check(false, "CAPTURE_APP_BACK_OFFICE and CAPTURE_APP_RECEIVED name a back office")
    exit(1)
}
let options = UploadOptions(target: UploadTarget(url: office))
let delivery = DocumentDelivery(vault: vault, documents: try await vault.documents(), options: options)
let plan = try delivery.prepare()
check(plan.documents.count == 4 && plan.runs.count == 1, "the delivery plans one run of 4 documents")
let delivered = try await delivery.send(plan)
check(delivered?.sentDocuments == 4 && delivered?.sentBatches == 1, "the back office confirmed 4 documents in 1 batch")
for record in documents {
    let stored = try Data(contentsOf: URL(fileURLWithPath: received).appendingPathComponent(record.id.hex))
    check(stored == (try await vault.read(record.id)), "\(record.metadata.name) arrived byte for byte")
}
let again = DocumentDelivery(vault: vault, documents: try await vault.documents(), options: options)
check(try again.prepare().runs.isEmpty, "a second delivery has nothing new to send")
let freeing = DocumentDelivery(
    vault: vault, documents: try await vault.documents(), options: options, removeDelivered: true)
check(
    try freeing.preview().deliveredBefore.count == 4,
    "a delivery that frees space would remove the 4 delivered documents")
_ = try await freeing.send(try freeing.prepare())
check(try await vault.documents().isEmpty, "and removes them: the vault is empty")

// 7. A wrong password is a VaultError the app can switch over.
do {
    _ = try await store.unlock(password: "wrong horse")
    check(false, "a wrong password is refused")
} catch let e as VaultError {
    check(e.code == .wrongPassword, "a wrong password is refused (\(e.code.rawValue))")
}
print("capture-app: done")
