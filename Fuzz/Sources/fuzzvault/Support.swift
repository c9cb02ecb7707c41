// What every family shares: the property check that traps, the split of one input into parts,
// a scratch vault to read hostile state files into, and a way to wait on async code from
// libFuzzer's synchronous callback.
import Foundation
import Synchronization
import VaultCore

/// A property of the parser under test; a violation traps, which libFuzzer reports as a crash
/// (and replay as a failure) with the input that caused it.
func expect(_ condition: @autoclosure () -> Bool, _ what: @autoclosure () -> String) {
    if !condition() { preconditionFailure("property violated: \(what())") }
}

/// Runs `body`; a thrown error must be a `VaultError`, and its code one of `codes` when given.
/// Returns the value, or nil when it threw.
@discardableResult
func onlyVaultErrors<T>(_ what: String, codes: Set<VaultError.Code>? = nil, _ body: () throws -> T) -> T? {
    do { return try body() } catch let e as VaultError {
        if let codes { expect(codes.contains(e.code), "\(what): unexpected code \(e.code) (\(e.message))") }
        return nil
    } catch {
        preconditionFailure("property violated: \(what): a non-VaultError escaped: \(error)")
    }
}

/// The parts of an input, split at the record separator 0x1E (so a seed stays readable text),
/// at most `limit` of them.
func parts(_ bytes: ArraySlice<UInt8>, limit: Int = 16) -> [[UInt8]] {
    Array(bytes.split(separator: 0x1E, maxSplits: limit - 1, omittingEmptySubsequences: false).map(Array.init))
}

/// The scratch folder of this process: on tmpfs where there is one (each input writes files).
let scratch: String = {
    let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let dir = base + "/fuzzvault-\(getpid())"
    try? FileManager.default.removeItem(atPath: dir)
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: scratch) }
    return dir
}()

let fuzzPassword = "fuzz password"

/// A vault made once per process (the cheapest password hashing) with two small documents and
/// a short history; `fresh()` hands out a copy of its folder, unlocked, for an input to damage.
final class ScratchVault: @unchecked Sendable {
    // @unchecked: libFuzzer calls the target from one thread.
    let pristine: String
    let records: [DocumentRecord]
    private var n = 0

    /// - Parameter prepare: what else is done to the vault before it is copied (once).
    init(documents: Int = 2, prepare: (Vault) -> Void = { _ in }) {
        pristine = scratch + "/pristine-\(UUID().uuidString.prefix(8))"
        let vault = try! VaultStore(root: pristine).create(
            password: try! SecretBytes(password: fuzzPassword), kdf: .minimum)
        for i in 0..<documents {
            let file = scratch + "/doc-\(i)"
            FileManager.default.createFile(
                atPath: file, contents: Data((0..<(300 + 700 * i)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }))
            _ = try! vault.add(from: try! OpenFile.openForReading(file), name: "doc \(i).txt")
            try? FileManager.default.removeItem(atPath: file)
        }
        records = try! vault.records().records.sorted { $0.metadata.name < $1.metadata.name }
        prepare(vault)
    }

    /// A copy of the vault in its own folder, unlocked; the previous copy is removed.
    func fresh() -> (Vault, String) {
        try? FileManager.default.removeItem(atPath: pristine + "-\(n)")
        n += 1
        let dir = pristine + "-\(n)"
        try! FileManager.default.copyItem(atPath: pristine, toPath: dir)
        return (try! VaultStore(root: dir).unlock(password: try! SecretBytes(password: fuzzPassword)), dir)
    }
}

/// Writes `bytes` to `path`, making its folder.
func put(_ bytes: [UInt8], at path: String) {
    try? FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

/// Waits for async `body` on a thread of its own (libFuzzer's callback is synchronous).
func waitFor(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await body()
        done.signal()
    }
    done.wait()
}

/// The value of async `body`, waited for on a thread of its own (libFuzzer's callback is synchronous).
func waitForValue<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let result = Mutex<T?>(nil)
    waitFor { let v = await body(); result.withLock { $0 = v } }
    return result.withLock { $0! }
}
