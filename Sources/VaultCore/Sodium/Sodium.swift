internal import CSodium

/// The one place that initialises libsodium.
///
/// `sodium_init` is idempotent and thread-safe; it is called once, lazily, before the first
/// use of any primitive. It can only fail when the system has no usable randomness, in which
/// case nothing in the vault can work.
package enum Sodium {
    private static let status: Int32 = sodium_init()

    /// Throws if libsodium could not be initialised.
    static func ensureInitialized() throws {
        guard status >= 0 else {
            throw VaultError(.internal, "libsodium failed to initialise (no system randomness?)")
        }
    }

    /// Constant-time comparison of two equally long byte ranges.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    /// Zeroes memory in a way the optimiser may not remove.
    package static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress,
              buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Zeroes an array that briefly held secret bytes (a decrypted keyring).
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
    }
}

/// The libsodium this process runs with.
public enum Libsodium {
    /// Its version string (`sodium_version_string()`), e.g. "1.0.18".
    public static var version: String { String(cString: sodium_version_string()) }
}
