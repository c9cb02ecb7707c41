/// Big-endian writing and bounds-checked reading of binary fields: envelope headers, the
/// history's frames, sealed state, the keyring, the password-change journal. The one byte codec
/// of the tree. Pure: no I/O, no crypto.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.appendBigEndian(v) }
    mutating func u32(_ v: UInt32) { bytes.appendBigEndian(v) }
    mutating func u64(_ v: UInt64) { bytes.appendBigEndian(v) }
    mutating func raw<C: Collection>(_ v: C) where C.Element == UInt8 { bytes.append(contentsOf: v) }
}

extension Array where Element == UInt8 {
    /// Appends `value` in big-endian byte order.
    package mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

extension FixedWidthInteger {
    /// The integer `bytes` hold in big-endian order (as many as the type has; the caller checked
    /// the count).
    package init<C: Collection>(bigEndianBytes bytes: C) where C.Element == UInt8 {
        self = bytes.reduce(0) { $0 << 8 | Self($1) }
    }
}

/// Reads fields in order and fails when the input runs out: with ``VaultError/Code/headerMalformed``
/// naming `what` and the offset, or with the error given as `damaged`.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    private let end: Int
    private let what: String
    private let damaged: VaultError?

    /// Reads `bytes` from `offset` up to `end` (the whole of it by default).
    init(_ bytes: [UInt8], what: String, offset: Int = 0, end: Int? = nil, damaged: VaultError? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.end = end ?? bytes.count
        self.what = what
        self.damaged = damaged
    }

    var remaining: Int { end - offset }

    mutating func raw(_ n: Int) throws -> [UInt8] {
        guard n >= 0,
              remaining >= n else {
            throw damaged ?? VaultError(.headerMalformed, "\(what) ends early at byte \(offset) (needs \(n) more)")
        }
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    mutating func u8() throws -> UInt8 { try raw(1)[0] }
    mutating func u16() throws -> UInt16 { UInt16(bigEndianBytes: try raw(2)) }
    mutating func u32() throws -> UInt32 { UInt32(bigEndianBytes: try raw(4)) }
    mutating func u64() throws -> UInt64 { UInt64(bigEndianBytes: try raw(8)) }
}
