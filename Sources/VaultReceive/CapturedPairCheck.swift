import Crypto
import VaultCore

/// What a receiver checks of one document kept sealed as it arrives, whatever carries it (the
/// captured JSON payload, a captured form, a sealed payload taken without the identity): what
/// can be checked without a key. Its metadata age file parses, with stanzas of the types vault
/// seals to; its data age file's header, once it has ended, has the same stanzas; the pair is
/// the size and SHA-256 the station declared (``CapturedDocument/digest(data:metadata:)``), when
/// it declared them (a sealed payload does not: the pair is then what arrived). That is what the
/// receipt is signed for. Bounded: a metadata file of at most
/// ``CapturedDocument/maxMetadataFileBytes``, and the data file's header, kept until it ends, at
/// most ``maxHeaderBytes``.
struct CapturedPairCheck {
    /// The most bytes of a data file kept until its age header has ended.
    static let maxHeaderBytes = 1 << 20

    /// The document's header as declared (id, pair size and SHA-256), with its metadata file
    /// once taken (``PayloadReader/Header/captured``).
    private(set) var header: PayloadReader.Header
    private let document: Int
    private var metadata: [UInt8] = []
    private var stanzas: [String] = []
    /// The data file's first bytes, until its header has ended (then nil).
    private var headerBytes: [UInt8]? = []
    private var size: UInt64 = 0
    private var digest = SHA256()

    /// The check of document `document` (from 1), declared by `header` (its size and SHA-256
    /// those of the pair).
    init(header: PayloadReader.Header, document: Int) {
        self.header = header
        self.header.sealed = true
        self.document = document
    }

    /// Takes the metadata age file: an age file vault seals, shorter than the pair.
    mutating func metadata(_ file: [UInt8]) throws {
        let what = "document \(document)'s metadata"
        guard file.count <= CapturedDocument.maxMetadataFileBytes else {
            throw VaultError(.headerMalformed, "\(what) is over \(CapturedDocument.maxMetadataFileBytes) bytes")
        }
        do {
            stanzas = try file.withUnsafeBytes {
                try CapturedDocument.headerStanzas($0, complete: true, what: what)!.types
            }
        } catch { throw VaultError(.headerMalformed, VaultError.from(error).message) }
        guard header.size.map({ UInt64(file.count) < $0 }) ?? true else {
            throw VaultError(.digestMismatch, "document \(document): its files are longer than the size it names")
        }
        metadata = file
        header.captured = file
    }

    /// Takes the next bytes of the data file (its header checked once it has ended; every byte
    /// counted against the declared size and hashed).
    mutating func data(_ bytes: UnsafeRawBufferPointer) throws {
        if headerBytes != nil {
            headerBytes! += bytes
            try checkDataHeader(complete: false)
        }
        size += UInt64(bytes.count)
        if let declared = header.size, size + UInt64(metadata.count) > declared {
            throw VaultError(
                .digestMismatch,
                "document \(document): its files are longer than the \(header.size ?? 0) bytes it names")
        }
        digest.update(bufferPointer: bytes)
    }

    /// Checks the pair once its data file has ended.
    /// - Returns: the pair's size and SHA-256 (the declared ones).
    func finish() throws -> (size: UInt64, sha256: [UInt8]) {
        var check = self
        if check.headerBytes != nil { try check.checkDataHeader(complete: true) }
        let sha = CapturedDocument.digest(data: digest, metadata: metadata)
        let total = size + UInt64(metadata.count)
        guard header.size.map({ $0 == total }) ?? true, header.sha256.map({ $0 == sha }) ?? true else {
            throw VaultError(
                .digestMismatch, "document \(document): its files are not the size and SHA-256 its entry names")
        }
        return (total, sha)
    }

    /// The data file's header, once it has ended: an age header with the metadata's stanza types.
    private mutating func checkDataHeader(complete: Bool) throws {
        let what = "document \(document)'s data"
        let parsed: (length: Int, types: [String])?
        do {
            parsed = try headerBytes!.withUnsafeBytes {
                try CapturedDocument.headerStanzas($0, complete: complete, what: what)
            }
        } catch { throw VaultError(.headerMalformed, VaultError.from(error).message) }
        guard let parsed else {
            guard headerBytes!.count <= Self.maxHeaderBytes else {
                throw VaultError(.headerMalformed, "\(what): its age header is over \(Self.maxHeaderBytes) bytes")
            }
            return
        }
        guard parsed.types == stanzas else {
            throw VaultError(.headerMalformed, "\(what) and its metadata are not sealed to the same recipients")
        }
        headerBytes = nil
    }
}
