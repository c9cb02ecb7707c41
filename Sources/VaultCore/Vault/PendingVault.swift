import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// A vault being unlocked on another thread: the Argon2id run (about 0.07 s at `interactive`,
/// seconds at `sensitive`) overlaps the first document's encryption, which needs no password
/// (a document's payload key comes from its own random key; only its header is sealed under
/// the password's key, at the end). ``AddSession`` uses it; a wrong password stops the work at
/// the next batch and nothing is committed.
package final class PendingVault: @unchecked Sendable {
    // @unchecked: `result` is written once, before `ready` is signalled, and read after.
    package let store: VaultStore
    let random: any RandomSource
    private let ready = DispatchSemaphore(value: 0)
    private let lock = NIOLock()
    private var result: Result<Vault, VaultError>?

    /// Starts unlocking `store` with `password` at once, on a background thread.
    package init(store: VaultStore, password: SecretBytes, random: any RandomSource = SystemRandom()) {
        self.store = store
        self.random = random
        Platform.detachThread { [self] in
            let r: Result<Vault, VaultError>
            do { r = .success(try store.unlock(password: password, random: random)) } catch {
                r = .failure(VaultError.from(error))
            }
            lock.lock()
            result = r
            lock.unlock()
            ready.signal()
        }
    }

    /// An already unlocked vault.
    package init(_ vault: Vault) {
        store = vault.store
        random = vault.random
        result = .success(vault)
        ready.signal()
    }

    /// The vault, once unlocked; the unlock's error (a wrong password: exit 77) otherwise.
    package func get() throws -> Vault {
        ready.wait()
        ready.signal()
        return try current!.get()
    }

    /// The unlock's error if it has already failed; nil while it runs or once it succeeded.
    package var failure: VaultError? {
        if case .failure(let e) = current { return e }
        return nil
    }

    private var current: Result<Vault, VaultError>? {
        lock.lock()
        defer { lock.unlock() }
        return result
    }
}

/// A source that stops with the unlock's error as soon as the unlock has failed.
final class UnlockGatedSource: ByteSource {
    private let source: any ByteSource
    private let pending: PendingVault
    init(_ source: any ByteSource, until pending: PendingVault) {
        self.source = source
        self.pending = pending
    }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let e = pending.failure { throw e }
        return try source.read(into: buffer)
    }
}
