import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CSodium

/// Why an age file does not open, in the categories of the age test vectors (C2SP CCTV): the
/// header is malformed, no identity matches, its MAC is wrong, or the payload fails. Each has
/// a message that names the fault and never a key.
package struct AgeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The category.
    package enum Kind: String, Sendable {
        case header, noMatch = "no match", hmac = "HMAC", payload
        /// A file that is not the one its context names (``AgeOpener/init(identities:header:)``).
        case otherFile = "other file"
    }
    package let kind: Kind
    package let reason: String
    init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }
    package var description: String { reason }

    /// As the vault's error: a wrong identity is `wrong-password`'s kin (no key opens it), the
    /// rest is damage.
    package func vaultError(_ what: String) -> VaultError {
        switch kind {
        case .noMatch:
            VaultError(.wrongPassword, "\(what): no identity given opens it (\(reason))")
        case .header: VaultError(.headerMalformed, "\(what): not a valid age file: \(reason)")
        case .hmac: VaultError(.headerAuthenticationFailed, "\(what): its age header fails authentication")
        case .payload: VaultError(.chunkAuthenticationFailed, "\(what): \(reason)")
        case .otherFile: VaultError(.digestMismatch, "\(what): \(reason)")
        }
    }
}

/// One recipient stanza: `-> TYPE ARGS…`, then its body.
struct AgeStanza: Sendable, Equatable {
    /// The first argument (the stanza's type) and the rest.
    var type: String
    var args: [String]
    var body: [UInt8]
}

/// The textual age header: the version line, stanzas, and the MAC line (c2sp.org/age). Parsing
/// is strict to the grammar (canonical unpadded base64, 64-column body lines ending in a short
/// one, LF only), so the bytes it accepts are the ones the MAC covers. Pure.
struct AgeHeader: Sendable {
    static let versionLine = Array("age-encryption.org/v1\n".utf8)
    /// The most header bytes read before giving up: room for hundreds of post-quantum stanzas.
    static let maxLength = 1 << 20
    /// The most stanzas a header may have: each one an identity tries costs a key agreement, and
    /// a file for a few hundred people is already unusual (vault refuses to seal to more).
    static let maxStanzas = 512

    var stanzas: [AgeStanza]
    var mac: [UInt8]
    /// The header's bytes from its start through `---` (what the MAC covers).
    var macInput: [UInt8]
    /// The header's whole length, through the MAC line's LF.
    var length: Int

    /// Parses a header at the start of `bytes`. Returns nil when `bytes` ends before the header
    /// does and `complete` is false (the caller reads more and tries again, with an
    /// ``AgeHeaderParser`` to keep what was parsed).
    static func parse(_ bytes: UnsafeRawBufferPointer, complete: Bool) throws(AgeFailure) -> AgeHeader? {
        var parser = AgeHeaderParser()
        return try parser.parse(bytes, complete: complete)
    }

    /// The header bytes for `stanzas` through `---` (what the MAC covers).
    static func encodeWithoutMAC(_ stanzas: [AgeStanza]) -> [UInt8] {
        var out = versionLine
        for s in stanzas {
            out += Array(("-> " + ([s.type] + s.args).joined(separator: " ") + "\n").utf8)
            let text = AgeBase64.encode(s.body)
            var i = 0
            repeat {
                let n = min(64, text.count - i)
                out += text[i..<i + n] + [0x0A]
                i += n
                if n < 64 { break }
            } while true
        }
        return out + Array("---".utf8)
    }

    /// The header's MAC: HMAC-SHA-256 keyed by HKDF(file key, info "header") over `macInput`.
    static func mac(fileKey: SecretBytes, over macInput: [UInt8]) -> [UInt8] {
        let key = fileKey.withUnsafeBytes {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: $0), info: Array("header".utf8), outputByteCount: 32)
        }
        return Array(HMAC<SHA256>.authenticationCode(for: macInput, using: key))
    }

    /// True when `header`'s MAC is the one `fileKey` gives (compared in constant time).
    static func macMatches(_ header: AgeHeader, fileKey: SecretBytes) -> Bool {
        let expected = mac(fileKey: fileKey, over: header.macInput)
        guard expected.count == header.mac.count else { return false }
        return expected.withUnsafeBytes { e in header.mac.withUnsafeBytes { Sodium.constantTimeEqual(e, $0) } }
    }

    /// A whole header for `stanzas`, MAC'd with `fileKey`.
    static func encode(_ stanzas: [AgeStanza], fileKey: SecretBytes) -> [UInt8] {
        let head = encodeWithoutMAC(stanzas)
        return head + [0x20] + AgeBase64.encode(mac(fileKey: fileKey, over: head)) + [0x0A]
    }
}

/// age's base64: standard alphabet, no padding, canonical (unused bits zero) on decode.
enum AgeBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [Int8] = {
        var t = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = Int8(i) }
        return t
    }()

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            out += [alphabet[v >> 18], alphabet[v >> 12 & 63], alphabet[v >> 6 & 63], alphabet[v & 63]]
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let v = Int(bytes[i]) << 16
            out += [alphabet[v >> 18], alphabet[v >> 12 & 63]]
        case 2:
            let v = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8
            out += [alphabet[v >> 18], alphabet[v >> 12 & 63], alphabet[v >> 6 & 63]]
        default: break
        }
        return out
    }

    static func decode<C: Collection<UInt8>>(_ text: C) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var acc = 0, bits = 0
        for c in text {
            let v = values[Int(c)]
            guard v >= 0 else { return nil }
            acc = acc << 6 | Int(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(acc >> bits & 0xFF))
            }
            acc &= (1 << bits) - 1
        }
        return acc == 0 ? out : nil  // canonical: the unused bits are zero
    }
}

/// Parses an age header as its bytes arrive, each line once: the bytes given to each call are the
/// header's from its start (the same as before, and more), and parsing resumes where the last
/// call stopped. So a header fed a byte at a time costs what it costs whole (a parser that began
/// again at every piece was quadratic: a hostile client sending a long header slowly could make
/// a receiver spin).
struct AgeHeaderParser {
    /// Bytes of whole lines parsed.
    private var at = 0
    /// Where the search for the next LF goes on.
    private var scanned = 0
    /// Bytes searched for line ends so far: each at most once, however the header is cut.
    private(set) var examined = 0
    private var version = false
    private var stanzas: [AgeStanza] = []
    /// The stanza whose body lines are being read: its arguments and body so far.
    private var open: (args: [String], body: [UInt8])?

    mutating func parse(_ bytes: UnsafeRawBufferPointer, complete: Bool) throws(AgeFailure) -> AgeHeader? {
        while true {
            let from = max(at, scanned)
            let found = bytes[from...].firstIndex(of: 0x0A)
            examined += (found ?? bytes.count) - from
            guard let end = found else {
                if bytes.count >= AgeHeader.maxLength {
                    throw AgeFailure(.header, "the header is longer than \(AgeHeader.maxLength >> 20) MiB")
                }
                if complete { throw AgeFailure(.header, "the header is cut short") }
                scanned = bytes.count  // no LF up to here: not searched again
                return nil
            }
            let start = at
            let l = ArraySlice(bytes[start..<end])
            at = end + 1
            if !version {
                guard Array(l) + [0x0A] == AgeHeader.versionLine else {
                    throw AgeFailure(.header, "not age-encryption.org/v1 (an unsupported version, or not an age file)")
                }
                version = true
                continue
            }
            if var o = open {
                guard l.count <= 64, let decoded = AgeBase64.decode(l) else {
                    throw AgeFailure(.header, "a malformed stanza body line")
                }
                o.body += decoded
                if l.count < 64 {
                    stanzas.append(AgeStanza(type: o.args[0], args: Array(o.args.dropFirst()), body: o.body))
                    open = nil
                } else {
                    open = o
                }
                continue
            }
            if l.starts(with: [0x2D, 0x2D, 0x2D]) {  // ---
                let parts = l.split(separator: 0x20, omittingEmptySubsequences: false)
                guard parts.count == 2, Array(parts[0]) == [0x2D, 0x2D, 0x2D],
                    let mac = AgeBase64.decode(parts[1]), mac.count == 32
                else {
                    throw AgeFailure(.header, "a malformed MAC line")
                }
                guard !stanzas.isEmpty else { throw AgeFailure(.header, "no recipient stanza") }
                return AgeHeader(stanzas: stanzas, mac: mac, macInput: Array(bytes[0..<(start + 3)]), length: at)
            }
            let parts = l.split(separator: 0x20, omittingEmptySubsequences: false)
            guard parts.count >= 2, Array(parts[0]) == [0x2D, 0x3E] else {  // ->
                throw AgeFailure(.header, "a malformed stanza line")
            }
            let args = parts.dropFirst()
            guard args.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0 >= 33 && $0 <= 126 } }) else {
                throw AgeFailure(.header, "a stanza argument is empty or not printable")
            }
            guard stanzas.count < AgeHeader.maxStanzas else {
                throw AgeFailure(.header, "more than \(AgeHeader.maxStanzas) recipient stanzas")
            }
            open = (args.map { String(decoding: $0, as: UTF8.self) }, [])
        }
    }
}
