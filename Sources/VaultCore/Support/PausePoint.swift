#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Named moments where a debug build stops for a test, so that a test kills a command at a
/// moment it names instead of after a guessed sleep (a test facility, as the fuzz and fault
/// hooks are; in a release build it is compiled out and never armed).
///
/// The host arms it with a point's name (`NAME`, or `NAME#N` for the N-th time it is reached)
/// and a marker file. On reaching that point the process writes the point's name to the file,
/// and waits there until the file is removed (or the test kills it).
package enum PausePoint {
    #if DEBUG
    private struct Armed {
        var name: String
        var nth: Int
        var marker: String
        var reached = 0
    }

    private static let armed = Mutex<Armed?>(nil)
    #endif

    /// Arms the point `spec` names (`NAME` or `NAME#N`), to write `marker` when it is reached.
    /// Does nothing in a release build.
    package static func arm(_ spec: String, marker: String) {
        #if DEBUG
        let parts = spec.split(separator: "#", maxSplits: 1)
        guard let name = parts.first else { return }
        let nth = parts.count == 2 ? Int(parts[1]) ?? 1 : 1
        armed.withLock { $0 = Armed(name: String(name), nth: nth, marker: marker) }
        #endif
    }

    /// A point is reached.
    package static func reached(_ name: String) {
        #if DEBUG
        let marker = armed.withLock { armed -> String? in
            guard armed?.name == name else { return nil }
            armed?.reached += 1
            return armed?.reached == armed?.nth ? armed?.marker : nil
        }
        guard let marker,
            let file = try? OpenFile.createExclusive(marker),
            (try? file.write(Array(name.utf8))) != nil
        else { return }
        file.close()
        while FileSystem.kind(of: marker) != .missing { Platform.sleep(seconds: 0.01) }
        #endif
    }
}
