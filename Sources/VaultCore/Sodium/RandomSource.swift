internal import CSodium
import Synchronization

/// Where random bytes come from. Injected so that fixtures regenerate byte for byte.
package protocol RandomSource: Sendable {
    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomSource {
    /// `count` random bytes as an array (for public values such as salts and nonces).
    package func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }
}

/// The operating system's randomness, through libsodium's `randombytes_buf`.
package struct SystemRandom: RandomSource {
    /// Creates the system source.
    package init() {}
    package func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress,
              buffer.count > 0 else { return }
        try? Sodium.ensureInitialized()
        randombytes_buf(base, buffer.count)
    }
}

/// A reproducible byte stream for tests and fixture generation: never for real vaults.
///
/// Each call to ``fill(_:)`` draws from `randombytes_buf_deterministic` (ChaCha20) keyed by
/// BLAKE2b(seed ‖ call counter), so the same sequence of calls yields the same bytes.
package final class DeterministicRandom: RandomSource {
    private let seed: [UInt8]
    private let counter = Mutex<UInt64>(0)

    /// A source keyed by `seed` (any length).
    package init(seed: String) {
        self.seed = Array(seed.utf8)
    }

    package func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress,
              buffer.count > 0 else { return }
        try? Sodium.ensureInitialized()
        let n = counter.withLock { value -> UInt64 in
            defer { value += 1 }
            return value
        }
        var input = seed
        withUnsafeBytes(of: n.bigEndian) { input.append(contentsOf: $0) }
        var subseed = [UInt8](repeating: 0, count: Int(randombytes_SEEDBYTES))
        crypto_generichash(&subseed, subseed.count, input, UInt64(input.count), nil, 0)
        randombytes_buf_deterministic(base, buffer.count, subseed)
    }
}
