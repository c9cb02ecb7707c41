/// A temporary file in `staging/` for bytes a receiver must hold before it knows what they are
/// (a tus chunk whose checksum is checked only at its end), sealed as they are written under a
/// key that exists only in this object's memory: nothing on disk can be read back without it,
/// and a spool a crash left behind is noise (swept as any staging file).
///
/// Records of at most ``recordSize`` plaintext bytes: a 4-byte big-endian length, then the
/// XChaCha20-Poly1305 seal of the bytes under the spool's key with the record's number as the
/// nonce. Read back in order with ``rewind()`` and ``read(into:)``; a record that does not open
/// (the file was changed under it) is an error.
package final class SealedSpool {
    /// The most plaintext bytes in one record (and the least a reader's buffer must hold).
    package static let recordSize = 64 << 10

    private let file: AtomicFile
    private let key: SecretBytes
    private var written: UInt64 = 0
    private var read: UInt64 = 0
    private var sealed: [UInt8]

    init(file: AtomicFile, random: any RandomSource) throws {
        self.file = file
        key = try SecretBytes.random(count: XChaCha20Poly1305.keySize, using: random)
        sealed = [UInt8](repeating: 0, count: 4 + Self.recordSize + XChaCha20Poly1305.tagSize)
    }

    deinit { file.discard() }

    private static func nonce(_ n: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: XChaCha20Poly1305.nonceSize - 8)
            + (0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * $0)) }
    }

    /// Seals `bytes` onto the end of the spool.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        var at = 0
        while at < bytes.count {
            let n = min(Self.recordSize, bytes.count - at)
            let total = 4 + n + XChaCha20Poly1305.tagSize
            let nonce = Self.nonce(written)
            sealed.withUnsafeMutableBytes { out in
                for i in 0..<4 { out[i] = UInt8(truncatingIfNeeded: n >> (24 - 8 * i)) }
                nonce.withUnsafeBytes { nb in
                    key.withUnsafeBytes { k in
                        XChaCha20Poly1305.seal(
                            UnsafeRawBufferPointer(rebasing: bytes[at..<at + n]),
                            into: UnsafeMutableRawBufferPointer(rebasing: out[4..<total]),
                            ad: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nb, key: k)
                    }
                }
            }
            try sealed.withUnsafeBytes { try file.file.write(UnsafeRawBufferPointer(rebasing: $0[0..<total])) }
            written += 1
            at += n
        }
    }

    /// Goes back to the first record.
    package func rewind() throws {
        try file.file.seek(to: 0)
        read = 0
    }

    /// Opens the next record into `buffer` (at least ``recordSize`` bytes); 0 at the end.
    /// - Throws: ``VaultError/Code/chunkAuthenticationFailed`` for a record that does not open.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        precondition(buffer.count >= Self.recordSize, "internal error: a spool's reader needs a record's room")
        guard read < written else { return 0 }
        let n = try sealed.withUnsafeMutableBytes { s -> Int in
            guard try file.file.readFully(into: UnsafeMutableRawBufferPointer(rebasing: s[0..<4])) == 4 else {
                throw VaultError(.truncated, "the spooled chunk ends early")
            }
            let n = s[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard n > 0, n <= Self.recordSize else {
                throw VaultError(.headerMalformed, "the spooled chunk is damaged")
            }
            let total = 4 + n + XChaCha20Poly1305.tagSize
            let body = UnsafeMutableRawBufferPointer(rebasing: s[4..<total])
            guard try file.file.readFully(into: body) == total - 4 else {
                throw VaultError(.truncated, "the spooled chunk ends early")
            }
            let nonce = Self.nonce(read)
            let opened = nonce.withUnsafeBytes { nb in
                key.withUnsafeBytes { k in
                    XChaCha20Poly1305.open(
                        UnsafeRawBufferPointer(rebasing: s[4..<total]),
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]),
                        ad: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nb, key: k)
                }
            }
            guard opened else {
                throw VaultError(.chunkAuthenticationFailed, "the spooled chunk was changed on disk")
            }
            return n
        }
        read += 1
        return n
    }
}
