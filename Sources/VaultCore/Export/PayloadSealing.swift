import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// Sealed delivery: every document of a payload, and what describes it, as an age v1 file to
/// the destination's recipients (docs/EXPORT.md, "Sealed payloads"). Outside the encryption stay
/// only document ids, counts and lengths.
///
/// One sealing serves one production of a batch (an export run, or one upload attempt): each
/// age file's file key, nonce and header are made on first use and kept, so a payload produced
/// again from any offset within it (a tus chunk or an S3 part sent again) is the same bytes.
/// They are never written anywhere: a new attempt after a restart makes new ones and sends the
/// batch from its start.
package final class PayloadSealing: @unchecked Sendable {
    // @unchecked: `keyings` is read and written only with `lock` held; the rest is immutable.
    /// The recipients every file is sealed to.
    package let recipients: [AgeRecipient]
    /// The batch's proof, when the batch goes to a receiver (an upload): a keyed digest of its
    /// Idempotency-Key under the station's vault key, sealed into every document's metadata
    /// with the digest of its data file's header. A resend under the key is answered only when
    /// it carries the same proof, and no one but the station can seal one (docs/SECURITY.md,
    /// "A resend is the station's"). Nil for an export.
    package let batchProof: [UInt8]?
    /// Every header's length (the same for all the files of this sealing).
    package let headerLength: Int
    /// Metadata is padded with spaces to a multiple of this, so its length says little of a name.
    package static let metadataPadding = 256
    /// The value of the JSON payload's `Sealed` key: the format every file is in.
    package static let format = "age-encryption.org/v1"

    /// What one age file of a batch is: a document's data, its metadata, or a form's manifest.
    package enum Slot: Hashable, Sendable {
        case data(DocumentID)
        case metadata(DocumentID)
        case manifest
    }

    /// Where keyings come from when they are made ahead (a capture-only station's add); nil
    /// makes each on first use.
    private let supply: MadeAhead<AgeFileKeying>?
    private let lock = NIOLock()
    private var keyings: [Slot: AgeFileKeying] = [:]
    private var pairs: [DocumentID: Receipt.Document] = [:]

    /// Whether a producer of this sealing notes each document's sealed files as they go out
    /// (``sealedPair(_:)``): what a receiver without the identity keeps, and signs for. Costs a
    /// SHA-256 of the sealed data; on for an upload whose destination signs receipts.
    package var notesPairs = false

    /// Notes document `id`'s sealed pair as it went out (a producer does, with ``notesPairs``).
    func notePair(_ id: DocumentID, size: UInt64, sha256: [UInt8]) {
        lock.withLock { pairs[id] = Receipt.Document(id: id, sha256: sha256, size: size) }
    }

    /// Document `id`'s sealed pair, as a receiver that keeps it sealed sees it: the size and
    /// SHA-256 (``CapturedDocument/digest(data:metadata:)``) of its data and metadata age files,
    /// once a producer of this sealing sent it whole; nil before.
    package func sealedPair(_ id: DocumentID) -> Receipt.Document? { lock.withLock { pairs[id] } }

    /// A sealing to `recipients` (at least one), with the batch's proof when it has one.
    package init(recipients: [AgeRecipient], batchProof: [UInt8]? = nil) {
        precondition(!recipients.isEmpty, "internal error: sealing to no recipient")
        self.recipients = recipients
        supply = nil
        self.batchProof = batchProof
        headerLength = AgeFormat.headerLength(for: recipients)
    }

    /// A sealing to `recipients` whose keyings come from `supply` (made for those recipients,
    /// each by ``newKeying(_:)``), without a batch proof.
    package init(recipients: [AgeRecipient], keyings supply: MadeAhead<AgeFileKeying>) {
        precondition(!recipients.isEmpty, "internal error: sealing to no recipient")
        self.recipients = recipients
        batchProof = nil
        self.supply = supply
        headerLength = AgeFormat.headerLength(for: recipients)
    }

    /// The keying of `slot`, made on first use (outside the lock, so two slots' X25519 work can
    /// run at once; should two threads make one slot's, the first kept is the one used).
    package func keying(_ slot: Slot) -> AgeFileKeying {
        if let k = lock.withLock({ keyings[slot] }) { return k }
        let made = (try? supply?.next()) ?? Self.newKeying(recipients)
        lock.lock()
        defer { lock.unlock() }
        if let k = keyings[slot] { return k }
        let k = made
        keyings[slot] = k
        return k
    }

    /// A new keying for `recipients`. They are checked when parsed; what can fail here is
    /// protected memory for the file key.
    package static func newKeying(_ recipients: [AgeRecipient]) -> AgeFileKeying {
        guard let made = try? AgeFileKeying(recipients: recipients) else {
            preconditionFailure("internal error: no protected memory for an age file key")
        }
        return made
    }

    /// The age file of `slot` holding `plaintext`, sealed whole (metadata and manifests are small).
    package func sealWhole(_ plaintext: [UInt8], slot: Slot) -> [UInt8] {
        let keying = keying(slot)
        guard let sealer = try? AgeFileSealer(keying: keying, plaintextSize: UInt64(plaintext.count), threads: 1) else {
            preconditionFailure("internal error: no protected memory for an age payload key")
        }
        var out = sealer.prefix
        var sealed = [UInt8](repeating: 0, count: AgeFileSealer.maxOutput(for: plaintext.count))
        var n = plaintext.withUnsafeBytes { p in sealed.withUnsafeMutableBytes { sealer.seal(p, into: $0) } }
        n += sealed.withUnsafeMutableBytes { sealer.finish(into: UnsafeMutableRawBufferPointer(rebasing: $0[n...])) }
        out += sealed[..<n]
        return out
    }

    /// The key of the receiver's sealed answer to this batch (``SealedAnswer``): from the file
    /// keys of `documents`' data files, in payload order, and the batch's Idempotency-Key.
    package func receiptKey(documents: [DocumentID], batch: String) -> SymmetricKey {
        SealedAnswer.key(fileKeys: documents.map { keying(.data($0)).fileKey }, batch: batch)
    }

    /// The length of an age file of `size` plaintext bytes under this sealing.
    package func fileLength(_ size: UInt64) -> UInt64 {
        AgeFormat.fileLength(plaintext: size, headerLength: headerLength)
    }

    /// `record`'s metadata as a sealed document carries it: `{"Id":…,"Name":…,"ContentType":…,
    /// "Size":…,"SHA256":…}` (the plain payload's keys, in its order, with `"Tags":[…]` when the
    /// document has tags, then, with a batch proof, `"Proof":…,"DataHeader":…`, the SHA-256 of
    /// its data file's header), then spaces up to a multiple of ``metadataPadding`` bytes.
    package func metadata(_ record: DocumentRecord) -> [UInt8] {
        metadata(record, dataHeader: batchProof == nil ? nil : dataHeaderDigest(record.id))
    }

    private func metadata(_ record: DocumentRecord, dataHeader: [UInt8]?) -> [UInt8] {
        let m = record.metadata
        return Self.padded(
            Self.metadataJSON(
                id: record.id, name: m.name, contentType: m.contentType, size: m.size, sha256: m.sha256, tags: m.tags,
                proof: batchProof.map { ($0, dataHeader ?? []) }))
    }

    /// The SHA-256 of the header of document `id`'s data file (made now if not yet).
    package func dataHeaderDigest(_ id: DocumentID) -> [UInt8] { Array(SHA256.hash(data: keying(.data(id)).header)) }

    /// The metadata's JSON, unpadded: what a receiver rebuilds to check the bytes it opened.
    /// - Parameter proof: the batch's proof and the digest of the document's data file header.
    package static func metadataJSON(
        id: DocumentID, name: String, contentType: String, size: UInt64, sha256: [UInt8], tags: [String] = [],
        proof: (batch: [UInt8], dataHeader: [UInt8])? = nil
    ) -> [UInt8] {
        var out = Array("{\"Id\":\"\(id.hex)\",\"Name\":".utf8) + JSONString.quoted(name)
        out += Array(",\"ContentType\":".utf8) + JSONString.quoted(contentType)
        out += Array(",\"Size\":\(size),\"SHA256\":\"\(Hex.encode(sha256))\"".utf8)
        out += PayloadEntry.tagsMember(tags)
        if let proof {
            out += Array(",\"Proof\":\"\(Hex.encode(proof.batch))\"".utf8)
            out += Array(",\"DataHeader\":\"\(Hex.encode(proof.dataHeader))\"".utf8)
        }
        return out + [0x7D]
    }

    /// `bytes` with spaces up to a multiple of ``metadataPadding`` (JSON allows trailing spaces).
    package static func padded(_ bytes: [UInt8]) -> [UInt8] {
        let target = (bytes.count + metadataPadding - 1) / metadataPadding * metadataPadding
        return bytes + [UInt8](repeating: 0x20, count: max(metadataPadding, target) - bytes.count)
    }

    /// The length of `record`'s sealed metadata file, without sealing anything.
    package func metadataFileLength(_ record: DocumentRecord) -> UInt64 {
        let digestLength = [UInt8](repeating: 0, count: SHA256.byteCount)
        return fileLength(UInt64(metadata(record, dataHeader: batchProof == nil ? nil : digestLength).count))
    }
}

extension PayloadSealing: Equatable {
    /// The same sealing (the same keys): identity, not equal recipients.
    package static func == (a: PayloadSealing, b: PayloadSealing) -> Bool { a === b }
}
