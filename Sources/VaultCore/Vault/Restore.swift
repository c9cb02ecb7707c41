#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An envelope's authenticated plaintext as a ``ByteSource``: each batch is released only after
/// its chunks verified, and the end only after the SHA-256 matched the sealed metadata.
final class EnvelopePlaintext: ByteSource {
    private let reader: EnvelopeReader
    /// The reader's current batch: valid until its next `next()`, which comes only once it is used up.
    private var batch = UnsafeRawBufferPointer(start: nil, count: 0)
    private var at = 0

    init(_ reader: EnvelopeReader) { self.reader = reader }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while at == batch.count {
            guard let next = try reader.next() else { return 0 }
            (batch, at) = (next, 0)
        }
        let n = min(buffer.count, batch.count - at)
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: batch[at..<at + n]))
        at += n
        return n
    }
}

extension Vault {
    /// Takes an envelope of this vault back in as a document sealed under the current key epoch:
    /// one from a backup, or fetched from a store pushed before a password change. Envelopes of
    /// every epoch the keyring knows open (the current password opens them all); every chunk
    /// and the SHA-256 are checked before the new document is committed, with the name, content
    /// type and tags of the original and a new id. Runs in `session`.
    /// - Throws: ``VaultError/Code/headerAuthenticationFailed`` for an envelope of another vault,
    ///   the damage codes for a damaged one, ``VaultError/Code/duplicate`` when the contents are
    ///   already in the vault (unless `allowDuplicate`).
    package func restore(
        envelopeAt path: String, into session: AddSession, allowDuplicate: Bool = false
    ) throws -> DocumentRecord {
        let file = try OpenFile.openForReading(path)
        defer { file.close() }
        let reader: EnvelopeReader
        do {
            reader = try EnvelopeReader(
                input: file, keyring: keyring.acceptingEarlierEpochs(), verifyDigest: true, threads: 1)
        } catch let e as VaultError where e.code == .wrongPassword {
            throw VaultError(
                .headerAuthenticationFailed,
                "it is sealed under a password this vault never had (another vault's envelope?)")
        }
        let m = reader.metadata
        return try session.add(
            from: EnvelopePlaintext(reader), name: m.name, contentType: m.contentType, tags: m.tags,
            allowDuplicate: allowDuplicate)
    }
}
