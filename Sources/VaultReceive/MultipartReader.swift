import VaultCore

/// Reads a `multipart/form-data` body (RFC 7578) as it arrives, in bounded memory: as vault's
/// form upload sends it (a manifest part, then a file part per document) and as curl's forms or a
/// browser sends it. Each part is given to the caller as it is read: ``Event/part(_:)`` with its
/// headers, its bytes in pieces (``Event/data(_:)``), then ``Event/end``.
///
/// Written by hand: the multipart readers of the frameworks in the package list hold whole
/// parts (or whole bodies) in memory, and a receiver must not hold a 400 MB file part. The only
/// state carried between pieces is a part's headers (at most ``maxHeaderBytes``) and the few
/// bytes that may be the start of the next boundary.
package struct MultipartReader {
    /// What a part's headers say.
    package struct Part: Sendable, Equatable {
        /// `Content-Disposition`'s `name`.
        package var name: String
        /// `Content-Disposition`'s `filename`, for a file part.
        package var filename: String?
        /// `Content-Type`, if given.
        package var contentType: String?
    }

    /// What the reader found, in order.
    package enum Event {
        /// A part's headers were read.
        case part(Part)
        /// Bytes of the current part (valid only during the call).
        case data(UnsafeRawBufferPointer)
        /// The current part ended.
        case end
    }

    /// The most bytes a part's header block may take.
    package static let maxHeaderBytes = 8 << 10

    /// The most parts a body may hold.
    package let maxParts: Int
    /// Parts read so far (their ends).
    package private(set) var parts = 0
    /// True once the closing boundary was read.
    package private(set) var isComplete = false

    private enum State {
        case opening  // the dashes and the boundary
        case afterBoundary  // `\r\n` (a part follows) or `--` (the end)
        case headers
        case body
        case closing  // after the closing delimiter: an optional `\r\n`, then nothing
    }

    private let opening: [UInt8]  // the dashes and the boundary
    private let delimiter: [UInt8]  // CRLF, the dashes and the boundary
    private var state = State.opening
    private var matched = 0
    private var pending: [UInt8] = []  // header bytes, or body bytes that may start a delimiter
    private var offset: UInt64 = 0

    /// The boundary of a `multipart/form-data` content type, nil when it names none.
    package static func boundary(ofContentType value: String) -> String? {
        let parts = value.split(separator: ";").map { $0.trimmingSpaces() }
        guard let type = parts.first,
            type.lowercased() == "multipart/form-data"
        else { return nil }
        for p in parts.dropFirst() where p.lowercased().hasPrefix("boundary=") {
            var b = String(p.dropFirst("boundary=".count))
            if b.hasPrefix("\""), b.hasSuffix("\""), b.count >= 2 { b = String(b.dropFirst().dropLast()) }
            // RFC 2046: 1-70 characters, none of them a control character.
            guard (1...70).contains(b.utf8.count),
                b.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
            else { return nil }
            return b
        }
        return nil
    }

    /// A reader of a body whose parts are separated by `boundary`, holding at most `maxParts`.
    package init(boundary: String, maxParts: Int = 64) {
        opening = Array("--\(boundary)".utf8)
        delimiter = [0x0D, 0x0A] + opening
        self.maxParts = maxParts
    }

    /// Reads the next piece of the body, calling `handle` for what it completes.
    /// - Throws: ``VaultCore/VaultError/Code/headerMalformed`` for a body that is not
    ///   `multipart/form-data` with this boundary (naming the byte), `trailing-data` for bytes
    ///   after the closing boundary; and whatever `handle` throws.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) throws {
        let bytes = piece.bindMemory(to: UInt8.self)
        var i = 0
        while i < bytes.count {
            switch state {
            case .opening:
                guard bytes[i] == opening[matched] else { throw refusal("two dashes and the boundary", at: i) }
                matched += 1
                i += 1
                if matched == opening.count {
                    matched = 0
                    state = .afterBoundary
                }
            case .afterBoundary:
                let b = bytes[i]
                if matched == 0 {
                    guard b == 0x0D || b == 0x2D else { throw refusal("CRLF or --", at: i) }
                    matched = b == 0x0D ? 1 : -1
                } else if matched == 1 {
                    guard b == 0x0A else { throw refusal("CRLF", at: i) }
                    guard parts < maxParts else {
                        throw VaultError(.headerMalformed, "the form holds more than \(maxParts) parts")
                    }
                    matched = 0
                    pending = []
                    state = .headers
                } else {
                    guard b == 0x2D else { throw refusal("--", at: i) }
                    matched = 0
                    isComplete = true
                    state = .closing
                }
                i += 1
            case .headers:
                pending.append(bytes[i])
                i += 1
                guard pending.count <= Self.maxHeaderBytes else {
                    throw refusal("part headers of at most \(Self.maxHeaderBytes) bytes", at: i - 1)
                }
                if pending.count >= 4 && pending.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) {
                    let part = try parseHeaders(Array(pending.dropLast(4)), at: i - 1)
                    pending = []
                    state = .body
                    try handle(.part(part))
                }
            case .body:
                i = try readBody(piece, from: i, handle)
            case .closing:
                let b = bytes[i]
                guard (matched == 0 && b == 0x0D) || (matched == 1 && b == 0x0A) else {
                    throw VaultError(.trailingData, "the form goes on after its closing boundary")
                }
                matched += 1
                i += 1
            }
        }
        offset += UInt64(bytes.count)
    }

    /// Reads a part's bytes from `piece` at `i`, up to the delimiter or the piece's end.
    /// - Returns: where the next state starts reading in `piece`.
    private mutating func readBody(
        _ piece: UnsafeRawBufferPointer, from i: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        let bytes = piece.bindMemory(to: UInt8.self)
        if pending.isEmpty, bytes.count - i >= delimiter.count {
            // The delimiter searched in the piece itself (memmem), nothing copied.
            let rest = UnsafeRawBufferPointer(rebasing: piece[i...])
            if let k = Self.find(delimiter, in: rest) {
                if k > 0 { try handle(.data(UnsafeRawBufferPointer(rebasing: rest[..<k]))) }
                try handle(.end)
                parts += 1
                state = .afterBoundary
                return i + k + delimiter.count
            }
            // Hold back the longest end of the piece that may start the delimiter.
            let keep = Self.partialMatch(delimiter, atEndOf: rest)
            if rest.count > keep {
                try handle(.data(UnsafeRawBufferPointer(rebasing: rest[..<(rest.count - keep)])))
            }
            pending = Array(rest[(rest.count - keep)...])
            return bytes.count
        }
        // Bytes held back from before (a delimiter's possible start) or a piece's last few:
        // a window of them and at most a delimiter's length of the piece.
        let held = pending.count
        let take = min(bytes.count - i, delimiter.count)
        let window = pending + bytes[i..<(i + take)]
        pending = []
        if let k = window.withUnsafeBytes({ Self.find(delimiter, in: $0) }) {
            if k > 0 { try window[..<k].withUnsafeBytes { try handle(.data($0)) } }
            try handle(.end)
            parts += 1
            state = .afterBoundary
            return i + k + delimiter.count - held  // just after the delimiter, in this piece
        }
        let keep = window.withUnsafeBytes { Self.partialMatch(delimiter, atEndOf: $0) }
        let emit = window.count - keep
        if emit > 0 { try window[..<emit].withUnsafeBytes { try handle(.data($0)) } }
        pending = Array(window[emit...])
        return i + take
    }

    /// Checks that the body ended with its closing boundary.
    /// - Throws: ``VaultCore/VaultError/Code/truncated`` when it did not.
    package func finish() throws {
        guard isComplete else {
            throw VaultError(.truncated, "the form ends inside part \(parts + 1), before its closing boundary")
        }
        // A CR after the closing boundary is only half of the line break that may end it.
        guard matched != 1 else { throw VaultError(.truncated, "the form ends inside the line break after its end") }
    }

    // MARK: Headers

    /// The part's headers: `Content-Disposition: form-data; name="…"[; filename="…"]` and an
    /// optional `Content-Type`; other headers are allowed and ignored (RFC 7578 §4.8 allows none
    /// but `Content-Transfer-Encoding`, which is refused: a file's bytes are taken as sent).
    private func parseHeaders(_ block: [UInt8], at i: Int) throws -> Part {
        guard let text = String(validating: block, as: UTF8.self) else { throw refusal("UTF-8 part headers", at: i) }
        var name: String?
        var filename: String?
        var contentType: String?
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: false) {
            guard let colon = line.firstIndex(of: ":") else { throw refusal("a `Name: value` header", at: i) }
            let key = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            switch key {
            case "content-disposition":
                guard name == nil else { throw refusal("one Content-Disposition", at: i) }
                let (kind, parameters) = try Self.parameters(value, at: i, refusal)
                guard kind.lowercased() == "form-data",
                    let n = parameters["name"]
                else {
                    throw refusal("Content-Disposition: form-data; name=…", at: i)
                }
                name = n
                filename = parameters["filename"]
            case "content-type":
                contentType = value
            case "content-transfer-encoding":
                throw refusal("no Content-Transfer-Encoding", at: i)
            default:
                continue
            }
        }
        guard let name else { throw refusal("a Content-Disposition header", at: i) }
        return Part(name: name, filename: filename, contentType: contentType)
    }

    /// `form-data; name="a"; filename="b.pdf"`: the type and its parameters (quoted strings may
    /// escape a character with `\`, as curl writes them; tokens are taken as they are).
    private static func parameters(
        _ value: String, at i: Int, _ refusal: (String, Int) -> VaultError
    ) throws -> (String, [String: String]) {
        let scalars = Array(value.unicodeScalars)
        var j = 0
        func skipSpace() { while j < scalars.count && scalars[j] == " " { j += 1 } }
        var kind = ""
        while j < scalars.count && scalars[j] != ";" { kind.unicodeScalars.append(scalars[j]); j += 1 }
        var out: [String: String] = [:]
        while j < scalars.count {
            j += 1  // the `;`
            skipSpace()
            var key = ""
            while j < scalars.count && scalars[j] != "=" && scalars[j] != ";" {
                key.unicodeScalars.append(scalars[j]); j += 1
            }
            guard j < scalars.count,
                scalars[j] == "="
            else { throw refusal("a parameter `key=value`", i) }
            j += 1
            var v = ""
            if j < scalars.count && scalars[j] == "\"" {
                j += 1
                var closed = false
                while j < scalars.count {
                    let c = scalars[j]
                    j += 1
                    if c == "\\" && j < scalars.count {
                        v.unicodeScalars.append(scalars[j])
                        j += 1
                    } else if c == "\"" {
                        closed = true
                        break
                    } else {
                        v.unicodeScalars.append(c)
                    }
                }
                guard closed else { throw refusal("a closed quoted parameter", i) }
            } else {
                while j < scalars.count && scalars[j] != ";" { v.unicodeScalars.append(scalars[j]); j += 1 }
            }
            skipSpace()
            let k = key.trimmingSpaces().lowercased()
            guard out[k] == nil else { throw refusal("each parameter once", i) }
            out[k] = v
            guard j == scalars.count || scalars[j] == ";" else { throw refusal("`;` between parameters", i) }
        }
        return (kind.trimmingSpaces(), out)
    }

    // MARK: Searching

    /// The first index of `needle` in `haystack`.
    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        haystack.withUnsafeBytes { find(needle, in: $0) }
    }

    /// Where `needle` first starts in `haystack` (``ByteSearch``).
    static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        ByteSearch.find(needle, in: haystack)
    }

    /// The length of the longest end of `haystack` that is a start of `needle` (shorter than it).
    static func partialMatch(_ needle: [UInt8], atEndOf haystack: UnsafeRawBufferPointer) -> Int {
        var n = min(needle.count - 1, haystack.count)
        while n > 0 {
            if haystack[(haystack.count - n)...].elementsEqual(needle[..<n]) { return n }
            n -= 1
        }
        return 0
    }

    private func refusal(_ expected: String, at i: Int) -> VaultError {
        VaultError(
            .headerMalformed,
            "the form is not multipart/form-data at byte \(offset + UInt64(i)) (part \(parts + 1)): "
                + "expected \(expected)"
        )
    }
}
