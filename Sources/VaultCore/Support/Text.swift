/// The few string operations vault needs that the standard library lacks and Foundation has only
/// with ICU linked in (`trimmingCharacters(in:)`, `String(format:)` for hex digits):
/// each is one loop.
extension StringProtocol {
    /// This string without the leading and trailing scalars for which `drop` is true
    /// (Foundation's `trimmingCharacters(in:)`).
    package func trimming(while drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !drop($0) })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Trimmed of spaces and tabs (Foundation's `CharacterSet.whitespaces`).
    package func trimmingSpaces() -> String { trimming(while: \.isSpace) }

    /// Trimmed of spaces, tabs and line breaks (`CharacterSet.whitespacesAndNewlines`).
    package func trimmingSpacesAndNewlines() -> String { trimming(while: \.isSpaceOrNewline) }

    /// Padded with spaces to at least `width` characters, after it or (`leading`) before it
    /// (`%-8s` and `%5d`).
    package func padded(to width: Int, leading: Bool = false) -> String {
        let spaces = String(repeating: " ", count: Swift.max(0, width - count))
        return leading ? spaces + self : self + spaces
    }

    /// Trimmed of `character` at both ends.
    package func trimming(_ character: Unicode.Scalar) -> String { trimming(while: { $0 == character }) }
}

extension Unicode.Scalar {
    /// Foundation's `CharacterSet.whitespaces` (CoreFoundation's set, which a test compares):
    /// general category Zs, U+0009, and U+200B (zero width space, which Unicode no longer counts).
    package var isSpace: Bool {
        self == "\t" || value == 0x200B || properties.generalCategory == .spaceSeparator
    }

    /// Foundation's `CharacterSet.whitespacesAndNewlines`: ``isSpace``, U+000A to U+000D, U+0085,
    /// and the line and paragraph separators (U+2028, U+2029).
    package var isSpaceOrNewline: Bool {
        isSpace || (0x0A...0x0D).contains(value) || value == 0x85 || value == 0x2028 || value == 0x2029
    }
}

extension Hex {
    /// `value` in hexadecimal, at least `width` digits (`String(format: "%02x")` and kin).
    package static func digits<T: BinaryInteger>(_ value: T, width: Int = 2, uppercase: Bool = false) -> String {
        let text = String(value, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

/// A number of seconds in words.
package enum Seconds {
    /// To a tenth, as `%.1f` prints it: the exact value rounded, half to even (0.25 is `0.2`,
    /// and 0.35, a little less than 0.35 in binary, `0.3`).
    package static func tenths(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return String(seconds) }
        let scaled = seconds * 10
        let error = (-scaled).addingProduct(seconds, 10)  // what the product lost, exactly
        var rounded = scaled.rounded(.toNearestOrEven)
        if scaled - scaled.rounded(.down) == 0.5, error != 0 {
            rounded = error > 0 ? scaled.rounded(.up) : scaled.rounded(.down)
        }
        let tenths = Int(rounded)
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// To a whole second, as `%.0f` prints it; beyond 10^15 s (or infinite), as Swift prints it.
    package static func whole(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return String(seconds) }
        return String(Int(seconds.rounded(.toNearestOrEven)))
    }

    /// As `%g` prints the values vault shows (timeouts, waits): whole seconds without a decimal
    /// point (`30`), others as Swift prints them, shortest first (`2.5`, `0.125`; `%g` would cut
    /// a seventh significant digit, which no option of vault's has).
    package static func text(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int(seconds)) }
        return String(seconds)
    }
}

extension UInt8 {
    /// 0-9, A-Z or a-z (C's `isalnum` in the C locale).
    package var isASCIIAlphanumeric: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
