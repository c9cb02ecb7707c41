/// Reads a history record in the one layout ``HistoryRecord/json()`` writes (keys sorted, no
/// white space, RFC 8259 escapes as ``JSONString`` writes them), straight from its bytes.
///
/// Hand-written because of memory: a record of a send names every document — 15 MB for
/// 100,000 — and `JSONDecoder` held four times that while decoding one, the peak of an
/// `audit`. This reader holds nothing but the values it returns, and with `documents` false
/// only checks the documents' syntax. Anything else (another key order, white space, escapes
/// this project never writes) returns nil, and the caller decodes with `JSONDecoder` as before,
/// so no record is read differently: what is accepted here decodes to the same value there.
package struct HistoryRecordReader {
    private let b: [UInt8]
    private var i = 0

    private init(_ bytes: [UInt8]) { b = bytes }

    /// The record in `bytes`, with its documents when `documents(operation)` is true (an empty
    /// list otherwise); nil when the bytes are not in the canonical layout.
    package static func read(_ bytes: [UInt8], documents: (HistoryRecord.Operation) -> Bool) -> HistoryRecord? {
        var r = HistoryRecordReader(bytes)
        return r.record(documents: documents)
    }

    private mutating func record(documents wanted: (HistoryRecord.Operation) -> Bool) -> HistoryRecord? {
        guard literal("{\"anomalies\":[") else { return nil }
        var anomalies: [HistoryRecord.Anomaly] = []
        if !literal("]") {
            repeat {
                guard literal("{\"code\":"),
                      let code = string(),
                      literal(",\"message\":"),
                      let message = string(),
                      literal("}") else { return nil }
                anomalies.append(HistoryRecord.Anomaly(code: code, message: message))
            } while literal(",")
            guard literal("]") else { return nil }
        }
        guard literal(",\"destinations\":[") else { return nil }
        var destinations: [String] = []
        if !literal("]") {
            repeat {
                guard let d = string() else { return nil }
                destinations.append(d)
            } while literal(",")
            guard literal("]") else { return nil }
        }
        var detail: String?
        if literal(",\"detail\":") {
            guard let d = string() else { return nil }
            detail = d
        }
        guard literal(",\"documents\":[") else { return nil }
        let documentsStart = i
        guard documentList(build: false) != nil else { return nil }
        guard literal(",\"host\":"),
              let host = string(),
              literal(",\"op\":"),
              let op = string().flatMap(HistoryRecord.Operation.init(rawValue:)),
              literal(",\"outcome\":"),
              let outcome = string().flatMap(HistoryRecord.Outcome.init(rawValue:)) else { return nil }
        var receipt: String?
        if literal(",\"receipt\":") {
            guard let r = string() else { return nil }
            receipt = r
        }
        var sealed: [String]?
        if literal(",\"sealed\":[") {
            var pairs: [String] = []
            if !literal("]") {
                repeat {
                    guard let p = string() else { return nil }
                    pairs.append(p)
                } while literal(",")
                guard literal("]") else { return nil }
            }
            sealed = pairs
        }
        guard literal(",\"time\":"),
              let time = integer(negative: true),
              literal("}"),
              i == b.count else { return nil }
        var documents: [HistoryRecord.Document] = []
        if wanted(op) {
            i = documentsStart
            guard let list = documentList(build: true) else { return nil }
            documents = list
        }
        var record = HistoryRecord(
            op, outcome: outcome, documents: documents, destinations: destinations, detail: detail)
        record.timeMillis = Int64(time)
        record.host = host
        record.anomalies = anomalies
        record.receipt = receipt
        record.sealed = sealed
        return record
    }

    /// The document objects up to the closing `]` (consumed); built only with `build`.
    private mutating func documentList(build: Bool) -> [HistoryRecord.Document]? {
        var out: [HistoryRecord.Document] = []
        if literal("]") { return out }
        repeat {
            guard literal("{\"id\":"),
                  let id = string(build: build),
                  literal(",\"name\":"),
                  let name = string(build: build),
                  literal(",\"sha256\":"),
                  let sha = string(build: build),
                  literal(",\"size\":"),
                  let size = integer(negative: false),
                  size >= 0,
                  literal("}") else { return nil }
            if build {
                // A document's id is 32 hex digits: anything else is not this layout (JSONDecoder decides).
                guard let documentID = DocumentID(hex: id) else { return nil }
                out.append(HistoryRecord.Document(id: documentID, name: name, sha256: sha, size: UInt64(size)))
            }
        } while literal(",")
        return literal("]") ? out : nil
    }

    private mutating func literal(_ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard b.count - i >= n else { return false }
        for k in 0..<n where b[i + k] != s.utf8Start[k] { return false }
        i += n
        return true
    }

    /// A JSON string as ``JSONString`` writes it; "" when not `build` (checked all the same,
    /// UTF-8 included, as the decoder would).
    private mutating func string(build: Bool = true) -> String? {
        guard i < b.count,
              b[i] == 0x22 else { return nil }
        i += 1
        var out: [UInt8] = []
        var start = i
        while i < b.count {
            let c = b[i]
            if c == 0x22 {
                out += b[start..<i]
                i += 1
                guard let s = String(validating: out, as: UTF8.self) else { return nil }
                return build ? s : ""
            }
            if c < 0x20 { return nil }
            if c == 0x5C {
                out += b[start..<i]
                guard i + 1 < b.count else { return nil }
                switch b[i + 1] {
                case 0x22: out.append(0x22)
                case 0x5C: out.append(0x5C)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:  // \u00XX, for the control characters without a short escape
                    guard i + 5 < b.count,
                          b[i + 2] == 0x30,
                          b[i + 3] == 0x30,
                          let hi = Self.hexValue(b[i + 4]),
                          let lo = Self.hexValue(b[i + 5]),
                          hi < 2 else { return nil }
                    out.append(hi << 4 | lo)
                    i += 4
                default: return nil
                }
                i += 2
                start = i
                continue
            }
            i += 1
        }
        return nil
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// An integer as `String(n)` writes it (no leading zeros, no plus sign).
    private mutating func integer(negative allowed: Bool) -> Int64? {
        var negative = false
        if allowed && i < b.count && b[i] == 0x2D { negative = true; i += 1 }
        let start = i
        var value: Int64 = 0
        while i < b.count, (0x30...0x39).contains(b[i]) {
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) =
                negative
                ? m.subtractingReportingOverflow(Int64(b[i] - 0x30)) : m.addingReportingOverflow(Int64(b[i] - 0x30))
            guard !o1,
                  !o2 else { return nil }
            value = s
            i += 1
        }
        let digits = i - start
        guard digits > 0,
              digits == 1 || b[start] != 0x30,
              !(negative && value == 0) else { return nil }
        return value
    }
}
