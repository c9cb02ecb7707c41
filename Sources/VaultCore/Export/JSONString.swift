/// RFC 8259 string encoding, canonical: `"` and `\` are escaped, control characters
/// (U+0000–U+001F) use the short escapes `\b \f \n \r \t` where they exist and `\u00XX`
/// otherwise, and every other character — including non-ASCII, DEL and `/` — is written as its
/// UTF-8 bytes. Hand-written because `JSONEncoder` escapes `/` by default and has no streaming
/// or exact-length API, and the export payload needs both.
package enum JSONString {
    private static let hex = Array("0123456789abcdef".utf8)

    /// The quoted, escaped UTF-8 bytes of `s`.
    package static func quoted(_ s: String) -> [UInt8] {
        var out: [UInt8] = [0x22]
        out.reserveCapacity(s.utf8.count + 2)
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x08: out += [0x5C, 0x62]
            case 0x0C: out += [0x5C, 0x66]
            case 0x0A: out += [0x5C, 0x6E]
            case 0x0D: out += [0x5C, 0x72]
            case 0x09: out += [0x5C, 0x74]
            case 0..<0x20: out += [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(0x22)
        return out
    }

    /// The quoted form as a `String`.
    package static func quote(_ s: String) -> String { String(decoding: quoted(s), as: UTF8.self) }
}
