/// The sizes and offsets of envelope format v1, each named once. `docs/FORMAT.md` is the
/// specification; `EnvelopeFormatTests` pins every constant to it.
package enum EnvelopeFormat {
    /// The 8 magic bytes that open every envelope: ASCII `VAULTENV`.
    package static let magic: [UInt8] = Array("VAULTENV".utf8)
    /// The format version this build writes and reads.
    package static let version: UInt8 = 1
    /// KDF algorithm id for Argon2id v1.3.
    package static let kdfArgon2id13: UInt8 = 1

    /// Bytes of Argon2id salt.
    package static let saltSize = 16
    /// Bytes of key check value.
    package static let keyCheckSize = 16
    /// Bytes of document id.
    package static let documentIDSize = 16
    /// Bytes of an XChaCha20-Poly1305 nonce.
    package static let nonceSize = 24
    /// Bytes of a Poly1305 tag.
    package static let tagSize = 16
    /// Bytes of a document key.
    package static let keySize = 32
    /// Bytes of a wrapped document key (key + tag).
    package static let wrappedKeySize = keySize + tagSize

    /// Offsets of the fixed header fields.
    package static let versionOffset = 8
    package static let kdfAlgorithmOffset = 9
    package static let opsLimitOffset = 10
    package static let memLimitOffset = 14
    package static let saltOffset = 18
    package static let keyCheckOffset = 34
    package static let documentIDOffset = 50
    package static let wrapNonceOffset = 66
    package static let wrappedKeyOffset = 90
    package static let metadataLengthOffset = 138
    package static let metadataNonceOffset = 142
    /// Size of the fixed part of the header; the sealed metadata follows it.
    package static let fixedHeaderSize = 166

    /// The wrapped key is authenticated together with header bytes `0..<wrapNonceOffset`.
    package static let keyWrapADSize = wrapNonceOffset
    /// Smallest sealed metadata: one padding block plus the tag.
    package static let minSealedMetadataSize = metadataBlock + tagSize
    /// Largest sealed metadata a reader accepts (1 MiB), so a hostile length cannot make us allocate more.
    package static let maxSealedMetadataSize = 1 << 20
    /// Metadata plaintext is zero-padded to a multiple of this, so names leak only their length class.
    package static let metadataBlock = 256

    /// Plaintext bytes per payload chunk (64 KiB).
    package static let chunkSize = 65536
    /// Bytes per sealed payload chunk (chunk + tag).
    package static let sealedChunkSize = chunkSize + tagSize

    /// `crypto_kdf` context for the subkeys of a document key.
    static let subkeyContext = "vaultenv"
    /// Subkey id of the metadata key.
    static let metadataSubkeyID: UInt64 = 1
    /// Subkey id of the payload key.
    static let payloadSubkeyID: UInt64 = 2
}
