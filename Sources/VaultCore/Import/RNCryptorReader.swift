import Crypto
import CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads an RNCryptor v3 message from a ``ByteSource`` in constant memory and yields its
/// plaintext as a ``ByteSource`` — what ``Vault/add(from:name:contentType:tags:allowDuplicate:now:progress:)``
/// encrypts into a new envelope.
///
/// The ciphertext is read once: the HMAC-SHA256 over header and ciphertext is computed as it
/// goes and AES-256-CBC decrypted in 1 MiB steps, holding back the last 48 bytes (the HMAC
/// trailer and the final block, which carries the padding). RNCryptor puts its only integrity
/// check at the end, so plaintext of the earlier blocks is released before it is authenticated:
/// a consumer must treat everything it received as unverified until ``read(into:)`` returns 0.
/// Only then have the HMAC (compared in constant time) and the PKCS#7 padding been checked.
/// The vault does exactly that: it writes the plaintext into a sealed temporary envelope and
/// commits the document only when this reader has ended cleanly. Errors are sticky.
///
/// Failures: ``VaultError/Code/hmacMismatch`` (wrong password or key, or any change to the
/// file), ``VaultError/Code/badPadding``, ``VaultError/Code/unsupportedVersion`` (with the
/// version byte), ``VaultError/Code/headerMalformed`` (an unknown options byte),
/// ``VaultError/Code/truncated``, and ``VaultError/Code/usage`` for a key-based message read
/// with a password or the other way round.
package final class RNCryptorReader: ByteSource {
    /// The message's header.
    package let header: RNCryptorHeader
    private let input: any ByteSource
    private let key: SymmetricKey
    private var hmac: HMAC<SHA256>
    private var iv: [UInt8]
    private var pending: [UInt8] = []  // read, not yet decrypted (the tail may be the HMAC)
    private var plain: [UInt8] = []  // decrypted, not yet handed out
    private var plainAt = 0
    private enum State { case reading, ending, done, failed(VaultError) }
    private var state = State.reading
    /// Ciphertext bytes read from the input so far (header included), for progress.
    package private(set) var consumed: UInt64 = 0

    /// Bytes read from the input per step.
    static let step = 1 << 20
    /// What is held back until the input ends: the HMAC and the final (padded) block.
    static let holdBack = RNCryptorFormat.hmacSize + RNCryptorFormat.blockSize

    /// Reads and parses the header from `input` and derives (or looks up) the keys.
    package init(input: any ByteSource, keys: RNCryptorKeys) throws {
        self.input = input
        var first = [UInt8](repeating: 0, count: 2)
        let n = try first.withUnsafeMutableBytes { try input.readFully(into: $0) }
        guard n == 2 else {
            throw VaultError(.truncated, n == 0 ? "the file is empty" : "the file ends inside its RNCryptor header")
        }
        var bytes =
            first + [UInt8](repeating: 0, count: try RNCryptorHeader.length(version: first[0], options: first[1]) - 2)
        let m = try bytes.withUnsafeMutableBytes {
            try input.readFully(into: UnsafeMutableRawBufferPointer(rebasing: $0[2...]))
        }
        guard m == bytes.count - 2 else { throw VaultError(.truncated, "the file ends inside its RNCryptor header") }
        header = try RNCryptorHeader.parse(bytes)
        consumed = UInt64(bytes.count)
        let (encryption, mac) = try keys.keys(for: header)
        key = encryption
        hmac = HMAC<SHA256>(key: mac)
        hmac.update(data: bytes)
        iv = header.iv
    }

    deinit { wipe(&plain) }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while plainAt == plain.count {
            switch state {
            case .done: return 0
            case .failed(let e): throw e
            case .reading, .ending:
                do { try step() } catch {
                    let e = VaultError.from(error)
                    state = .failed(e)
                    throw e
                }
            }
        }
        let n = min(buffer.count, plain.count - plainAt)
        plain.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[plainAt..<plainAt + n])) }
        plainAt += n
        return n
    }

    /// Reads more and decrypts what is certainly not the trailer; at the end, checks the HMAC and
    /// the padding and releases the final block.
    private func step() throws {
        wipe(&plain)
        plainAt = 0
        if case .reading = state {
            let before = pending.count
            pending += [UInt8](repeating: 0, count: Self.step)
            let n = try pending.withUnsafeMutableBytes {
                try input.readFully(into: UnsafeMutableRawBufferPointer(rebasing: $0[before...]))
            }
            pending.removeLast(Self.step - n)
            consumed += UInt64(n)
            if n < Self.step { state = .ending }
        }
        if case .reading = state {
            let whole = (pending.count - Self.holdBack) / RNCryptorFormat.blockSize * RNCryptorFormat.blockSize
            guard whole > 0 else { return }
            plain = try decrypt(pending[..<whole])
            pending.removeFirst(whole)
            return
        }
        // The input has ended: the last 32 bytes are the HMAC.
        guard pending.count >= Self.holdBack else {
            throw VaultError(.truncated, "the file is cut short: no room for a ciphertext block and the HMAC")
        }
        let ciphertext = pending[..<(pending.count - RNCryptorFormat.hmacSize)]
        let tag = pending[(pending.count - RNCryptorFormat.hmacSize)...]
        guard ciphertext.count % RNCryptorFormat.blockSize == 0 else {
            throw VaultError(.truncated, "the file is cut short: its ciphertext is not whole AES blocks")
        }
        hmac.update(data: ciphertext)
        // HashedAuthenticationCode == compares in constant time.
        guard hmac.finalize() == tag else {
            throw VaultError(
                .hmacMismatch, "the HMAC does not match: a wrong RNCryptor password or key, or the file was changed")
        }
        var last = try AES._CBC.decrypt(ciphertext, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true).map {
            $0
        }
        let pad = Int(last.last ?? 0)
        guard (1...RNCryptorFormat.blockSize).contains(pad),
              last.suffix(pad).allSatisfy({ $0 == UInt8(pad) }) else {
            wipe(&last)
            throw VaultError(
                .badPadding, "the PKCS#7 padding is invalid (the HMAC matched: the file was made by a faulty encryptor)"
            )
        }
        last.removeLast(pad)
        plain = last
        pending = []
        state = .done
    }

    /// Feeds `ciphertext` (whole blocks) to the HMAC and decrypts it, chaining the IV.
    private func decrypt(_ ciphertext: ArraySlice<UInt8>) throws -> [UInt8] {
        hmac.update(data: ciphertext)
        let out = try AES._CBC.decrypt(ciphertext, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true)
        iv = Array(ciphertext.suffix(RNCryptorFormat.blockSize))
        return Array(out)
    }

    private func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { Sodium.wipe($0) }
        bytes = []
    }
}
