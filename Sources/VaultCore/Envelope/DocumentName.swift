/// The rule for a document's name that crosses the wire: what a station may send and what a
/// receiver (vault's own, or a back office written in another language, docs/RECEIVE.md) keeps.
///
/// A name is a relative path: `/`-separated parts (the names a folder's files are added under:
/// `clients/Acme GmbH/offer.pdf`), none of them empty, `.` or `..`, so no leading or trailing `/`
/// and no `//`; no control character (C0, DEL, C1), no
/// bidirectional override or isolate and no line or paragraph separator (a name shown in a list
/// must read as what it is). A backslash is an ordinary character, as on every POSIX file system
/// (PHP and werkzeug take it percent-encoded in a form); a back office that writes names as
/// paths where it separates folders must escape it. Names are kept in Unicode Normalization Form C: a station
/// normalizes a name when it adds the document, a receiver what it receives, so `café` typed on
/// one machine and listed on another are the same bytes.
///
/// A vault itself keeps any non-empty UTF-8 name (``DocumentMetadata``); this rule is the one a
/// delivery adds, checked by the station before it sends (``problem(_:)``) and by the receiver
/// as it reads a batch. Pure: no I/O.
package enum DocumentName {
    /// Why `name` cannot cross the wire (words that follow "its name ..."), or nil when it can.
    package static func problem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.unicodeScalars.contains(where: isRefused) { return "has a control character" }
        if name.hasPrefix("/") { return "is an absolute path (it starts with /)" }
        for part in name.split(separator: "/", omittingEmptySubsequences: false) {
            switch part {
            case "": return "has an empty folder name (// or a / at its end)"
            case ".", "..": return "has a '\(part)' part, which names a folder"
            default: continue
            }
        }
        return nil
    }

    /// `name` in Unicode Normalization Form C (canonical composition).
    ///
    /// The standard library's own normalization (`_nfcCodeUnits`, the one `String` comparison
    /// uses): vault's modules import only FoundationEssentials, whose normalizing methods need
    /// ICU's data, which the lean binary does not carry (docs/PERFORMANCE.md).
    package static func normalized(_ name: String) -> String {
        // ASCII is always in NFC: most names take no copy.
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return name }
        return String(decoding: name._nfcCodeUnits, as: UTF8.self)
    }

    /// A control character, a bidirectional override or isolate, or a line or paragraph separator.
    private static func isRefused(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        return v < 0x20 || v == 0x7F || (0x80..<0xA0).contains(v) || (0x202A...0x202E).contains(v)
            || (0x2066...0x2069).contains(v) || v == 0x2028 || v == 0x2029
    }
}
