import Crypto
import Foundation
import Testing
import VaultCore  // not @testable: what an app sees
import VaultFoundation

/// The async entry points as an app uses them: a `String` password, files by URL, `Data`,
/// ranges, an export into a `FileHandle` with progress as an `AsyncSequence`, and cancellation
/// through `Task`.
@Suite struct AsyncAPITests {
    /// A vault in a temporary folder, made through the async API.
    final class AppVault {
        let dir = TempDir()
        let vault: Vault
        init() async throws {
            vault = try await VaultStore(url: URL(fileURLWithPath: dir.file("vault"))).create(
                password: "app pässword", kdf: .minimum)
        }
        func file(_ name: String, _ bytes: [UInt8]) -> URL {
            _ = FileManager.default.createFile(atPath: dir.file(name), contents: Data(bytes))
            return URL(fileURLWithPath: dir.file(name))
        }
    }

    @Test func anAppCreatesAddsListsReadsAndReopensWithAStringPassword() async throws {
        let app = try await AppVault()
        let photo = testBytes(3 << 20 + 17, seed: 7)
        let added = try await app.vault.add(fileAt: app.file("IMG_0001.heic", photo), tags: ["2026"])
        let note = try await app.vault.add(Data("a note".utf8), name: "note.txt")
        let streamed = testBytes(200_000, seed: 9)
        let fromStream = try await app.vault.add(from: InputStream(data: Data(streamed)), name: "stream.bin")
        #expect(try await app.vault.read(fromStream.id) == Data(streamed))
        #expect(added.metadata.name == "IMG_0001.heic" && added.metadata.size == UInt64(photo.count))
        #expect(added.metadata.sha256 == Array(SHA256.hash(data: photo)))
        #expect(try await app.vault.documents().map(\.id) == [added.id, note.id, fromStream.id])

        #expect(try await app.vault.read(note.id) == Data("a note".utf8))
        // A range across a chunk boundary (64 KiB), and one past the end, clamped.
        #expect(try await app.vault.read(added.id, range: 65_000..<70_000) == Data(photo[65_000..<70_000]))
        #expect(
            try await app.vault.read(added.id, range: UInt64(photo.count - 5)..<UInt64(photo.count + 100))
                == Data(photo.suffix(5)))

        // The same password opens it again; another is VaultError wrong-password.
        let store = VaultStore(url: URL(fileURLWithPath: app.dir.file("vault")))
        #expect(try await store.unlock(password: Data("app pässword".utf8)).id == app.vault.id)
        let e = await #expect(throws: VaultError.self) { try await store.unlock(password: "app password") }
        #expect(e?.code == .wrongPassword)
        // Adding the same contents again is refused.
        let d = await #expect(throws: VaultError.self) {
            try await app.vault.add(Data("a note".utf8), name: "again.txt")
        }
        #expect(d?.code == .duplicate)

        // Removing: an unknown id removes nothing; known ones go.
        let unknown = DocumentID(hex: String(repeating: "ab", count: 16))!
        let n = await #expect(throws: VaultError.self) { try await app.vault.remove([note.id, unknown]) }
        #expect(n?.code == .notFound)
        #expect(try await app.vault.documents().count == 3)
        try await app.vault.remove([note.id])
        #expect(try await app.vault.documents().map(\.id) == [added.id, fromStream.id])
    }

    @Test func anExportIntoAFileHandleMatchesTheFolderAndReportsProgress() async throws {
        let app = try await AppVault()
        for i in 0..<3 {
            _ = try await app.vault.add(Data(testBytes(1 << 20 + i, seed: UInt64(i))), name: "scan-\(i).pdf")
        }
        let export = try await app.vault.prepareExport()
        #expect(export.documents == 3 && export.batchCount == 1)
        let watcher = Task {
            var seen: [ExportProgress] = []; for await p in export.progress { seen.append(p) }; return seen
        }

        let path = app.dir.file("payload.json")
        _ = FileManager.default.createFile(atPath: path, contents: Data("kept".utf8))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        let summary = try await export.write(to: handle)
        try handle.close()
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(summary.payloadBytes == export.payloadBytes && UInt64(written.count) == 4 + export.payloadBytes)
        #expect(written.prefix(4) == Data("kept".utf8))

        let folder = try await app.vault.prepareExport().write(toDirectory: URL(fileURLWithPath: app.dir.file("out")))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: app.dir.file("out/" + folder.batches[0].file!)))
                == written.dropFirst(4))

        // The sequence ends once the plan is written; its last value is the whole. (How many
        // values a consumer sees depends on how often it runs: it gets the newest, not each.)
        let seen = await watcher.value
        let total: UInt64 = 3 << 20 + 3
        #expect(
            seen.last.map {
                [
                    $0.completedBytes, $0.totalBytes, UInt64($0.completedDocuments), UInt64($0.totalDocuments),
                    UInt64($0.batch)
                ]
            }
                == [total, total, 3, 3, 1])
        #expect(seen.last?.fractionCompleted == 1)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
    }

    @Test func aTaskCancelledBeforeItsExportWritesNothing() async throws {
        let app = try await AppVault()
        _ = try await app.vault.add(Data("x".utf8), name: "x.txt")
        let export = try await app.vault.prepareExport()
        let out = URL(fileURLWithPath: app.dir.file("out"))
        let writer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await export.write(toDirectory: out)
        }
        await #expect(throws: CancellationError.self) { try await writer.value }
        #expect(!FileManager.default.fileExists(atPath: out.path))
        // The sequence has ended: a loop over it returns at once.
        for await _ in export.progress { Issue.record("progress after a cancelled write") }
    }

    @Test func eachBatchOfALargerSelectionGoesToAFileOfItsOwn() async throws {
        let app = try await AppVault()
        for i in 0..<5 { _ = try await app.vault.add(Data("document \(i)".utf8), name: "d\(i).txt") }
        var options = ExportOptions()
        options.limits = BatchLimits(documents: 2)
        let export = try await app.vault.prepareExport(options: options)
        let handle = try FileHandle(
            forWritingTo: URL(
                fileURLWithPath: {
                    let p = app.dir.file("x"); _ = FileManager.default.createFile(atPath: p, contents: nil); return p
                }()))
        let e = await #expect(throws: VaultError.self) { try await export.write(to: handle) }
        #expect(e?.code == .singleBatchNeeded)
        var names: [String] = []
        for batch in 1...export.batchCount {
            let path = app.dir.file("batch-\(batch).json")
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            _ = try await export.write(batch: batch, to: h)
            try h.close()
            let json =
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
                as! [String: [[String: Any]]]
            names += json["Files"]!.map { $0["Name"] as! String }
        }
        #expect(names == ["d0.txt", "d1.txt", "d2.txt", "d3.txt", "d4.txt"])
        let n = await #expect(throws: VaultError.self) { try await export.write(batch: 4, to: handle) }
        #expect(n?.code == .usage)
    }
}
