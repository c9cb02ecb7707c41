/// Where a document goes under a folder or in an archive: the path its name gives, made safe.
package enum SafePath {
    /// `path` with `text` before the extension of its last part ("a/b.pdf" → "a/b (2).pdf"; a
    /// name that starts with its only dot, such as ".profile", has no extension).
    package static func inserting(_ text: String, into path: String) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return path + text }
        return String(path[..<dot]) + text + String(path[dot...])
    }

    /// The path under the folder for a document named `name`: its `/`-separated parts (the names
    /// a recursive add gives), without empty, `.` and `..` parts, so nothing lands outside the folder;
    /// control characters become `_`. A name left empty, or with a part too long for a file
    /// name (255 bytes), is written under its id.
    package static func of(_ name: String, id: DocumentID) -> String {
        var parts: [String] = []
        for part in name.split(separator: "/") where part != "." && part != ".." {
            var clean = String.UnicodeScalarView()
            for u in part.unicodeScalars { clean.append(u.value < 0x20 || (0x7F...0x9F).contains(u.value) ? "_" : u) }
            let text = String(clean)
            if text.utf8.count > 255 { return id.hex }
            parts.append(text)
        }
        return parts.isEmpty ? id.hex : parts.joined(separator: "/")
    }
}
