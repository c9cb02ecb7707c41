import ArgumentParser

/// A byte count on the command line: a number of bytes, or a number (decimals allowed) with a
/// unit K, M or G, written K, KB, KiB, k, … — all powers of 1024, as `ls -h` and `du -h` show
/// sizes: `1048576`, `512K`, `1.5M`, `300MB`, `2GiB`.
struct ByteCount: ExpressibleByArgument {
    let value: UInt64

    /// The forms accepted, for messages.
    static let forms = "bytes (1048576) or a number with K, M or G (512K, 1.5M, 300MB, 2GiB; powers of 1024)"

    init?(argument: String) {
        guard let v = Self.parse(argument) else { return nil }
        value = v
    }

    static func parse(_ text: String) -> UInt64? {
        var rest = Substring(text.uppercased()).drop { $0 == " " }
        for unit in ["IB", "B"] where rest.hasSuffix(unit) && rest.count > unit.count {
            rest = rest.dropLast(unit.count)
            break
        }
        var scale: UInt64 = 1
        if let last = rest.last, let s = ["K": UInt64(1) << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40][String(last)]
        {
            scale = s
            rest = rest.dropLast()
        }
        while rest.last == " " { rest = rest.dropLast() }
        guard !rest.isEmpty,
              rest.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              rest.filter({ $0 == "." }).count <= 1,
              rest.first != ".",
              rest.last != "." else { return nil }
        if !rest.contains(".") {
            guard let n = UInt64(rest),
                  n > 0 else { return nil }
            let (v, overflow) = n.multipliedReportingOverflow(by: scale)
            return overflow ? nil : v
        }
        // A fraction only with a unit, and only down to whole bytes: 1.5M is 1572864.
        guard scale > 1,
              let d = Double(rest),
              d > 0,
              d * Double(scale) < 9.2e18 else { return nil }
        let v = (d * Double(scale)).rounded(.up)
        return v >= 1 ? UInt64(v) : nil
    }

    /// The shortest accepted spelling of a count of at least `bytes`: 900, 2K, 2M.
    static func atLeast(_ bytes: UInt64) -> String {
        if bytes <= 1024 { return "\(bytes)" }
        if bytes <= 1 << 20 { return "\((bytes + 1023) >> 10)K" }
        return "\((bytes + (1 << 20) - 1) >> 20)M"
    }

    /// Parses an option's value, with a message that says which forms are accepted.
    static let option: @Sendable (String) throws -> ByteCount = {
        guard let count = ByteCount(argument: $0) else { throw ValidationError("give \(forms)") }
        return count
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
