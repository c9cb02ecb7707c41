/// How many terminal cells text takes: what lines are fitted by (a CJK character takes two,
/// a combining mark none), not how many characters it has.
///
/// Written here rather than taken from `wcwidth(3)`: glibc answers only under a UTF-8 locale,
/// which the static binary and a cron job's `LANG=C` do not have, and no listed package has a
/// width table. The ranges are Unicode's East Asian Wide and Fullwidth blocks and the emoji
/// that terminals draw two cells wide (as tmux, xterm and VTE do); marks and format characters
/// take none.
enum DisplayWidth {
    /// The cells one scalar takes: 0, 1 or 2.
    static func cells(_ scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        if v < 0x300 { return v < 0x20 || (0x7F..<0xA0).contains(v) ? 0 : 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(v) { return 0 }  // Hangul medial vowels and final consonants join the syllable
        return isWide(v) ? 2 : 1
    }

    private static func isWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3,
            0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB,
            0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA,
            0x26FD, 0x2705, 0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757,
            0x2795...0x2797, 0x27B0, 0x27BF, 0x2B1B...0x2B1C, 0x2B50, 0x2B55,
            0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6,
            0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1B000...0x1B2FF, 0x1F004, 0x1F0CF, 0x1F18E,
            0x1F191...0x1F19A, 0x1F200...0x1F2FF, 0x1F300...0x1F320, 0x1F32D...0x1F335, 0x1F337...0x1F37C,
            0x1F37E...0x1F393, 0x1F3A0...0x1F3CA, 0x1F3CF...0x1F3D3, 0x1F3E0...0x1F3F0, 0x1F3F4,
            0x1F3F8...0x1F43E, 0x1F440, 0x1F442...0x1F4FC, 0x1F4FF...0x1F53D, 0x1F54B...0x1F54E,
            0x1F550...0x1F567, 0x1F57A, 0x1F595...0x1F596, 0x1F5A4, 0x1F5FB...0x1F64F, 0x1F680...0x1F6C5,
            0x1F6CC, 0x1F6D0...0x1F6D2, 0x1F6D5...0x1F6D7, 0x1F6DC...0x1F6DF, 0x1F6EB...0x1F6EC,
            0x1F6F4...0x1F6FC, 0x1F7E0...0x1F7EB, 0x1F7F0, 0x1F90C...0x1F93A, 0x1F93C...0x1F945,
            0x1F947...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// The cells `text` takes (ASCII: its length).
    static func cells(_ text: some StringProtocol) -> Int {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        return text.reduce(0) { $0 + cells($1) }
    }

    /// The cells one character takes (a cluster: its scalars' cells, at most 2).
    static func cells(_ character: Character) -> Int {
        min(character.unicodeScalars.reduce(0) { $0 + cells($1) }, 2)
    }

    /// The longest start of `text` that fits in `width` cells: whole characters, and never
    /// part of an escape ``Terminal/printable(_:)`` wrote (`\u202e` is kept whole or left out,
    /// so a shortened name never shows a broken marker).
    static func prefix(_ text: some StringProtocol, cells width: Int) -> Substring {
        let text = Substring(text)
        var used = 0
        var end = text.startIndex
        for unit in units(text) {
            let w = cells(text[unit])
            if used + w > width { break }
            used += w
            end = unit.upperBound
        }
        return text[..<end]
    }

    /// The longest end of `text` that fits in `width` cells (whole characters and escapes).
    static func suffix(_ text: some StringProtocol, cells width: Int) -> Substring {
        let text = Substring(text)
        var used = 0
        var start = text.endIndex
        for unit in units(text).reversed() {
            let w = cells(text[unit])
            if used + w > width { break }
            used += w
            start = unit.lowerBound
        }
        return text[start...]
    }

    /// `text` as what must not be split: characters, and the escapes `printable` writes
    /// (`\n`, `\r`, `\t`, `\xNN`, `\uNNNN`).
    static func units(_ text: Substring) -> [Range<Substring.Index>] {
        var out: [Range<Substring.Index>] = []
        var i = text.startIndex
        while i < text.endIndex {
            var end = text.index(after: i)
            if text[i] == "\\", end < text.endIndex {
                let rest = text[end...]
                if let k = rest.first, "nrt".contains(k) {
                    end = text.index(after: end)
                } else if let k = rest.first, k == "x" || k == "u" {
                    let digits = k == "x" ? 2 : 4
                    let hex = rest.dropFirst().prefix(digits)
                    if hex.count == digits && hex.allSatisfy(\.isHexDigit) { end = hex.endIndex }
                }
            }
            out.append(i..<end)
            i = end
        }
        return out
    }

    /// `text` padded with spaces to `width` cells (on the right, or on the left for numbers).
    static func pad(_ text: String, to width: Int, right: Bool = false) -> String {
        let pad = String(repeating: " ", count: max(0, width - cells(text)))
        return right ? pad + text : text + pad
    }
}
