internal import CSodium

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
        guard let p = sodium_malloc(max(count, 1)) else {
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
            sodium_free(p)
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
        sodium_free(base)
    }
}
