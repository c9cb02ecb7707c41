#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Keeps a password change from interleaving with any other command on the vault: every
/// process that unlocks a vault holds a shared `flock` on its `session.lock` until it exits, and
/// a password change converts its own to an exclusive one without waiting, or refuses
/// (``VaultError/Code/busy``). Without it, an upload that began under the old key recorded its
/// confirmed batch under the retired epoch after the change: the ledger lost it and the audit
/// called it a forgery.
///
/// One lock per vault folder per process (a `flock` is per open file: a second one in the same
/// process would conflict with the first).
enum SessionLock {
    private static let held = Mutex<[String: OpenFile]>([:])

    /// Holds the shared lock of `store`'s vault for the rest of the process. Best effort for a
    /// vault this process cannot write (a read-only copy): nothing there can change its password.
    static func join(_ store: VaultStore) {
        held.withLock { held in
            guard held[store.root] == nil,
                  let file = open(store) else { return }
            guard (try? file.lockShared()) == true else { file.close(); return }
            held[store.root] = file
        }
    }

    /// `session.lock`, a regular file: a link, a FIFO or a folder someone put in its place is
    /// removed and the file made again (a lock on something else would guard nothing).
    private static func open(_ store: VaultStore) -> OpenFile? {
        let path = store.path(.sessionLock)
        if let file = try? OpenFile.openOrCreate(path) {
            if file.isRegularFile { return file }
            file.close()
        }
        switch FileSystem.kind(of: path, following: false) {
        case .directory: try? FileManager.default.removeItem(atPath: path)
        case .missing: break
        default: try? FileSystem.remove(path)
        }
        guard let file = try? OpenFile.openOrCreate(path) else { return nil }
        guard file.isRegularFile else { file.close(); return nil }
        return file
    }

    /// Runs `body` with no other process holding `store`'s vault; throws ``VaultError/Code/busy``
    /// at once when one does. Goes back to the shared lock afterwards.
    static func alone<R>(_ store: VaultStore, _ body: () throws -> R) throws -> R {
        join(store)
        let file: OpenFile? = held.withLock { $0[store.root] }
        guard let file else { throw VaultError(.io, "cannot lock \(store.path(.sessionLock))") }
        guard try file.lockExclusive(wait: false) else {
            throw VaultError(
                .busy,
                "another vault command is running on this vault (a receiver, an upload, an add, ...); "
                    + "nothing was changed",
                hint: "run the password change again when it has ended (a receiver: stop it, change the password, "
                    + "start it again; stations send again meanwhile and their tokens keep working)")
        }
        defer { _ = try? file.lockShared() }
        return try body()
    }
}
