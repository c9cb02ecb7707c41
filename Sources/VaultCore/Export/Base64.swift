import CBase64
import Dispatch

/// Standard base64 (RFC 4648 alphabet, `=` padding, no line breaks) for the export payload.
///
/// The encoder is ours (`Sources/CBase64`, ~2 GB/s per core here) because the library
/// encoders measured ~1 GB/s and libsodium's `sodium_bin2base64` 0.18 GB/s; see that file.
package enum Base64 {
    /// Encoded length of `count` bytes: 4·⌈count/3⌉.
    package static func encodedLength(_ count: UInt64) -> UInt64 { (count + 2) / 3 * 4 }

    /// `bytes` encoded, for small values (a sealed document's metadata).
    package static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(encodedLength(UInt64(bytes.count))))
        bytes.withUnsafeBytes { i in out.withUnsafeMutableBytes { _ = encode(i, into: $0, threads: 1) } }
        return out
    }

    /// Encodes `input` into `output` (at least ``encodedLength(_:)`` bytes); returns the bytes written.
    /// Large inputs are split at multiples of 3 bytes and encoded on `threads` threads (default:
    /// one per core).
    @discardableResult
    package static func encode(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        threads: Int = Parallelism.allCores
    ) -> Int {
        let n = input.count
        precondition(UInt64(output.count) >= encodedLength(UInt64(n)), "internal error: base64 output too small")
        guard n > 0 else { return 0 }
        let whole = n / 3 * 3
        let shares = n >= 256 << 10 ? max(1, threads) : 1
        if shares > 1 && whole > 0 {
            let groups = whole / 3
            let i = UncheckedSendable((input, output))
            DispatchQueue.concurrentPerform(iterations: shares) { s in
                let from = s * groups / shares * 3, to = (s + 1) * groups / shares * 3
                let (inp, out) = i.value
                vault_base64_encode(
                    inp.baseAddress!.assumingMemoryBound(to: UInt8.self) + from, to - from,
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self) + from / 3 * 4)
            }
            if whole < n {
                vault_base64_encode(
                    input.baseAddress!.assumingMemoryBound(to: UInt8.self) + whole, n - whole,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self) + whole / 3 * 4)
            }
            return Int(encodedLength(UInt64(n)))
        }
        return vault_base64_encode(
            input.baseAddress!.assumingMemoryBound(to: UInt8.self), n,
            output.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
}

/// Base64 of a stream that arrives in pieces of any size: carries 0–2 bytes between calls so
/// the output equals a one-shot encoding of the concatenation.
package struct Base64StreamEncoder {
    private var carry: (UInt8, UInt8) = (0, 0)
    private var carried = 0
    private let threads: Int

    /// A fresh encoder that splits large pieces over `threads` threads (default: one per core).
    package init(threads: Int = Parallelism.allCores) { self.threads = threads }

    /// Most bytes ``encode(_:into:)`` can write for `count` more input bytes.
    package static func maxOutput(for count: Int) -> Int { (count + 2) / 3 * 4 + 4 }

    /// Encodes `input`, keeping any last 1–2 bytes that do not complete a group for the next call.
    package mutating func encode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        var rest = input
        var written = 0
        if carried > 0 {
            let need = 3 - carried
            if rest.count < need {
                for b in rest { if carried == 0 { carry.0 = b } else { carry.1 = b }; carried += 1 }
                return 0
            }
            let group: [UInt8] = carried == 1 ? [carry.0, rest[0], rest[1]] : [carry.0, carry.1, rest[0]]
            written += group.withUnsafeBytes { Base64.encode($0, into: output) }
            rest = UnsafeRawBufferPointer(rebasing: rest[need...])
            carried = 0
        }
        let whole = rest.count / 3 * 3
        written += Base64.encode(
            UnsafeRawBufferPointer(rebasing: rest[0..<whole]),
            into: UnsafeMutableRawBufferPointer(rebasing: output[written...]), threads: threads)
        for b in rest[whole...] { if carried == 0 { carry.0 = b } else { carry.1 = b }; carried += 1 }
        return written
    }

    /// Writes the padded final group, if any bytes are carried; returns the bytes written (0 or 4).
    package mutating func finish(into output: UnsafeMutableRawBufferPointer) -> Int {
        defer { carried = 0 }
        switch carried {
        case 1: return [carry.0].withUnsafeBytes { Base64.encode($0, into: output) }
        case 2: return [carry.0, carry.1].withUnsafeBytes { Base64.encode($0, into: output) }
        default: return 0
        }
    }
}
