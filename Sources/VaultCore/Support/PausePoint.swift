#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Named moments where a debug build stops for a test, so that a test kills a command at a
/// moment it names instead of after a guessed sleep (as the fuzz and fault hooks are, a test
/// facility; a release build has none, and the environment is not read there).
///
/// With `VAULT_PAUSE_AT=NAME` (or `NAME#N`, the N-th time it is reached) and `VAULT_PAUSE_FILE`
/// set, the process writes the point's name to that file when it reaches the point, and waits
/// there until the file is removed (or the test kills it).
package enum PausePoint {
    /// A point is reached.
    package static func reached(_ name: String) {
        #if DEBUG
        let environment = ProcessInfo.processInfo.environment
        guard let spec = environment["VAULT_PAUSE_AT"], let path = environment["VAULT_PAUSE_FILE"] else { return }
        let parts = spec.split(separator: "#", maxSplits: 1)
        guard parts.first.map(String.init) == name else { return }
        let nth = parts.count == 2 ? Int(parts[1]) ?? 1 : 1
        let count = counts.withLock { counts -> Int in
            counts[name, default: 0] += 1
            return counts[name, default: 0]
        }
        guard count == nth else { return }
        guard let marker = try? OpenFile.createExclusive(path), (try? marker.write(Array(name.utf8))) != nil else {
            return
        }
        marker.close()
        while FileSystem.kind(of: path) != .missing { Platform.sleep(seconds: 0.01) }
        #endif
    }

    #if DEBUG
    private static let counts = Mutex<[String: Int]>([:])
    #endif
}
