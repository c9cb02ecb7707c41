#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage
import VaultCore

/// Which files found in folders are left out: `--exclude GLOB` patterns (fnmatch(3), matched
/// against the file's name and its path relative to the folder named), and by default the
/// litter other systems leave (`.DS_Store`, `Thumbs.db`, `desktop.ini`, AppleDouble `._*`, and
/// the lock files Office keeps beside a document it has open, `~$report.docx`).
struct Exclusions {
    static let defaults = [".DS_Store", "Thumbs.db", "desktop.ini", "._*", "~$*"]
    var patterns: [String] = []
    var defaults = true

    /// The pattern that leaves `relative` (found in a folder) out, if one does.
    func match(relative: String, found: Bool) -> String? {
        let base = relative.split(separator: "/").last.map(String.init) ?? relative
        let all = patterns + (defaults && found ? Self.defaults : [])
        return all.first { Platform.matches(glob: $0, base) || Platform.matches(glob: $0, relative) }
    }
}

/// The files a command reads, checked before anything is stored: `add` and `import`.
enum InputFiles {
    /// One input: its path (`-` for standard input) and the name it gets.
    struct Input {
        var path: String
        var name: String
        /// Found in a folder `-r` walked (not named by the user): opened only as a regular file,
        /// never through a link.
        var found = false

        /// Opens it for reading.
        func open() throws -> OpenFile {
            found
                ? try OpenFile.openRegular(path, refusal: .usage, why: "found in a folder")
                : try OpenFile.openForReading(path)
        }
    }

    /// The regular files `paths` name, folders expanded (with `recursive`) into their files,
    /// sorted by relative path. Anything missing, unreadable, or a folder without `recursive`
    /// fails the whole command before anything is stored ("nothing was <verb>ed").
    /// A file inside a folder that is left out (its name is not valid UTF-8), with why; the
    /// command reports it and exits 2 after taking the others.
    struct Skipped { var shown: String; var error: VaultError }

    static func expand(_ paths: [String], recursive: Bool, stdinName: String, verb: String) throws -> [Input] {
        try expandReporting(paths, recursive: recursive, stdinName: stdinName, verb: verb).inputs
    }

    /// As ``expandReporting(_:recursive:stdinName:verb:)``, leaving out what `exclusions`
    /// match (returned apart: paths as shown).
    /// A folder that matches is not walked (`--exclude .git` leaves out what is in it).
    static func expandReporting(
        _ paths: [String], recursive: Bool, stdinName: String, verb: String,
        exclusions: Exclusions
    ) throws -> (inputs: [Input], skipped: [Skipped], excluded: [String]) {
        var prunedFolders: [String] = []
        let (all, skipped) = try expandReporting(
            paths, recursive: recursive, stdinName: stdinName, verb: verb,
            pruning: { relative, shown in
                guard exclusions.match(relative: relative, found: true) != nil else { return false }
                prunedFolders.append(shown)
                return true
            })
        var kept: [Input] = [], excluded: [String] = []
        for input in all {
            if input.path != "-" && exclusions.match(relative: input.name, found: input.found) != nil {
                excluded.append(input.path)
            } else {
                kept.append(input)
            }
        }
        return (kept, skipped, prunedFolders + excluded)
    }

    /// - Parameter pruning: asked for each folder found under one named (its path relative to
    ///   that one, and as shown); true leaves it out, unwalked.
    static func expandReporting(
        _ paths: [String], recursive: Bool, stdinName: String, verb: String,
        pruning: (String, String) -> Bool = { _, _ in false }
    ) throws -> (inputs: [Input], skipped: [Skipped]) {
        let nothing = "nothing was \(verb == "add" ? "added" : verb + "ed")"
        var out: [Input] = []
        var skipped: [Skipped] = []
        for path in paths {
            if path == "-" { out.append(Input(path: "-", name: stdinName)); continue }
            switch FileSystem.kind(of: path) {
            case .missing:
                throw VaultError(.notFound, "\(path): no such file", hint: nothing)
            case .directory:
                guard recursive else {
                    throw VaultError(
                        .usage, "\(path) is a directory", hint: "use -r to \(verb) the files inside it; \(nothing)")
                }
                let (files, left) = try walk(path, nothing: nothing, pruning: pruning)
                if files.isEmpty && left.isEmpty { Terminal.warn("\(path) holds no files") }
                out += files
                skipped += left
            case .file:
                guard Platform.isReadable(path) else {
                    throw VaultError(.io, "\(path): permission denied", hint: nothing)
                }
                out.append(Input(path: path, name: URL(fileURLWithPath: path).lastPathComponent))
            case .other:
                throw VaultError(.usage, "\(path) is not a regular file", hint: nothing)
            }
        }
        return (out, skipped)
    }

    /// Regular files under `dir`, sorted, not following symbolic links. A folder or file that
    /// cannot be read fails the whole command, as an unreadable file named on the command line does.
    private static func walk(
        _ dir: String, nothing: String, pruning: (String, String) -> Bool
    ) throws -> ([Input], [Skipped]) {
        var found: [Input] = []
        var skipped: [Skipped] = []
        func visit(_ path: String, _ relative: String) throws {
            let entries: [(name: String?, shown: String)]
            do { entries = try FileSystem.listChecked(path) } catch let e as VaultError {
                throw VaultError(e.code, e.message, hint: nothing, cause: e.cause)
            }
            for entry in entries {
                guard let name = entry.name else {
                    skipped.append(
                        Skipped(
                            shown: path + "/" + entry.shown,
                            error: VaultError(.usage, "its name is not valid UTF-8, and a document's name must be")))
                    continue
                }
                let full = path + "/" + name, rel = relative.isEmpty ? name : relative + "/" + name
                guard let st = try? FilePath(full).stat(followTargetSymlink: false) else {
                    throw VaultError(.io, "cannot read \(full)", hint: nothing)
                }
                switch st.type {
                case .directory: if !pruning(rel, full) { try visit(full, rel) }
                case .regular:
                    guard Platform.isReadable(full) else {
                        throw VaultError(.io, "\(full): permission denied", hint: nothing)
                    }
                    found.append(Input(path: full, name: rel, found: true))
                case .symbolicLink:
                    skipped.append(
                        Skipped(
                            shown: full,
                            error: VaultError(.usage, "a symbolic link: not followed (name its target to add it)")))
                default:
                    skipped.append(
                        Skipped(
                            shown: full, error: VaultError(.usage, "not a regular file (a pipe, a device or a socket)"))
                    )
                }
            }
        }
        // Paths as the user wrote the folder (`inbox/a.pdf`, not an absolute path), without a
        // trailing slash.
        try visit(FileSystem.withoutTrailingSlashes(dir), "")
        return (found.sorted { $0.name < $1.name }, skipped)
    }
}
