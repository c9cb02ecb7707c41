import Dispatch
import NIOConcurrencyHelpers

/// Values made ahead on another core and handed out one at a time: what a capture-only
/// station's `add` of many small documents waits on otherwise (each document's two age keyings,
/// an X25519 key pair and key agreement per recipient each, and its two staged files, whose
/// creation on a journal-less ext4 passes over every inode freed in the last minutes;
/// docs/PERFORMANCE.md, "add on a capture-only station").
///
/// Each value is made once and handed out once. The taker never waits on the other core: when
/// none is ready it makes its own, and an error making one is the taker's to see (one made ahead
/// that failed only stops the refill). Those not taken are let go by ``close()`` (or with the
/// supply), so a value's own `deinit` does its cleaning up: a key's wipe, a staged file's unlink.
package final class MadeAhead<Value>: @unchecked Sendable {
    // @unchecked: `ready`, `refilling` and `closed` are read and written only with `lock` held;
    // a value crosses threads only through `ready`, each once.
    private let make: @Sendable () throws -> Value
    private let depth: Int
    private let lock = NIOLock()
    private var ready: [Value] = []
    private var refilling = false
    private var closed = false
    private let refills = DispatchGroup()

    /// A supply keeping up to `depth` values ahead, made by `make` on any thread.
    package init(depth: Int = 16, make: @escaping @Sendable () throws -> Value) {
        self.depth = max(depth, 2)
        self.make = make
    }

    /// A value: one made ahead when one is ready, else one made now. Taking one starts the
    /// refill on another thread once fewer than half the depth are left.
    package func next() throws -> Value {
        let (made, refill) = lock.withLock { () -> (Value?, Bool) in
            let made = ready.popLast()
            let refill = !closed && !refilling && ready.count < depth / 2
            if refill { refilling = true }
            return (made, refill)
        }
        if refill { DispatchQueue.global().async(group: refills) { self.refill() } }
        if let made { return made }
        return try make()
    }

    /// Makes no more and lets go of those not taken, once a refill under way has ended (so a
    /// staged file is gone before the command exits).
    package func close() {
        lock.withLock { closed = true }
        refills.wait()
        let dropped = lock.withLock { () -> [Value] in
            defer { ready = [] }
            return ready
        }
        withExtendedLifetime(dropped) {}  // let go here, outside the lock
    }

    private func refill() {
        while true {
            guard let made = try? make() else { return lock.withLock { refilling = false } }
            let (dropped, more) = lock.withLock { () -> (Value?, Bool) in
                if closed {
                    refilling = false
                    return (made, false)
                }
                ready.append(made)
                if ready.count >= depth {
                    refilling = false
                    return (nil, false)
                }
                return (nil, true)
            }
            withExtendedLifetime(dropped) {}  // one made after the close is let go here
            if !more { return }
        }
    }
}
