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

    /// `wanted` (one path a document, in order) with each path taken again made unique as
    /// "name (2).pdf", "name (3).pdf", …: the first keeps its path, and no new path is one taken
    /// or one another document wants.
    package static func unique(_ wanted: [String]) -> [String] {
        let all = Set(wanted)
        var taken: Set<String> = []
        return wanted.map { path in
            var chosen = path
            var n = 2
            while taken.contains(chosen) || (chosen != path && all.contains(chosen)) {
                chosen = inserting(" (\(n))", into: path)
                n += 1
            }
            taken.insert(chosen)
            return chosen
        }
    }

    /// `path` safe to unpack on Windows too (an archive's entry names, APPNOTE 4.4.17): in each
    /// part `\`, `:` and the other characters Windows refuses (`*?"<>|`) become `_`, trailing
    /// spaces and dots are dropped, and a device name (`CON`, `aux.txt`, `COM1`, …) gets a `_`
    /// before it.
    package static func portable(_ path: String) -> String {
        let devices = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] })
        let parts = path.split(separator: "/").map { part -> String in
            var text = String(part.map { "\\:*?\"<>|".contains($0) ? "_" : $0 })
            while let last = text.last, last == " " || last == "." { text.removeLast() }
            if text.isEmpty { text = "_" }
            let stem = text.split(separator: ".", maxSplits: 1).first.map { $0.uppercased() } ?? ""
            return devices.contains(stem) ? "_" + text : text
        }
        return parts.joined(separator: "/")
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
