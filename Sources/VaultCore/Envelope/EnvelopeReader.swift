import Crypto

/// Opens one envelope: parses and authenticates the header, then releases the payload's
/// plaintext batch by batch, each only after every chunk in it has authenticated.
///
/// Order of checks, each before any plaintext is released: magic, version, KDF parameters
/// (before Argon2id could allocate anything), the password block against the keyring (wrong
/// password or foreign envelope), the wrapped key, the metadata, the document id, and — when
/// the input's length is known — the exact length the metadata's size implies (truncation and
/// trailing data). The payload's final-chunk flag then catches any cut the length did not.
package final class EnvelopeReader {
    /// The parsed header.
    package let header: EnvelopeHeader
    /// The authenticated metadata.
    package let metadata: DocumentMetadata
    private let stream: StreamReader
    private var hasher: SHA256?

    /// Opens an envelope from `input` with `keyring`.
    /// - Parameters:
    ///   - expectedID: when given, the envelope must hold this document (the store passes the
    ///     id from the object's file name, so swapped files are caught).
    ///   - verifyDigest: also hash the plaintext and compare it with the recorded SHA-256 at the end.
    ///   - threads: how many threads open each batch of chunks (default: one per core).
    ///   - batching: how many chunks each ``next()`` opens and releases.
    ///   - startChunk: read from this chunk on (random access; the input must be able to seek).
    ///     Chunks before it are not read. Not with `verifyDigest`, which needs every byte.
    package init(
        input: any EnvelopeInput, keyring: Keyring, expectedID: DocumentID? = nil, verifyDigest: Bool = false,
        threads: Int = Parallelism.allCores, batching: ChunkBatching = .reading, startChunk: UInt64 = 0,
        readAhead: Bool = true
    ) throws {
        header = try Self.readHeader(input)
        let kek = try keyring.kek(for: header)
        guard
            let documentKey = try XChaCha20Poly1305.openKey(
                header.wrappedKey, ad: header.keyWrapAD,
                nonce: header.wrapNonce, key: kek)
        else {
            throw VaultError(
                .headerAuthenticationFailed, "the wrapped document key failed authentication",
                hint: "the envelope header is damaged or was tampered with")
        }
        let metaKey = try SubkeyDerivation.derive(
            from: documentKey, id: EnvelopeFormat.metadataSubkeyID,
            context: EnvelopeFormat.subkeyContext)
        guard
            let plainMeta = XChaCha20Poly1305.open(
                header.sealedMetadata, ad: header.metadataAD,
                nonce: header.metadataNonce, key: metaKey)
        else {
            throw VaultError(
                .headerAuthenticationFailed, "the envelope header failed authentication",
                hint: "the envelope header is damaged or was tampered with")
        }
        metadata = try DocumentMetadata.decode(plainMeta)
        if let expectedID, expectedID != header.documentID {
            throw VaultError(
                .headerAuthenticationFailed, "the envelope holds document \(header.documentID), not \(expectedID)",
                hint: "object files were swapped or renamed")
        }
        if let total = try input.totalSize() {
            let expected = UInt64(header.encodedSize) + EnvelopeSize.payloadSize(plaintextSize: metadata.size)
            if total < expected {
                throw VaultError(.truncated, "the envelope is cut short: \(total) of \(expected) bytes")
            }
            if total > expected {
                throw VaultError(
                    .trailingData, "\(total - expected) unexpected bytes follow the envelope's final chunk")
            }
        }
        if startChunk > 0 {
            precondition(!verifyDigest, "internal error: a digest needs every chunk")
            let chunks = EnvelopeSize.chunkCount(plaintextSize: metadata.size)
            guard startChunk < chunks else {
                throw VaultError(.usage, "chunk \(startChunk) is past the document's end (it has \(chunks))")
            }
            try input.seek(to: UInt64(header.encodedSize) + startChunk * UInt64(EnvelopeFormat.sealedChunkSize))
        }
        let payloadKey = try SubkeyDerivation.derive(
            from: documentKey, id: EnvelopeFormat.payloadSubkeyID,
            context: EnvelopeFormat.subkeyContext)
        stream = StreamReader(
            cipher: ChunkCipher(payloadKey: payloadKey, threads: threads), batching: batching,
            firstIndex: startChunk, readAhead: readAhead
        ) { buffer in
            try input.read(into: buffer)
        }
        hasher = verifyDigest ? SHA256() : nil
    }

    /// Reads and parses just the header (no keys needed): magic, version, KDF bounds, lengths.
    package static func readHeader(_ input: any EnvelopeInput) throws -> EnvelopeHeader {
        var prefix = [UInt8](repeating: 0, count: EnvelopeFormat.fixedHeaderSize)
        let n = try prefix.withUnsafeMutableBytes { try readFully(input, into: $0) }
        prefix.removeLast(prefix.count - n)
        if n == 0 { throw VaultError(.truncated, "the envelope is empty") }
        if n < EnvelopeFormat.magic.count && !EnvelopeFormat.magic.starts(with: prefix) {
            throw VaultError(.headerMalformed, "not a vault envelope (bad magic bytes)")
        }
        let total = try EnvelopeHeader.headerLength(fromPrefix: prefix)
        var rest = [UInt8](repeating: 0, count: total - n)
        let m = try rest.withUnsafeMutableBytes { try readFully(input, into: $0) }
        guard m == rest.count else {
            throw VaultError(.truncated, "envelope header is cut short: \(n + m) of \(total) bytes")
        }
        return try EnvelopeHeader.parse(prefix + rest)
    }

    private static func readFully(_ input: any EnvelopeInput, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    {
        var total = 0
        while total < buffer.count {
            let k = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if k == 0 { break }
            total += k
        }
        return total
    }

    /// Prefixed to the messages of payload errors (the store sets "document <id>").
    package var context: String?

    /// The next batch of authenticated plaintext (valid until the next call), or nil at the end.
    /// - Throws: a payload error; with `verifyDigest`, ``VaultError/Code/digestMismatch`` at the end.
    package func next() throws -> UnsafeRawBufferPointer? {
        do {
            return try nextBatch()
        } catch {
            let e = VaultError.from(error)
            throw context.map { e.context($0) } ?? e
        }
    }

    private func nextBatch() throws -> UnsafeRawBufferPointer? {
        guard let batch = try stream.next() else {
            if let h = hasher {
                hasher = nil
                guard Array(h.finalize()) == metadata.sha256 else {
                    throw VaultError(.digestMismatch, "the plaintext does not match its recorded SHA-256")
                }
            }
            return nil
        }
        hasher?.update(bufferPointer: batch)
        return batch
    }

    /// Plaintext bytes released so far.
    package var releasedCount: UInt64 { stream.releasedCount }
    /// Chunks opened (and authenticated) so far.
    package var openedChunks: UInt64 { stream.openedChunks }
    /// A job for each chunk of the next batch, run where it is decrypted (``StreamReader/onChunk``).
    package var onChunk: ((Int, UnsafeRawBufferPointer) -> Void)? {
        get { stream.onChunk }
        set { stream.onChunk = newValue }
    }
}
