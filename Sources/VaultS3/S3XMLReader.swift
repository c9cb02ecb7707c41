/// Reads the XML that S3 answers are: one root element, with elements, attributes, text and
/// character references inside, after an optional XML declaration and byte-order mark. This
/// is what ``S3XML/isPlainUTF8XML(_:)`` lets through: no document type, entity, comment, CDATA
/// section or processing instruction.
///
/// Written by hand. Foundation's `XMLParser`, used before, links libxml2, and Foundation's
/// classes and ICU with it: about 30 MB of a static binary for a few fields. It was also unsafe
/// on hostile bytes (see ``S3XML/isPlainUTF8XML(_:)``). This reader works on bytes, stops at the
/// first thing outside the subset, and holds at most ``maxDepth`` open elements. `make fuzz`
/// covers it (family `s3`), and a test compares its events with `XMLParser`'s on every seed.
package enum S3XMLReader {
    /// What the reader reports, in document order. Text comes with its references decoded and
    /// its line ends normalized (CR LF and CR become LF), as an XML parser reports it. Text
    /// between elements, whitespace included, is reported too.
    package enum Event: Equatable, Sendable {
        case start(String)
        case text(String)
        case end(String)
    }

    /// `events` with each run of consecutive texts as one (how text is split into events is not
    /// part of what a document says; the fuzzer and the tests compare documents with it).
    package static func joiningTexts(_ events: [Event]) -> [Event] {
        var out: [Event] = []
        for e in events {
            if case .text(let t) = e, case .text(let before)? = out.last {
                out[out.count - 1] = .text(before + t)
            } else {
                out.append(e)
            }
        }
        return out
    }

    /// Elements open at once, at most. S3 answers nest four deep.
    package static let maxDepth = 256

    /// The events of `body`, or nil when it is not a well-formed document of the subset above
    /// (then nothing is reported at all, not a part).
    package static func events(_ body: [UInt8]) -> [Event]? {
        var reader = Cursor(body)
        return reader.document()
    }

    private struct Cursor {
        let b: [UInt8]
        var i = 0
        var events: [Event] = []
        var open: [String] = []

        init(_ bytes: [UInt8]) { b = bytes }

        mutating func document() -> [Event]? {
            guard String(validating: b, as: UTF8.self) != nil else { return nil }
            if b.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
            if starts("<?xml") {
                // The declaration's own checks are ``S3XML/isPlainUTF8XML(_:)``'s.
                guard let end = find("?>") else { return nil }
                i = end + 2
            }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "<") else { return nil }
            var rootClosed = false
            while i < b.count {
                if b[i] == UInt8(ascii: "<") {
                    guard !rootClosed else { return nil }
                    if starts("</") {
                        guard endTag() else { return nil }
                        rootClosed = open.isEmpty
                    } else {
                        guard startTag() else { return nil }
                        rootClosed = open.isEmpty
                    }
                } else {
                    let start = i
                    while i < b.count, b[i] != UInt8(ascii: "<") { i += 1 }
                    if open.isEmpty {
                        // Outside the root: whitespace only, and not reported.
                        guard b[start..<i].allSatisfy(isSpace) else { return nil }
                        continue
                    }
                    guard let text = decode(b[start..<i]) else { return nil }
                    events.append(.text(text))
                }
            }
            return rootClosed ? events : nil
        }

        /// `<name attr="v" ...>` or `<name .../>`.
        mutating func startTag() -> Bool {
            i += 1
            guard let name = name(), open.count < S3XMLReader.maxDepth else { return false }
            var attributes: Set<String> = []
            while true {
                let spaced = skipSpace()
                guard i < b.count else { return false }
                if b[i] == UInt8(ascii: ">") {
                    i += 1
                    events.append(.start(name))
                    open.append(name)
                    return true
                }
                if starts("/>") {
                    i += 2
                    events.append(.start(name))
                    events.append(.end(name))
                    return true
                }
                // An attribute: read and checked, not reported (no S3 answer field is one).
                guard spaced, let attribute = self.name(), attributes.insert(attribute).inserted else { return false }
                skipSpace()
                guard i < b.count, b[i] == UInt8(ascii: "=") else { return false }
                i += 1
                skipSpace()
                guard i < b.count, b[i] == UInt8(ascii: "\"") || b[i] == UInt8(ascii: "'") else { return false }
                let quote = b[i]
                i += 1
                let start = i
                while i < b.count, b[i] != quote {
                    guard b[i] != UInt8(ascii: "<") else { return false }
                    i += 1
                }
                guard i < b.count, decode(b[start..<i]) != nil else { return false }
                i += 1
            }
        }

        /// `</name>`, closing the innermost open element.
        mutating func endTag() -> Bool {
            i += 2
            guard let name = name(), open.last == name else { return false }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ">") else { return false }
            i += 1
            open.removeLast()
            events.append(.end(name))
            return true
        }

        /// A name of S3's: an ASCII letter, `_` or `:` first, then those, digits, `-` and `.`.
        /// XML allows other scripts too, but no S3 answer uses them, and a Swift `String` compares
        /// them by canonical equivalence, so `</\u{212A}ey>` (KELVIN SIGN) would close `<Key>`:
        /// a name beyond ASCII makes the answer malformed (found by a review of this reader).
        mutating func name() -> String? {
            let start = i
            while i < b.count {
                let c = b[i]
                let first = i == start
                let letter = (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == UInt8(ascii: "_")
                    || c == UInt8(ascii: ":")
                let more = (0x30...0x39).contains(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
                guard letter || (!first && more) else { break }
                i += 1
            }
            return i > start ? String(decoding: b[start..<i], as: UTF8.self) : nil
        }

        /// Text or an attribute's value with its references decoded and line ends normalized;
        /// nil for a character XML does not allow, `]]>`, or a reference that is not one of the
        /// five predefined entities or a character reference to an allowed character.
        func decode(_ raw: ArraySlice<UInt8>) -> String? {
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var j = raw.startIndex
            while j < raw.endIndex {
                let c = raw[j]
                switch c {
                case UInt8(ascii: "&"):
                    guard let semicolon = raw[j...].firstIndex(of: UInt8(ascii: ";")), semicolon - j <= 12,
                          let scalar = reference(raw[(j + 1)..<semicolon]) else { return nil }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    j = semicolon + 1
                    continue
                case 0x0D:
                    out.append(0x0A)
                    if j + 1 < raw.endIndex, raw[j + 1] == 0x0A { j += 1 }
                case UInt8(ascii: "]") where raw[j...].starts(with: Array("]]>".utf8)):
                    return nil
                case 0x09, 0x0A: out.append(c)
                case ..<0x20: return nil
                default: out.append(c)
                }
                j += 1
            }
            // Characters XML excludes: U+FFFE and U+FFFF (UTF-8 EF BF BE, EF BF BF).
            let text = String(decoding: out, as: UTF8.self)
            guard !text.unicodeScalars.contains(where: { !Self.allowed($0) }) else { return nil }
            return text
        }

        /// `amp`, `lt`, `gt`, `quot`, `apos`, `#N` or `#xH`.
        func reference(_ name: ArraySlice<UInt8>) -> Unicode.Scalar? {
            switch String(decoding: name, as: UTF8.self) {
            case "amp": return "&"
            case "lt": return "<"
            case "gt": return ">"
            case "quot": return "\""
            case "apos": return "'"
            case let n where n.hasPrefix("#x"):
                guard n.dropFirst(2).allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
                return UInt32(n.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).flatMap(allowedScalar)
            case let n where n.hasPrefix("#"):
                guard n.dropFirst().allSatisfy(\.isASCIIDigitOnly) else { return nil }
                return UInt32(n.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init).flatMap(allowedScalar)
            default: return nil
            }
        }

        func allowedScalar(_ s: Unicode.Scalar) -> Unicode.Scalar? { Self.allowed(s) ? s : nil }

        /// XML 1.0's `Char`: tab, LF, CR, and U+0020 up, but for surrogates, U+FFFE and U+FFFF.
        static func allowed(_ s: Unicode.Scalar) -> Bool {
            switch s.value {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
            default: return false
            }
        }

        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

        /// Skips whitespace; true when there was some.
        @discardableResult
        mutating func skipSpace() -> Bool {
            let start = i
            while i < b.count, isSpace(b[i]) { i += 1 }
            return i > start
        }

        func starts(_ text: String) -> Bool { b[i...].starts(with: Array(text.utf8)) }

        func find(_ text: String) -> Int? {
            let t = Array(text.utf8)
            var j = i
            while j + t.count <= b.count {
                if b[j..<(j + t.count)].elementsEqual(t) { return j }
                j += 1
            }
            return nil
        }
    }
}

extension Character {
    /// 0 to 9 only (`isNumber` takes other scripts' digits too).
    fileprivate var isASCIIDigitOnly: Bool { isASCII && isNumber }
}
