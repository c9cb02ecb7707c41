import Crypto

/// Writes one document as an envelope: reserves the header, streams the payload through a
/// ``StreamWriter`` while hashing the plaintext (SHA-256), then seals the metadata (now that
/// size and digest are known) and writes the header at offset 0.
///
/// The caller writes into a temporary file and renames it into place only after ``finish()``
/// and an fsync, so a half-written envelope is never visible as a document.
package final class EnvelopeWriter {
    /// The new document's id.
    package let documentID: DocumentID
    private let output: any EnvelopeOutput
    private let keyring: () throws -> Keyring
    private let documentKey: SecretBytes
    private var template: DocumentMetadata
    private let random: any RandomSource
    private let hasher = Hasher()
    private let stream: StreamWriter

    /// Starts an envelope.
    /// - Parameters:
    ///   - metadata: name, content type, tags and time; `size` and `sha256` are filled in by ``finish()``.
    package convenience init(
        output: any EnvelopeOutput, keyring: Keyring, documentID: DocumentID, metadata: DocumentMetadata,
        random: any RandomSource = SystemRandom()
    ) throws {
        try self.init(
            output: output, keyringWhenDone: { keyring }, documentID: documentID, metadata: metadata, random: random)
    }

    /// Starts an envelope whose keyring is needed only by ``finish()`` (to seal the header):
    /// the payload is sealed under the document's own random key, so it can be written while
    /// the password's Argon2id run is still going.
    /// - Parameter batchChunks: chunks sealed at a time (16: all cores on one document; fewer for a
    ///   writer among many at once, whose buffers then stay small).
    init(
        output: any EnvelopeOutput, keyringWhenDone keyring: @escaping () throws -> Keyring, documentID: DocumentID,
        metadata: DocumentMetadata, random: any RandomSource = SystemRandom(), batchChunks: Int = 16
    ) throws {
        var template = metadata
        template.size = 0
        template.sha256 = [UInt8](repeating: 0, count: 32)
        try template.validate()
        self.template = template
        self.documentID = documentID
        self.output = output
        self.keyring = keyring
        self.random = random
        documentKey = try SecretBytes.random(count: EnvelopeFormat.keySize, using: random)
        let payloadKey = try SubkeyDerivation.derive(
            from: documentKey, id: EnvelopeFormat.payloadSubkeyID,
            context: EnvelopeFormat.subkeyContext)
        // The metadata encoding has fixed-width size and digest fields, so the header size is known now.
        try output.reserveHeader(EnvelopeFormat.fixedHeaderSize + template.encoded().count + EnvelopeFormat.tagSize)
        stream = StreamWriter(
            cipher: ChunkCipher(payloadKey: payloadKey), batchChunks: batchChunks,
            observer: { [hasher] in hasher.sha.update(bufferPointer: $0) },
            sink: { [output] bytes in try output.append(bytes) })
    }

    /// Plaintext bytes written so far.
    package var plaintextCount: UInt64 { stream.plaintextCount }

    /// Adds plaintext.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        try stream.write(bytes)
    }

    /// Adds everything `source` yields, reading ahead while it hashes and seals (see
    /// ``StreamWriter/consume(_:progress:)``).
    package func consume(_ source: any ByteSource, progress: ((UInt64) -> Void)? = nil) throws {
        try stream.consume(source, progress: progress)
    }

    /// Seals the final chunk and writes the header. Returns the document's metadata.
    package func finish() throws -> DocumentMetadata {
        try stream.finish()
        var meta = template
        meta.size = stream.plaintextCount
        meta.sha256 = Array(hasher.sha.finalize())
        let header = try Self.sealHeader(
            documentKey: documentKey, keyring: try keyring(), documentID: documentID,
            metadata: meta, random: random)
        try output.writeHeader(header.serialized())
        return meta
    }

    /// Builds the header: wraps the document key under the keyring's KEK (authenticating the
    /// header prefix), and seals the metadata under the metadata subkey (authenticating the
    /// whole fixed header).
    static func sealHeader(
        documentKey: SecretBytes, keyring: Keyring, documentID: DocumentID,
        metadata: DocumentMetadata, random: any RandomSource
    ) throws -> EnvelopeHeader {
        let plainMeta = metadata.encoded()
        var header = EnvelopeHeader(
            kdf: keyring.kdf, salt: keyring.salt, keyCheck: keyring.keyCheck, documentID: documentID,
            wrapNonce: random.bytes(EnvelopeFormat.nonceSize),
            wrappedKey: [UInt8](repeating: 0, count: EnvelopeFormat.wrappedKeySize),
            metadataNonce: random.bytes(EnvelopeFormat.nonceSize),
            sealedMetadata: [UInt8](repeating: 0, count: plainMeta.count + EnvelopeFormat.tagSize))
        header.wrappedKey = XChaCha20Poly1305.sealKey(
            documentKey, ad: header.keyWrapAD, nonce: header.wrapNonce, key: keyring.kek)
        let metaKey = try SubkeyDerivation.derive(
            from: documentKey, id: EnvelopeFormat.metadataSubkeyID,
            context: EnvelopeFormat.subkeyContext)
        header.sealedMetadata = XChaCha20Poly1305.seal(
            plainMeta, ad: header.metadataAD, nonce: header.metadataNonce, key: metaKey)
        return header
    }
}

/// The running SHA-256, updated by the stream writer's observer (one batch at a time, in order).
private final class Hasher: @unchecked Sendable {
    // @unchecked: updated on the stream writer's one queue, in order, and read only after the
    // writer has drained that queue.
    var sha = SHA256()
}
