/// The header of an envelope, as bytes on disk. Pure: parsing and serialising do no crypto
/// and no I/O, so they can be fuzzed and property-tested alone.
///
/// Layout (big-endian; see `docs/FORMAT.md`):
/// magic(8) version(1) kdf(1) ops(4) memKiB(4) salt(16) keyCheck(16) documentID(16)
/// wrapNonce(24) wrappedKey(48) metadataLength(4) metadataNonce(24) sealedMetadata(metadataLength)
///
/// Parsing is strict and non-malleable: every field is fixed-size or length-prefixed, every
/// value is range-checked, so `serialized()` of a parsed header gives back the same bytes.
package struct EnvelopeHeader: Equatable, Sendable {
    /// Argon2id parameters of the key-encryption key.
    package var kdf: KDFParameters
    /// Argon2id salt.
    package var salt: [UInt8]
    /// Check value of the key-encryption key (tells a wrong password from damage).
    package var keyCheck: [UInt8]
    /// The document's id; the store checks it against the object's file name.
    package var documentID: DocumentID
    /// Nonce of the key wrap.
    package var wrapNonce: [UInt8]
    /// The document key sealed under the key-encryption key.
    package var wrappedKey: [UInt8]
    /// Nonce of the sealed metadata.
    package var metadataNonce: [UInt8]
    /// The metadata sealed under the metadata subkey; its tag authenticates the whole header.
    package var sealedMetadata: [UInt8]

    /// Creates a header from its fields.
    package init(
        kdf: KDFParameters, salt: [UInt8], keyCheck: [UInt8], documentID: DocumentID,
        wrapNonce: [UInt8], wrappedKey: [UInt8], metadataNonce: [UInt8], sealedMetadata: [UInt8]
    ) {
        self.kdf = kdf
        self.salt = salt
        self.keyCheck = keyCheck
        self.documentID = documentID
        self.wrapNonce = wrapNonce
        self.wrappedKey = wrappedKey
        self.metadataNonce = metadataNonce
        self.sealedMetadata = sealedMetadata
    }

    /// Total header length in bytes; the payload starts here.
    package var encodedSize: Int { EnvelopeFormat.fixedHeaderSize + sealedMetadata.count }

    /// The header bytes.
    package func serialized() -> [UInt8] {
        precondition(
            salt.count == EnvelopeFormat.saltSize && keyCheck.count == EnvelopeFormat.keyCheckSize
                && wrapNonce.count == EnvelopeFormat.nonceSize && wrappedKey.count == EnvelopeFormat.wrappedKeySize
                && metadataNonce.count == EnvelopeFormat.nonceSize,
            "internal error: header field of the wrong size")
        var w = ByteWriter()
        w.raw(EnvelopeFormat.magic)
        w.u8(EnvelopeFormat.version)
        w.u8(EnvelopeFormat.kdfArgon2id13)
        w.u32(kdf.opsLimit)
        w.u32(kdf.memLimitKiB)
        w.raw(salt)
        w.raw(keyCheck)
        w.raw(documentID.bytes)
        w.raw(wrapNonce)
        w.raw(wrappedKey)
        w.u32(UInt32(sealedMetadata.count))
        w.raw(metadataNonce)
        w.raw(sealedMetadata)
        return w.bytes
    }

    /// The bytes the key wrap authenticates: magic through document id.
    var keyWrapAD: [UInt8] { Array(serialized().prefix(EnvelopeFormat.keyWrapADSize)) }

    /// The bytes the metadata seal authenticates: the whole fixed header.
    var metadataAD: [UInt8] { Array(serialized().prefix(EnvelopeFormat.fixedHeaderSize)) }

    /// Parses the fixed part and returns the total header length, so a reader knows how many
    /// more bytes to read. Checks magic, version, KDF id and parameters, and the metadata length
    /// bounds, before anything is allocated.
    /// - Parameter prefix: at least ``EnvelopeFormat/fixedHeaderSize`` bytes.
    package static func headerLength(fromPrefix prefix: [UInt8]) throws -> Int {
        let fixed = EnvelopeFormat.fixedHeaderSize
        if prefix.count >= EnvelopeFormat.magic.count, !prefix.starts(with: EnvelopeFormat.magic) {
            throw VaultError(.headerMalformed, "not a vault envelope (bad magic bytes)")
        }
        guard prefix.count >= fixed else {
            throw VaultError(.truncated, "envelope header is cut short: \(prefix.count) of at least \(fixed) bytes")
        }
        var r = ByteReader(prefix, what: "envelope header", offset: EnvelopeFormat.versionOffset)
        let version = try r.u8()
        guard version == EnvelopeFormat.version else {
            throw VaultError(
                .unsupportedVersion,
                """
                    envelope format version \(version) is not supported (this build reads version \
                    \(EnvelopeFormat.version))
                    """,
                hint: "a newer vault may have written it")
        }
        let alg = try r.u8()
        guard alg == EnvelopeFormat.kdfArgon2id13 else {
            throw VaultError(.headerMalformed, "unknown password-hashing algorithm id \(alg)")
        }
        try KDFParameters(opsLimit: try r.u32(), memLimitKiB: try r.u32()).validate()
        r = ByteReader(prefix, what: "envelope header", offset: EnvelopeFormat.metadataLengthOffset)
        let m = Int(try r.u32())
        guard m >= EnvelopeFormat.minSealedMetadataSize,
              m <= EnvelopeFormat.maxSealedMetadataSize,
              (m - EnvelopeFormat.tagSize) % EnvelopeFormat.metadataBlock == 0 else {
            throw VaultError(.headerMalformed, "metadata length \(m) is out of range")
        }
        return fixed + m
    }

    /// Parses a complete header from the start of `bytes`; extra bytes after it are ignored
    /// (they are the payload).
    package static func parse(_ bytes: [UInt8]) throws -> EnvelopeHeader {
        let total = try headerLength(fromPrefix: bytes)
        guard bytes.count >= total else {
            throw VaultError(.truncated, "envelope header is cut short: \(bytes.count) of \(total) bytes")
        }
        var r = ByteReader(bytes, what: "envelope header", offset: EnvelopeFormat.opsLimitOffset)
        let kdf = KDFParameters(opsLimit: try r.u32(), memLimitKiB: try r.u32())
        let salt = try r.raw(EnvelopeFormat.saltSize)
        let check = try r.raw(EnvelopeFormat.keyCheckSize)
        let id = DocumentID(bytes: try r.raw(EnvelopeFormat.documentIDSize))
        let wrapNonce = try r.raw(EnvelopeFormat.nonceSize)
        let wrapped = try r.raw(EnvelopeFormat.wrappedKeySize)
        let m = Int(try r.u32())
        let metaNonce = try r.raw(EnvelopeFormat.nonceSize)
        let sealed = try r.raw(m)
        return EnvelopeHeader(
            kdf: kdf, salt: salt, keyCheck: check, documentID: id, wrapNonce: wrapNonce,
            wrappedKey: wrapped, metadataNonce: metaNonce, sealedMetadata: sealed)
    }
}
