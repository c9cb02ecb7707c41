import ArgumentParser

/// A byte count on the command line: digits with an optional K, M or G suffix (powers of 1024).
struct ByteCount: ExpressibleByArgument {
    let value: UInt64

    init?(argument: String) {
        var digits = argument.uppercased()
        var scale: UInt64 = 1
        if let last = digits.last, let s = ["K": UInt64(1) << 10, "M": 1 << 20, "G": 1 << 30][String(last)] {
            scale = s
            digits.removeLast()
            if digits.hasSuffix("I") { return nil }
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
              let n = UInt64(digits), n > 0 else { return nil }
        let (v, overflow) = n.multipliedReportingOverflow(by: scale)
        guard !overflow else { return nil }
        value = v
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
