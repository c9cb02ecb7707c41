// Family `tus`: the receiver's tus endpoint (`TusReceiver`) driven by a script of requests whose
// headers and bodies are the input: creations with any Upload-Length, PATCHes with any
// Upload-Offset, Upload-Checksum and chunk, HEADs and DELETEs, on a receiver vault of its own.
// Input: a sequence of commands, each one byte (the command) then a length byte and that many
// bytes of header value, then (PATCH) a length byte and that many bytes of chunk.
// Properties: no crash; every answer has a documented status; an upload's offset never goes
// back, never past its length, and moves only by the bytes a 204 PATCH took; nothing is left in
// `staging/` once every upload is dropped; the vault verifies.
import Crypto
import Foundation
import VaultCore
import VaultReceive

enum TusFamily {
    static let scratch = ScratchVault(documents: 0)

    static let statuses: Set<Int> = [200, 201, 204, 400, 404, 409, 410, 413, 415, 429, 460, 500]

    static func check(_ bytes: [UInt8]) {
        let (vault, root) = scratch.fresh()
        guard let receiver = try? Receiver(vault: vault) else { return expect(false, "a receiver on a fresh vault") }
        let tus = TusReceiver(receiver: receiver, expiry: 3600)
        var ids: [String] = []
        var offsets: [String: UInt64] = [:]
        var i = 0
        func take(_ n: Int) -> [UInt8] {
            let end = min(bytes.count, i + n)
            defer { i = end }
            return Array(bytes[i..<end])
        }
        func text() -> String { String(decoding: take(Int(take(1).first ?? 0) % 48), as: UTF8.self) }
        while i < bytes.count {
            let op = take(1)[0]
            let pick = ids.isEmpty ? "none" : ids[Int(op >> 3) % ids.count]
            switch op % 4 {
            case 0:
                let (key, length) = ("k\(ids.count)", text())
                let a = waitForValue {
                    await tus.create(station: "st", key: key, head: nil, length: length, deferLength: op & 4 != 0)
                }
                expect(statuses.contains(a.status), "create: \(a.status)")
                if a.status == 201, let location = a.headers.first(where: { $0.0 == "Location" })?.1 {
                    let id = String(location.dropFirst("/files/".count))
                    ids.append(id)
                    offsets[id] = 0
                }
            case 1:
                let offset = text()
                let checksum = op & 4 != 0 ? text() : nil
                let chunk = take(Int(take(1).first ?? 0))
                switch tus.begin(
                    pick, station: "st", offset: offset, contentType: "application/offset+octet-stream",
                    checksum: checksum)
                {
                case .failure(let a): expect(statuses.contains(a.status), "patch refused: \(a.status)")
                case .success(let patch):
                    chunk.withUnsafeBytes { tus.take(patch, $0) }
                    // Handed to the waiting task through a box it empties, so the patch (which
                    // keeps its upload busy until released) is gone when the wait ends, not
                    // whenever the task's closure happens to be freed.
                    let box = PatchBox(patch)
                    let a = waitForValue { await tus.end(box.take()) }
                    expect(statuses.contains(a.status), "patch: \(a.status)")
                    let head = tus.head(pick, station: "st")
                    if let now = head.headers.first(where: { $0.0 == "Upload-Offset" }).flatMap({ UInt64($0.1) }),
                        let before = offsets[pick]
                    {
                        let moved = a.status == 204 ? UInt64(chunk.count) : 0
                        expect(now == before + moved, "the offset moves by what a 204 took: \(before) → \(now)")
                        let length = head.headers.first(where: { $0.0 == "Upload-Length" }).flatMap { UInt64($0.1) }
                        expect(now <= length ?? .max, "never past the length")
                        offsets[pick] = now
                    } else {
                        offsets[pick] = nil
                    }
                }
            case 2:
                let a = tus.head(pick, station: op & 4 != 0 ? "st" : "other")
                expect(op & 4 != 0 || a.status == 404, "another station's upload is not found")
            default:
                let a = tus.terminate(pick, station: "st")
                expect([204, 404].contains(a.status), "delete: \(a.status)")
                offsets[pick] = nil
            }
        }
        for id in ids { _ = tus.terminate(id, station: "st") }
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: root + "/staging")) ?? []
        expect(staged.isEmpty, "nothing staged once every upload is dropped: \(staged)")
        expect((try? vault.verify().isClean) ?? false, "the vault verifies")
    }
}

/// One patch handed to another task, once: ``take()`` gives it up.
final class PatchBox: @unchecked Sendable {
    // Unchecked: set before the task starts, taken once by it while this thread waits.
    private var patch: TusReceiver.Patch?

    init(_ patch: TusReceiver.Patch) { self.patch = patch }

    func take() -> TusReceiver.Patch {
        defer { patch = nil }
        return patch!
    }
}
