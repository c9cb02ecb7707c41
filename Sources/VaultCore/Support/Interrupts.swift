#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import SystemPackage

/// What must happen if the process is interrupted (SIGINT, SIGTERM, SIGHUP): temporary files
/// that hold plaintext or payload bytes are removed, and registered actions run (restore the
/// terminal's echo, mark a manifest `interrupted`).
///
/// Temporary files are registered and created under the registry's lock (``create(_:_:)``),
/// and the interrupt path ends by taking that lock for good: a file is either created before
/// the sweep, which then removes it, or never, because its creation would wait forever. (A
/// file registered before the sweep but created after it would outlive the process.) The
/// process then exits, so the lock is never released.
package enum Interrupts {
    /// Identifies one registration, to withdraw it.
    package struct Token: Hashable, Sendable { fileprivate let value: Int }

    private static let lock = NIOLock()
    // nonisolated(unsafe): every access to these four is under `lock`.
    nonisolated(unsafe) private static var paths: [Int: String] = [:]
    nonisolated(unsafe) private static var actions: [Int: () -> Void] = [:]
    nonisolated(unsafe) private static var next = 0
    // nonisolated(unsafe): under `lock` as well.
    nonisolated(unsafe) private static var folders: [Int: [String]] = [:]
    // nonisolated(unsafe): under `lock` as well.
    nonisolated(unsafe) private static var diverted: (@Sendable (Int32) -> Void)?

    /// Makes the next interrupt call `handler` instead of cleaning up and exiting: a server's
    /// graceful stop (requests in flight finish). The interrupt after it exits as usual.
    package static func divert(_ handler: @escaping @Sendable (Int32) -> Void) {
        lock.lock(); defer { lock.unlock() }
        diverted = handler
    }

    /// Registers a temporary file to remove on interrupt and creates it with `create`, both
    /// under the registry's lock, so an interrupt's sweep finds it created or it is never made.
    /// When `create` throws, nothing stays registered.
    package static func create<R>(_ path: String, _ create: () throws -> R) throws -> (Token, R) {
        lock.lock(); defer { lock.unlock() }
        let made = try create()
        next += 1
        paths[next] = path
        return (Token(value: next), made)
    }

    /// Registers an action to run on interrupt (before temporary files are removed). Actions
    /// run on the interrupt thread while the main work may still be running: they must take
    /// whatever lock protects the state they touch.
    package static func register(action: @escaping () -> Void) -> Token {
        lock.lock(); defer { lock.unlock() }
        next += 1
        actions[next] = action
        return Token(value: next)
    }

    /// Registers folders a command made, removed on interrupt if they are empty once the
    /// temporary files are gone (innermost first).
    package static func register(emptyFolders: [String]) -> Token {
        lock.lock(); defer { lock.unlock() }
        next += 1
        folders[next] = emptyFolders
        return Token(value: next)
    }

    /// Withdraws a registration (the file was committed or removed; the action is moot).
    package static func unregister(_ token: Token) {
        lock.lock(); defer { lock.unlock() }
        paths[token.value] = nil
        actions[token.value] = nil
        folders[token.value] = nil
    }

    /// Runs the actions, then removes every registered file and keeps the lock, so nothing new
    /// can be registered (or created) before the process exits. Call only on the way out.
    package static func cleanUpForExit() {
        lock.lock()
        let pending = actions.sorted { $0.key < $1.key }.map(\.value)
        actions = [:]
        lock.unlock()
        for action in pending { action() }
        lock.lock()
        for path in paths.values { try? Platform.unlink(path) }
        paths = [:]
        for dirs in folders.values { for dir in dirs { try? Platform.removeEmptyDirectory(dir) } }
        folders = [:]
        // The lock stays taken: the process is about to exit.
    }

    /// Installs handlers for SIGINT, SIGTERM and SIGHUP. On the first signal a watcher thread
    /// runs ``cleanUpForExit()`` and then `onInterrupt` (which should print and exit).
    /// - Throws: ``VaultError/Code/internal`` if the handlers cannot be installed.
    package static func install(onInterrupt: @escaping @Sendable (Int32) -> Void) throws {
        let ends: (readEnd: SystemPackage.FileDescriptor, writeEnd: SystemPackage.FileDescriptor)
        do {
            ends = try SystemPackage.FileDescriptor.pipe()
            // Neither end may reach a program vault starts: it could fake an interrupt, or
            // swallow real ones (found by a review of the password command, which inherited both).
            Platform.closeOnExec(ends.readEnd)
            Platform.closeOnExec(ends.writeEnd)
            try Platform.installInterruptHandlers(writeEnd: ends.writeEnd)
        } catch {
            throw VaultError(.internal, "cannot install signal handlers (\(error))")
        }
        let readEnd = ends.readEnd
        Platform.detachThread {
            var signal: UInt8 = 0
            while true {
                // Retries EINTR; anything else means no interrupt will ever come through here.
                guard (try? withUnsafeMutableBytes(of: &signal) { try readEnd.read(into: $0) }) == 1 else { return }
                lock.lock()
                let handler = diverted
                diverted = nil
                lock.unlock()
                if let handler {
                    handler(Int32(signal))
                    continue
                }
                cleanUpForExit()
                onInterrupt(Int32(signal))
                return
            }
        }
    }

    /// Turns off core dumps and (on Linux) marks the process not dumpable, so neither a core
    /// file nor another process of the same user can read secrets out of its memory.
    package static func disableCoreDumps() throws {
        do { try Platform.disableCoreDumps() } catch {
            throw VaultError(.internal, "cannot disable core dumps (\(error))")
        }
    }
}
