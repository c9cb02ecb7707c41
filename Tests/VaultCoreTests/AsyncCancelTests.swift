import Foundation
import Testing
@testable import VaultCore
import VaultFoundation

/// Cancellation through `Task`, made deterministic: the pipeline is held at a progress event
/// (on its own thread) until the test has cancelled the writing task, then let go. It must stop
/// before its next chunk group, throw `CancellationError`, and leave no partial output.
@Suite struct AsyncCancelTests {
    /// Holds the pipeline's thread at the first progress event past `after` bytes (of batch `batch`).
    final class Gate: @unchecked Sendable {
        // @unchecked: the counters are written on the pipeline's thread only, and read by the
        // test after the write has returned.
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let after: UInt64
        let batch: Int
        private var currentBatch = 0
        private(set) var heldAt: UInt64?
        private(set) var lastDone: UInt64 = 0

        init(after: UInt64, batch: Int = 1) { self.after = after; self.batch = batch }

        func observe(_ event: ExportEvent) {
            if case .batchStarted(let index, _, _, _) = event { currentBatch = index }
            guard case .progress(let done, _) = event else { return }
            lastDone = done
            if heldAt == nil && currentBatch == batch && done > after {
                heldAt = done
                reached.signal()
                _ = release.wait(timeout: .now() + 900)
            }
        }

        /// Waits (a bound of minutes) for the pipeline to be held.
        /// Waits until the export is held (bounded by 15 minutes: under a full test run the
        /// export's task may wait long for a thread); false when it never was.
        func waitUntilHeld() async -> Bool {
            await withCheckedContinuation { c in
                DispatchQueue.global().async { [reached] in
                    c.resume(returning: reached.wait(timeout: .now() + 900) == .success)
                }
            }
        }
    }

    let dir = TempDir()

    func vault(documents: [Int]) throws -> Vault {
        let v = try VaultStore(root: dir.file("vault")).create(password: TestKeys.password(), kdf: .minimum)
        for (i, size) in documents.enumerated() {
            _ = try v.add(
                from: BytesSource(testBytes(size, seed: UInt64(i + 1))), name: "d\(i).bin", allowDuplicate: true)
        }
        return v
    }

    @Test func aCancelledExportIntoAFileStopsWithinAChunkGroupAndCutsTheFileBack() async throws {
        let v = try vault(documents: [24 << 20])
        let gate = Gate(after: 0)
        let export = try ExportOperation(
            vault: v, selection: DocumentSelection(), options: ExportOptions(), observer: gate.observe)
        let path = dir.file("payload.json")
        _ = FileManager.default.createFile(atPath: path, contents: Data("before".utf8))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()

        let writer = Task { try await export.write(to: handle) }
        // A cancel before the hold would test nothing (a CI run once saw the wait time out).
        try #require(await gate.waitUntilHeld(), "the export never reached its hold point")
        writer.cancel()
        gate.release.signal()
        await #expect(throws: CancellationError.self) { try await writer.value }

        try handle.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("before".utf8))
        // After the hold, at most the chunk group under way was finished.
        let held = try #require(gate.heldAt)
        let group = UInt64(ChunkBatching.reading.plaintextBytes)
        #expect(gate.lastDone - held <= group, "went on for \(gate.lastDone - held) bytes after the cancel")
        #expect(gate.lastDone < 24 << 20)
    }

    @Test func aCancelledFolderExportKeepsCompleteBatchesAndMarksTheRestInterrupted() async throws {
        let v = try vault(documents: [4 << 20, 4 << 20, 4 << 20])
        var options = ExportOptions()
        options.limits = BatchLimits(documents: 1)
        let gate = Gate(after: 5 << 20, batch: 2)
        let export = try ExportOperation(
            vault: v, selection: DocumentSelection(), options: options, observer: gate.observe)
        let out = URL(fileURLWithPath: dir.file("out"))
        let writer = Task { try await export.write(toDirectory: out) }
        // A cancel before the hold would test nothing (a CI run once saw the wait time out).
        try #require(await gate.waitUntilHeld(), "the export never reached its hold point")
        writer.cancel()
        gate.release.signal()
        await #expect(throws: CancellationError.self) { try await writer.value }

        // No temporary file is left, the first batch is whole, the manifest says the rest were interrupted.
        let files = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(files == ["batch-0001.json", "manifest.json"])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json")))
            as! [String: Any]
        let batches = manifest["batches"] as! [[String: Any]]
        #expect(batches.map { $0["status"] as! String } == ["complete", "interrupted", "interrupted"])
        let first = try Data(contentsOf: out.appendingPathComponent("batch-0001.json"))
        #expect(UInt64(first.count) == (batches[0]["bytes"] as! NSNumber).uint64Value)
    }
}
