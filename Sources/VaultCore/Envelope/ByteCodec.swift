/// Big-endian writing and bounds-checked reading of header fields. Pure: no I/O, no crypto.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func raw<C: Collection>(_ v: C) where C.Element == UInt8 { bytes.append(contentsOf: v) }
}

/// Reads fields in order and fails with ``VaultError/Code/headerMalformed`` (or the code
/// given) when the input runs out.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    private let what: String

    init(_ bytes: [UInt8], what: String, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
        self.what = what
    }

    var remaining: Int { bytes.count - offset }

    mutating func raw(_ n: Int) throws -> [UInt8] {
        guard n >= 0, remaining >= n else {
            throw VaultError(.headerMalformed, "\(what) ends early at byte \(offset) (needs \(n) more)")
        }
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    mutating func u8() throws -> UInt8 { try raw(1)[0] }
    mutating func u16() throws -> UInt16 { try raw(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws -> UInt32 { try raw(4).reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func u64() throws -> UInt64 { try raw(8).reduce(0) { $0 << 8 | UInt64($1) } }
}
