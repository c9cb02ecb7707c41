internal import CSodium
import Synchronization

/// Secret bytes (a key or a password) in memory this object owns.
///
/// The bytes live in a `sodium_malloc` allocation (guard pages, `mlock`ed where allowed),
/// never in a Swift array that could be copied and left behind. They are lent out only inside
/// ``withUnsafeBytes(_:)``, and zeroed when the object is freed.
public final class SecretBytes: @unchecked Sendable {
    // @unchecked: the bytes are written only during initialisation, then only read, except
    // by wipe(), which the owner calls when no other reference can be using them.
    private let base: UnsafeMutableRawPointer
    /// The number of secret bytes.
    public let count: Int

    /// Allocates `count` zeroed bytes and lets `initialize` fill them.
    init(count: Int, _ initialize: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        try Sodium.ensureInitialized()
        // sodium_malloc(0) is allowed but returns a pointer we must not touch; keep one byte.
        guard let p = SpareSecrets.take(count) ?? sodium_malloc(max(count, 1)) else {
            throw VaultError(.internal, "could not allocate protected memory for a secret")
        }
        base = p
        self.count = count
        let buffer = UnsafeMutableRawBufferPointer(start: p, count: count)
        Sodium.wipe(buffer)
        do {
            try initialize(buffer)
        } catch {
            Sodium.wipe(buffer)
            SpareSecrets.give(p, count: count)
            throw error
        }
    }

    /// Fresh random bytes from `random`.
    package static func random(count: Int, using random: any RandomSource) throws -> SecretBytes {
        try SecretBytes(count: count) { random.fill($0) }
    }

    /// A copy of `bytes`. The caller remains responsible for wiping its own copy.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws {
        try self.init(count: bytes.count) { $0.copyMemory(from: bytes) }
    }

    /// Lends the bytes to `body`; they must not escape it.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Zeroes the bytes now. Called by `deinit`; tests call it directly to check the wipe.
    func wipe() {
        Sodium.wipe(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    deinit {
        wipe()
        SpareSecrets.give(base, count: count)
    }
}

/// Protected allocations of small secrets, kept wiped for the next secret of the same size.
///
/// `sodium_malloc` maps guard pages around each secret, `mprotect`s and `mlock`s it, and
/// `sodium_free` undoes all of it, with a TLB shootdown on every core: a receiver makes a
/// handful of keys for every document it takes (the document key and its subkeys), and that
/// churn was a tenth of its CPU at 256 KiB documents. A freed secret of at most
/// ``largest`` bytes is wiped (by its owner, before) and kept here instead, guard pages,
/// canary and lock in place; at most ``kept`` of each size, the rest freed.
enum SpareSecrets {
    /// The largest secret kept (keys are 32 bytes; a short password is kept too, wiped).
    static let largest = 64
    /// How many of each size are kept.
    static let kept = 64
    /// The kept allocations' addresses, by size.
    private static let spare = Mutex<[Int: [UInt]]>([:])

    /// A kept allocation for a secret of `count` bytes (wiped), or nil.
    static func take(_ count: Int) -> UnsafeMutableRawPointer? {
        guard count > 0, count <= largest else { return nil }
        return spare.withLock { $0[count]?.popLast() }.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Keeps `pointer`, a wiped `sodium_malloc` allocation of `count` bytes, or frees it.
    static func give(_ pointer: UnsafeMutableRawPointer, count: Int) {
        let address = UInt(bitPattern: pointer)
        let kept = count > 0 && count <= largest
            && spare.withLock { s in
                guard s[count, default: []].count < Self.kept else { return false }
                s[count, default: []].append(address)
                return true
            }
        if !kept { sodium_free(pointer) }
    }
}
