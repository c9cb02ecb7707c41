/// Bech32 (BIP 173) as age uses it for its keys: the checksum over the lowercase string, one case
/// throughout, and no length limit (a post-quantum recipient is about 1,950 characters). Written
/// by hand: it is 60 lines, and no package on this machine's list has it. Pure.
enum Bech32 {
    private static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let values: [Int8] = {
        var t = [Int8](repeating: -1, count: 128)
        for (i, c) in charset.enumerated() { t[Int(c)] = Int8(i) }
        return t
    }()

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1ff_ffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> i) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    private static func expand(_ hrp: [UInt8]) -> [UInt8] { hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 } }

    /// `hrp` (lowercase) and `data` as a lowercase Bech32 string.
    static func encode(hrp: String, _ data: [UInt8]) -> String {
        let h = Array(hrp.lowercased().utf8)
        var groups: [UInt8] = []
        var acc = 0, bits = 0
        for b in data {
            acc = acc << 8 | Int(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                groups.append(UInt8((acc >> bits) & 31))
            }
            acc &= (1 << bits) - 1
        }
        if bits > 0 { groups.append(UInt8((acc << (5 - bits)) & 31)) }
        let mod = polymod(expand(h) + groups + [0, 0, 0, 0, 0, 0]) ^ 1
        let check = (0..<6).map { UInt8((mod >> (5 * (5 - $0))) & 31) }
        return String(decoding: h + [0x31] + (groups + check).map { charset[Int($0)] }, as: UTF8.self)
    }

    /// The human-readable part (lowercase) and the data of `string`, or nil when it is not valid
    /// Bech32: mixed case, a character outside the set, a bad checksum, or padding bits set.
    static func decode(_ string: String) -> (hrp: String, data: [UInt8])? {
        let bytes = Array(string.utf8)
        guard bytes.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { return nil }
        let lower = bytes.contains { $0 >= 0x61 && $0 <= 0x7A }, upper = bytes.contains { $0 >= 0x41 && $0 <= 0x5A }
        guard !(lower && upper) else { return nil }
        let s = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 32 : $0 }
        guard let sep = s.lastIndex(of: 0x31), sep >= 1, s.count - sep - 1 >= 6 else { return nil }
        let hrp = Array(s[..<sep])
        var groups: [UInt8] = []
        for c in s[(sep + 1)...] {
            guard c < 128, values[Int(c)] >= 0 else { return nil }
            groups.append(UInt8(values[Int(c)]))
        }
        guard polymod(expand(hrp) + groups) == 1 else { return nil }
        var data: [UInt8] = []
        var acc = 0, bits = 0
        for g in groups.dropLast(6) {
            acc = acc << 5 | Int(g)
            bits += 5
            if bits >= 8 {
                bits -= 8
                data.append(UInt8((acc >> bits) & 0xFF))
            }
            acc &= (1 << bits) - 1
        }
        guard bits < 5, acc == 0 else { return nil }
        return (String(decoding: hrp, as: UTF8.self), data)
    }
}
