/// Proof that the caller holds a vault's writer lock: an exclusive `flock` on its `lock` file,
/// held for the length of one ``VaultStore/withWriterLock(_:)`` call, which alone makes one.
///
/// Every function that changes the vault's state takes one, so "the caller holds the lock" is
/// something the compiler checks rather than a comment (as GRDB's `Database` exists only inside
/// `write {}`). A function holding it passes it on; it never takes the lock a second time (an
/// `flock` is per open file: a second one in the same process would wait for the first).
package struct WriterLock: Sendable {
    /// The vault folder whose lock this is.
    let root: String

    fileprivate init(root: String) { self.root = root }

    /// Fails (a broken invariant, not an error) unless this is `store`'s lock.
    func check(_ store: VaultStore) {
        precondition(root == store.root, "internal error: the writer lock of \(root) used for \(store.root)")
    }
}

extension VaultStore {
    /// Runs `body` holding the vault's exclusive writer lock (waiting for other writers).
    func withWriterLock<R>(_ body: (WriterLock) throws -> R) throws -> R {
        let f = try OpenFile.openOrCreate(lockPath)
        _ = try f.lockExclusive()
        defer { f.unlock() }
        return try body(WriterLock(root: root))
    }
}
