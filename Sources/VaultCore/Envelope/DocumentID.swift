/// A document's random 16-byte id, written as 32 lower-case hex digits.
public struct DocumentID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The 16 id bytes.
    public let bytes: [UInt8]

    /// Wraps 16 bytes.
    public init(bytes: [UInt8]) {
        precondition(bytes.count == EnvelopeFormat.documentIDSize, "internal error: document id must be 16 bytes")
        self.bytes = bytes
    }

    /// A fresh random id.
    package static func random(using random: any RandomSource) -> DocumentID {
        DocumentID(bytes: random.bytes(EnvelopeFormat.documentIDSize))
    }

    /// Parses 32 hex digits (either case); nil otherwise.
    public init?(hex: String) {
        guard let b = Hex.decode(hex),
              b.count == EnvelopeFormat.documentIDSize else { return nil }
        self.bytes = b
    }

    /// The 32-digit lower-case hex form.
    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    public static func < (a: DocumentID, b: DocumentID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        guard let id = DocumentID(hex: s) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "bad document id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }
}

/// Lower-case hex encoding of public values (ids, digests).
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex.
    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case); nil on odd length or a non-hex character.
    package static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = nibble(u[i]),
                  let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
