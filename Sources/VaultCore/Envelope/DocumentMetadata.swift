#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the vault knows about a document, stored only encrypted (in its envelope and in the
/// index). A pure value, sealed in a canonical binary form (docs/FORMAT.md).
public struct DocumentMetadata: Equatable, Sendable, Codable {
    /// The document's name (any non-empty UTF-8; not a path).
    public var name: String
    /// MIME type, e.g. `application/pdf`.
    public var contentType: String
    /// Plaintext size in bytes.
    public var size: UInt64
    /// SHA-256 of the plaintext.
    public var sha256: [UInt8]
    /// When the document was added, in milliseconds since 1970 (UTC).
    public var addedAtMillis: Int64
    /// Free-form tags.
    public var tags: [String]

    /// Creates metadata.
    public init(name: String, contentType: String, size: UInt64, sha256: [UInt8], addedAtMillis: Int64, tags: [String])
    {
        self.name = name
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.addedAtMillis = addedAtMillis
        self.tags = tags
    }

    /// When the document was added.
    public var addedAt: Date { Date(timeIntervalSince1970: Double(addedAtMillis) / 1000) }

    static let encodingVersion: UInt8 = 1
    /// Longest name in UTF-8 bytes.
    public static let maxNameBytes = 4096
    /// Longest content type.
    public static let maxContentTypeBytes = 255
    /// Most tags per document, and longest tag in bytes.
    public static let maxTags = 64, maxTagBytes = 255

    /// Throws ``VaultError/Code/usage`` if a field cannot be stored.
    package func validate() throws {
        guard !name.isEmpty else { throw VaultError(.usage, "a document name cannot be empty") }
        guard name.utf8.count <= Self.maxNameBytes else {
            throw VaultError(.usage, "document name is longer than \(Self.maxNameBytes) bytes")
        }
        guard !contentType.isEmpty,
              contentType.utf8.count <= Self.maxContentTypeBytes,
              contentType.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw VaultError(.usage, "content type '\(contentType)' is not a valid MIME type")
        }
        guard tags.count <= Self.maxTags else { throw VaultError(.usage, "at most \(Self.maxTags) tags per document") }
        for t in tags where t.isEmpty || t.utf8.count > Self.maxTagBytes {
            throw VaultError(.usage, "tags must be 1 to \(Self.maxTagBytes) bytes long")
        }
        guard sha256.count == 32 else { preconditionFailure("internal error: SHA-256 must be 32 bytes") }
    }

    /// The canonical encoding, zero-padded to a multiple of ``EnvelopeFormat/metadataBlock``.
    package func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.u8(Self.encodingVersion)
        w.u16(UInt16(name.utf8.count)); w.raw(name.utf8)
        w.u8(UInt8(contentType.utf8.count)); w.raw(contentType.utf8)
        w.u64(size)
        w.raw(sha256)
        w.u64(UInt64(bitPattern: addedAtMillis))
        w.u8(UInt8(tags.count))
        for t in tags { w.u8(UInt8(t.utf8.count)); w.raw(t.utf8) }
        var out = w.bytes
        let block = EnvelopeFormat.metadataBlock
        out.append(contentsOf: repeatElement(0, count: (block - out.count % block) % block))
        return out
    }

    /// Decodes the canonical encoding; rejects anything ``encoded()`` would not produce.
    package static func decode(_ bytes: [UInt8]) throws -> DocumentMetadata {
        var r = ByteReader(bytes, what: "document metadata")
        guard try r.u8() == encodingVersion else { throw VaultError(.headerMalformed, "unknown metadata encoding") }
        let name = try utf8(r.raw(Int(r.u16())), "name")
        let type = try utf8(r.raw(Int(r.u8())), "content type")
        let size = try r.u64()
        let digest = try r.raw(32)
        let added = Int64(bitPattern: try r.u64())
        var tags: [String] = []
        for _ in 0..<Int(try r.u8()) { tags.append(try utf8(r.raw(Int(r.u8())), "tag")) }
        let padding = try r.raw(r.remaining)
        guard padding.count < EnvelopeFormat.metadataBlock,
              bytes.count % EnvelopeFormat.metadataBlock == 0,
              padding.allSatisfy({ $0 == 0 }) else {
            throw VaultError(.headerMalformed, "document metadata has non-canonical padding")
        }
        let meta = DocumentMetadata(
            name: name, contentType: type, size: size, sha256: digest, addedAtMillis: added, tags: tags)
        do { try meta.validate() } catch {
            throw VaultError(.headerMalformed, "document metadata is invalid: \(VaultError.from(error).message)")
        }
        return meta
    }

    private static func utf8(_ b: [UInt8], _ what: String) throws -> String {
        guard let s = String(validating: b, as: UTF8.self) else {
            throw VaultError(.headerMalformed, "document \(what) is not valid UTF-8")
        }
        return s
    }
}
