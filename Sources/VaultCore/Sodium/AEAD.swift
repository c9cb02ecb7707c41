internal import CSodium

/// XChaCha20-Poly1305 (IETF), libsodium's `crypto_aead_xchacha20poly1305_ietf_*`.
///
/// Pointer-based so that the chunk path allocates nothing per chunk. Output is ciphertext
/// followed by the 16-byte tag.
enum XChaCha20Poly1305 {
    static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Seals `plaintext` into `output` (exactly `plaintext.count + tagSize` bytes).
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        ad: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) {
        precondition(output.count == plaintext.count + tagSize, "internal error: AEAD output size")
        precondition(nonce.count == nonceSize && key.count == keySize, "internal error: AEAD nonce or key size")
        var written: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_encrypt(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
            ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count), nil,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        )
        precondition(rc == 0 && Int(written) == output.count, "internal error: AEAD encryption failed")
    }

    /// Opens `sealed` into `output` (exactly `sealed.count - tagSize` bytes). Returns false, and
    /// leaves `output` zeroed, when the tag does not verify.
    static func open(
        _ sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        ad: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) -> Bool {
        precondition(
            sealed.count >= tagSize && output.count == sealed.count - tagSize, "internal error: AEAD output size")
        precondition(nonce.count == nonceSize && key.count == keySize, "internal error: AEAD nonce or key size")
        var written: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
            output.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
            sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
            ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        )
        if rc != 0 {
            Sodium.wipe(output)
            return false
        }
        return true
    }

    /// Convenience for small values: seals `plaintext` with `key`, returning ciphertext ‖ tag.
    static func seal(_ plaintext: [UInt8], ad: [UInt8], nonce: [UInt8], key: SecretBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        out.withUnsafeMutableBytes { o in
            plaintext.withUnsafeBytes { p in
                ad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        key.withUnsafeBytes { k in seal(p, into: o, ad: a, nonce: n, key: k) }
                    }
                }
            }
        }
        return out
    }

    /// Convenience for small values: opens into a fresh array, or nil if the tag fails.
    static func open(_ sealed: [UInt8], ad: [UInt8], nonce: [UInt8], key: SecretBytes) -> [UInt8]? {
        guard sealed.count >= tagSize else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - tagSize)
        let ok = out.withUnsafeMutableBytes { o in
            sealed.withUnsafeBytes { s in
                ad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        key.withUnsafeBytes { k in open(s, into: o, ad: a, nonce: n, key: k) }
                    }
                }
            }
        }
        return ok ? out : nil
    }

    /// Opens a sealed key (32 bytes + tag) straight into protected memory.
    static func openKey(_ sealed: [UInt8], ad: [UInt8], nonce: [UInt8], key: SecretBytes) throws -> SecretBytes? {
        guard sealed.count == keySize + tagSize else { return nil }
        var ok = false
        let result = try SecretBytes(count: keySize) { out in
            ok = sealed.withUnsafeBytes { s in
                ad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        key.withUnsafeBytes { k in open(s, into: out, ad: a, nonce: n, key: k) }
                    }
                }
            }
        }
        return ok ? result : nil
    }

    /// Seals a key held in protected memory.
    static func sealKey(_ secret: SecretBytes, ad: [UInt8], nonce: [UInt8], key: SecretBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: secret.count + tagSize)
        out.withUnsafeMutableBytes { o in
            secret.withUnsafeBytes { p in
                ad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        key.withUnsafeBytes { k in seal(p, into: o, ad: a, nonce: n, key: k) }
                    }
                }
            }
        }
        return out
    }
}

/// Subkeys from a 32-byte master key with libsodium's `crypto_kdf_derive_from_key` (BLAKE2b).
package enum SubkeyDerivation {
    /// Derives subkey number `id` under the 8-byte `context`.
    package static func derive(from master: SecretBytes, id: UInt64, context: String) throws -> SecretBytes {
        let ctx = Array(context.utf8)
        precondition(ctx.count == Int(crypto_kdf_CONTEXTBYTES), "internal error: KDF context must be 8 bytes")
        return try SecretBytes(count: 32) { out in
            let rc = master.withUnsafeBytes { m in
                ctx.withUnsafeBytes { c in
                    crypto_kdf_derive_from_key(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, id,
                        c.baseAddress!.assumingMemoryBound(to: CChar.self),
                        m.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            precondition(rc == 0, "internal error: crypto_kdf_derive_from_key failed")
        }
    }
}

/// Keyed BLAKE2b (libsodium's `crypto_generichash` with a key): a MAC, for values stored in the
/// clear that must not be computable without the key.
package enum KeyedHash {
    /// 32-byte BLAKE2b of `message` keyed by `key`.
    package static func digest(_ message: [UInt8], key: SecretBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let rc = key.withUnsafeBytes { k in
            crypto_generichash(
                &out, 32, message, UInt64(message.count), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        precondition(rc == 0, "internal error: crypto_generichash failed")
        return out
    }
}
