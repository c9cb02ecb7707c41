import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive

extension VaultCommand {
    /// `vault get`: decrypt one document, or several into a folder.
    struct Get: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Decrypt a document to a file or standard output, or several into a folder.",
            usage: "vault get [<id-or-name> ...] [--all] [-o <file-or-dir>] [<options>]",
            discussion: """
                With -o FILE the plaintext goes to a temporary file beside FILE that is renamed into \
                place only after every chunk has authenticated, so a damaged document never leaves a \
                partial file. Binary content is never written to a terminal.

                Several documents (ids, names, --tag, or --all) go into the folder -o DIR names \
                (made if missing), each under its name made safe; -o naming an existing folder \
                does the same for one. Two documents that would get the same file, or a file that \
                exists (without --force), stop the command before anything is written.

                Examples:
                  vault get scan.pdf -o scan.pdf
                  vault get 79d6 > notes.txt
                  vault get 79d6 -o copy.pdf --force
                  vault get 79d6 --range 0-1023 > head.bin
                  vault get --tag 2026 -o restored/
                  vault get --all -o backup/
                  vault get --station north --received-since 24h -o today/
                  vault get --tag 2026 -o out/ --on-collision suffix

                Two documents with one name (a folder and file name, made safe) stop the command \
                unless --on-collision says otherwise: suffix writes the later ones as "name (2).pdf", \
                id writes each of them as "name.ID12.pdf" (its id's first 12 digits).

                --range START-END (byte offsets, inclusive, as in HTTP Range) decrypts and \
                authenticates only the 64 KiB chunks that cover the range; END past the end of the \
                document is taken as its last byte.
                """,
            aliases: ["cat"])

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp(
                "Unique id prefixes (4+ digits) or exact names; names shown escaped by list (new\\nline.txt) work too.",
                valueName: "id-or-name"))
        var documents: [String] = []

        @Option(
            name: .customLong("tag"),
            help: ArgumentHelp("Documents with this tag (into -o DIR); repeat for any of several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(help: "Every document (into -o DIR).")
        var all = false

        @OptionGroup(title: "At a back office") var received: ReceivedOptions

        @Option(
            name: .customLong("on-collision"),
            help: ArgumentHelp(
                "When two documents would be written to one path: fail (the default), suffix or id.",
                valueName: "fail|suffix|id"))
        var onCollision: FolderPlan.Collision = .fail

        @Option(
            name: .shortAndLong,
            help: ArgumentHelp(
                """
                    Write to this file (mode 0600), or into this folder for several documents; - for standard output \
                    (the default).
                    """,
                valueName: "file-or-dir"), completion: .file())
        var output: String?

        @Option(
            name: .customLong("identity"),
            help: ArgumentHelp(
                """
                    At an office: an age identity file that opens the documents that came captured \
                    (age-keygen's or vault keygen's); repeatable.
                    """,
                valueName: "file"), completion: .file())
        var identityFiles: [String] = []

        @Flag(help: "Replace output files that exist.")
        var force = false

        @Flag(name: .shortAndLong, help: "Print no summary line (errors and warnings still appear).")
        var quiet = false

        @Flag(help: "Print what was written as one JSON object on standard output (needs -o).")
        var json = false

        @Option(help: "Progress on stderr with -o: bar, none, or auto (bar on a terminal).")
        var progress: ProgressMode = .auto

        /// The bar for files written (-o), never with -q or --json.
        var renderer: ProgressRenderer {
            let mode = progress == .auto ? (Terminal.isTTY(2) ? .bar : .none) : progress
            return ProgressRenderer(mode: json || quiet || mode == .json ? .none : mode)
        }

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                """
                    Only bytes START through END (inclusive, 0-based, as in HTTP Range); START- to the end, -N the \
                    last N bytes.
                    """,
                valueName: "START-END"))
        var range: String?

        /// What `--range` asks for, as HTTP's Range does: `START-END` with START <= END,
        /// `START-` (to the end), or `-N` (the last N bytes, a suffix range).
        enum ByteRange: Equatable {
            case from(UInt64, through: UInt64?)
            case last(UInt64)

            /// The first and last offsets in a document of `size` bytes, nil when none of it is
            /// in the document (a start past its end, or the last 0 bytes).
            func bounds(size: UInt64) -> (UInt64, UInt64)? {
                switch self {
                case .from(let start, let end):
                    guard start < size else { return nil }
                    return (start, min(end ?? (size - 1), size - 1))
                case .last(let n):
                    guard n > 0,
                          size > 0 else { return nil }
                    return (size - min(n, size), size - 1)
                }
            }
        }

        static func parse(range text: String) throws -> ByteRange {
            let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2,
                  parts[0].isEmpty ? UInt64(parts[1]) != nil : UInt64(parts[0]) != nil,
                  parts[1].isEmpty || UInt64(parts[1]) != nil,
                  !(parts[0].isEmpty && parts[1].isEmpty) else {
                throw VaultError(
                    .usage, "--range \(text) is not START-END",
                    hint: "byte offsets, inclusive: --range 0-1023, --range 1024- or --range -100 (the last 100 bytes)")
            }
            if parts[0].isEmpty { return .last(UInt64(parts[1])!) }
            let start = UInt64(parts[0])!, end = UInt64(parts[1])
            if let end, end < start { throw VaultError(.usage, "--range \(text) ends before it starts") }
            return .from(start, through: end)
        }

        /// `get --json`: the files written.
        struct Result: Encodable {
            struct Written: Encodable { var id, name, path: String; var size: UInt64 }
            var written: [Written] = []
        }

        func validate() throws {
            let toStdout = output == nil || output == "-"
            if documents.isEmpty && tags.isEmpty && !all && !received.isGiven {
                throw ValidationError("Name a document (or use --tag, --station or --all with -o DIR).")
            }
            if all && (!documents.isEmpty || !tags.isEmpty || received.isGiven) {
                throw ValidationError("--all selects every document; leave out the names, --tag and --station.")
            }
            if received.isGiven && !documents.isEmpty {
                throw ValidationError("--station and --received-* select documents; leave out the names.")
            }
            if range != nil && (documents.count != 1 || !tags.isEmpty) {
                throw ValidationError("--range needs exactly one document.")
            }
            if json && toStdout { throw ValidationError("--json needs -o: standard output carries the document.") }
            if toStdout && (documents.count > 1 || !tags.isEmpty || all || received.isGiven) {
                throw ValidationError("Several documents need a folder: -o DIR.")
            }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let toStdout = output == nil || output == "-"
            if let folder = output, !toStdout, range == nil,
                documents.count > 1 || !tags.isEmpty || all || received.isGiven
                    || FileSystem.kind(of: folder) == .directory
                    || folder.hasSuffix("/")
            {
                return try await getIntoFolder(folder, options)
            }
            let document = documents[0]
            if !toStdout, let path = output {
                switch FileSystem.kind(of: path) {
                case .directory: throw VaultError(.usage, "\(path) is a directory", hint: "give a file name with -o")
                case .file, .other:
                    if !force {
                        throw VaultError(.alreadyExists, "\(path) already exists", hint: "use --force to replace it")
                    }
                case .missing: break
                }
                guard FileSystem.kind(of: FileSystem.directory(of: path)) == .directory else {
                    throw VaultError(.notFound, "cannot write \(path): its directory does not exist")
                }
            }
            let bounds = try range.map(Self.parse(range:))
            let (vault, office) = try await options.openWithOffice()
            let found = try await Self.resolving(office) { try DocumentQuery.record(document, in: vault, office: $0) }
            if let bounds {
                if vault.holdsCaptured(found.id) {
                    throw VaultError(
                        .usage,
                        "--range reads an envelope's chunks; a document that came captured opens whole "
                            + "(with --identity)",
                        hint: "leave out --range")
                }
                return try getRange(bounds, of: found, in: vault, toStdout: toStdout)
            }
            let (record, next) = try open(found, in: vault, identities: try identities())
            if toStdout {
                if Terminal.isTTY(1) && !ContentType.isText(record.metadata.contentType) {
                    throw VaultError(
                        .usage, "refusing to write \(record.metadata.contentType) data to a terminal",
                        hint: "use -o FILE, or redirect standard output")
                }
                // Text to a terminal: printable characters only, so a document cannot send the
                // terminal escape sequences (clear the screen, retitle the window, ...).
                var screen = Terminal.isTTY(1) ? PrintableText() : nil
                while let batch = try next() {
                    try screen?.check(batch, name: record.metadata.name)
                    try Terminal.stdout.write(batch)
                }
                return
            }
            let bar = renderer
            bar.handle(Importer.Event.started(files: 1, bytes: record.metadata.size))
            bar.handle(Importer.Event.fileStarted(position: 1, of: 1, name: record.metadata.name))
            defer { bar.clear() }
            try Self.writeFile(next, to: output!, force: force) {
                bar.handle(Importer.Event.progress(done: $0, total: record.metadata.size))
            }
            bar.clear()
            if json {
                Terminal.out(
                    JSONOutput.line(
                        Result(written: [
                            .init(
                                id: record.id.hex, name: record.metadata.name, path: output!, size: record.metadata.size
                            )
                        ])))
            }
        }

        /// The identities of `--identity`, read from their files (none without it).
        private func identities() throws -> [AgeIdentity] {
            identityFiles.isEmpty ? [] : try AgeIdentityFiles.read(identityFiles)
        }

        /// `record` opened: its plaintext piece by piece, and the record to name it by — for a
        /// document that came captured, opened with `identities`, the metadata the station captured.
        private func open(
            _ record: DocumentRecord, in vault: VaultCore.Vault, identities: [AgeIdentity]
        ) throws -> (record: DocumentRecord, next: () throws -> UnsafeRawBufferPointer?) {
            if !identities.isEmpty && vault.holdsCaptured(record.id) {
                let opening = try vault.openCaptured(record.id, identities: identities)
                return (DocumentRecord(id: record.id, metadata: opening.metadata), opening.next)
            }
            let reader = try vault.open(record.id)
            return (DocumentRecord(id: record.id, metadata: reader.metadata), reader.next)
        }

        /// `--range`: only the chunks holding the range are read and decrypted.
        private func getRange(
            _ bounds: ByteRange, of record: DocumentRecord, in vault: VaultCore.Vault, toStdout: Bool
        ) throws {
            let reader = try vault.randomAccess(record.id)
            guard let (start, last) = bounds.bounds(size: reader.size) else {
                throw VaultError(
                    .usage,
                    """
                        --range \(range!) holds no byte of \(record.metadata.name) \
                        (\(Plural.count(Int(reader.size), "byte")))
                        """
                )
            }
            if toStdout && Terminal.isTTY(1) && !ContentType.isText(reader.metadata.contentType) {
                throw VaultError(
                    .usage, "refusing to write \(reader.metadata.contentType) data to a terminal",
                    hint: "use -o FILE, or redirect standard output")
            }
            let file = toStdout ? nil : try Self.atomicOutput(output!)
            var screen = toStdout && Terminal.isTTY(1) ? PrintableText() : nil
            var at = start
            while at <= last {
                let piece = try reader.read(at: at, count: Int(min(UInt64(1 << 20), last - at + 1)))
                try piece.withUnsafeBytes { bytes in
                    try screen?.check(bytes, name: record.metadata.name)
                    try file?.file.write(bytes) ?? Terminal.stdout.write(bytes)
                }
                at += UInt64(piece.count)
            }
            try file?.commit(replace: force)
            return
        }

        /// Several documents into `folder`: every target is worked out and checked (collisions,
        /// existing files) before the first byte is written; each file is written as `-o FILE` is.
        func getIntoFolder(_ folder: String, _ options: GlobalOptions) async throws {
            switch FileSystem.kind(of: folder) {
            case .directory, .missing: break
            case .file, .other:
                throw VaultError(
                    .alreadyExists, "\(folder) is not a folder", hint: "several documents go into a folder: -o DIR")
            }
            let (vault, chosen) = try await selected(options)
            if chosen.isEmpty { throw VaultError(.notFound, "there are no documents to get") }
            // Captured documents are planned by the names the station captured (their metadata
            // opened now; their data when written).
            let identities = try identities()
            let records = try chosen.map { r in
                identities.isEmpty ? r : try vault.exported(r, identities: identities)
            }
            let plan = try FolderPlan(records, into: folder, force: force, onCollision: onCollision)
            let made = try FileSystem.makeDirectories(folder)
            var outcome = Result()
            var bytes: UInt64 = 0
            let total = records.reduce(UInt64(0)) { $0 + $1.metadata.size }
            let bar = renderer
            bar.handle(Importer.Event.started(files: records.count, bytes: total))
            defer { bar.clear() }
            do {
                for (n, (record, relative)) in plan.targets.enumerated() {
                    let path = folder.hasSuffix("/") ? folder + relative : folder + "/" + relative
                    try FolderPlan.refuseLinks(in: folder, relative)
                    _ = try FileSystem.makeDirectories(FileSystem.directory(of: path))
                    try FolderPlan.refuseLinks(in: folder, relative)
                    bar.handle(
                        Importer.Event.fileStarted(position: n + 1, of: records.count, name: record.metadata.name))
                    let before = bytes
                    let next = try open(record, in: vault, identities: identities).next
                    try Self.writeFile(next, to: path, force: force) {
                        bar.handle(Importer.Event.progress(done: before + $0, total: total))
                    }
                    outcome.written.append(
                        .init(id: record.id.hex, name: record.metadata.name, path: path, size: record.metadata.size))
                    bytes += record.metadata.size
                }
            } catch {
                for dir in made.reversed() { FileSystem.removeIfEmpty(dir) }
                let e = VaultError.from(error)
                let done = outcome.written.count
                throw VaultError(
                    e.code, e.message,
                    hint: (e.hint.map { $0 + "; " } ?? "")
                        + (done == 0
                            ? "nothing was written"
                            : """
                                \(done) of \(Plural.count(records.count, "document")) were written to \(folder) \
                                before it
                                """),
                    remedy: e.remedy, cause: e.cause)
            }
            bar.clear()
            if json {
                Terminal.out(JSONOutput.line(outcome))
            } else if !quiet {
                Terminal.err(
                    """
                        vault: wrote \(Plural.count(records.count, "document")) (\(Terminal.size(bytes))) to \
                        \(Terminal.printable(folder))
                        """
                )
            }
        }

        /// The vault and the documents to get into a folder: those named or tagged, or those an
        /// office took that `--station` and `--received-*` select (oldest first; removed since: left out).
        private func selected(_ options: GlobalOptions) async throws -> (VaultCore.Vault, [DocumentRecord]) {
            if received.isGiven {
                let (vault, book) = try await options.openOffice()
                let among = tags.isEmpty ? nil : Set(try vault.select(DocumentSelection(tags: tags)).map(\.id))
                let found = book.received(matching: try received.filter(in: book, among: among))
                return (vault, try OfficeBook.oldestFirst(found).compactMap { try vault.record($0.document.id) })
            }
            let (vault, office) = try await options.openWithOffice()
            let records = try await Self.resolving(office) {
                try vault.select(DocumentQuery.selection(documents, tags: tags, in: vault, office: $0))
            }
            return (vault, records)
        }

        /// Streams into a temporary file beside `path` (swept there if a killed `get` left one),
        /// fsyncs, then renames it into place: a damaged document or an interrupt leaves no file.
        /// `progress` hears the bytes written so far.
        static func writeFile(
            _ next: () throws -> UnsafeRawBufferPointer?, to path: String, force: Bool,
            progress: (UInt64) -> Void = { _ in }
        ) throws {
            let output = try atomicOutput(path)
            var written: UInt64 = 0
            while let batch = try next() {
                try output.file.write(batch)
                written += UInt64(batch.count)
                progress(written)
            }
            try output.commit(replace: force)
        }

        /// The temporary file beside `path`, after sweeping what a killed `get` left there.
        static func atomicOutput(_ path: String) throws -> AtomicFile {
            AtomicFile.sweep(FileSystem.directory(of: path))
            return try AtomicFile(destination: path)
        }
    }
}

/// Checks text bound for a terminal, piece by piece: tab, line feed and carriage return, and
/// characters from U+0020 on, except DEL (U+007F) and the C1 controls (U+0080–U+009F, UTF-8
/// `C2 80`–`C2 9F`), whose escape sequences would drive the terminal.
struct PrintableText {
    private var afterC2 = false
    private var offset: UInt64 = 0

    mutating func check(_ bytes: UnsafeRawBufferPointer, name: String) throws {
        for b in bytes {
            let bad =
                afterC2 ? (0x80...0x9F).contains(b) : (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F
            if bad {
                throw VaultError(
                    .usage,
                    """
                        refusing to write \(Terminal.printable(name)) to a terminal: it holds a control character \
                        (byte 0x\(Hex.digits(b, uppercase: true)) at offset \(offset)) that would drive the terminal
                        """,
                    hint: "use -o FILE, or redirect standard output (e.g. | less)")
            }
            afterC2 = b == 0xC2
            offset += 1
        }
    }

    mutating func check(_ bytes: [UInt8], name: String) throws {
        try bytes.withUnsafeBytes { try check($0, name: name) }
    }
}

/// Where each of several documents goes under a folder, decided and checked before anything is
/// written: names made safe, no two documents on one path, no file replaced without `force`.
struct FolderPlan {
    let targets: [(DocumentRecord, String)]

    /// What to do when two documents would be written to one path (`--on-collision`).
    enum Collision: String, ExpressibleByArgument, CaseIterable {
        /// Stop before anything is written, naming both.
        case fail
        /// The first keeps the name; the later ones get " (2)", " (3)", … before the extension.
        case suffix
        /// Each of the documents sharing the path gets its id's first 12 digits before the extension.
        case id
    }

    // Long: the targets, then three checks each with its own message.
    init(_ records: [DocumentRecord], into folder: String, force: Bool, onCollision: Collision = .fail) throws {
        var byPath: [String: DocumentRecord] = [:]
        var targets: [(DocumentRecord, String)] = []
        let wanted = records.map { SafePath.of($0.metadata.name, id: $0.id) }
        var uses: [String: Int] = [:]
        for path in wanted { uses[path, default: 0] += 1 }
        let paths: [String]
        switch onCollision {
        case .fail: paths = wanted
        case .suffix: paths = SafePath.unique(wanted)
        case .id:
            // Each of the documents sharing a path gets its id; a name so made that another
            // document has already is then made unique as suffix does.
            paths = SafePath.unique(
                zip(records, wanted).map { r, path in
                    uses[path, default: 0] > 1 ? SafePath.inserting("." + r.id.hex.prefix(12), into: path) : path
                })
        }
        for (r, relative) in zip(records, paths) {
            if let other = byPath[relative] {
                throw VaultError(
                    .alreadyExists,
                    """
                        \(other.id.hex.prefix(12)) and \(r.id.hex.prefix(12)) would both be written to \
                        \(Terminal.printable(relative)); nothing was written
                        """,
                    hint: "--on-collision suffix or --on-collision id writes both; or get one of them on its own "
                        + "with -o FILE")
            }
            byPath[relative] = r
            targets.append((r, relative))
        }
        // A document's path that is another's folder ("a" and "a/b") cannot both be written.
        for (r, relative) in targets {
            var parent = FileSystem.directory(of: relative)
            while parent != "." && !parent.isEmpty && parent != "/" {
                if let other = byPath[parent] {
                    throw VaultError(
                        .alreadyExists,
                        """
                            \(Terminal.printable(parent)) would be both the file of \(other.id.hex.prefix(12)) and \
                            the folder of \(r.id.hex.prefix(12)); nothing was written
                            """,
                        hint: "get one of them on its own with -o FILE")
                }
                parent = FileSystem.directory(of: parent)
            }
        }
        let base = folder.hasSuffix("/") ? folder : folder + "/"
        for (_, relative) in targets {
            try Self.refuseLinks(in: folder, relative)
            let path = base + relative
            // Not following a link: one that leads nowhere is there all the same.
            switch FileSystem.kind(of: path, following: false) {
            case .missing: break
            case .directory:
                throw VaultError(.alreadyExists, "\(Terminal.printable(path)) is a folder; nothing was written")
            case .file, .other:
                if !force {
                    throw VaultError(
                        .alreadyExists, "\(Terminal.printable(path)) already exists; nothing was written",
                        hint: "use --force to replace it")
                }
            }
            var parent = FileSystem.directory(of: path)
            while parent.count > base.count - 1 && parent != folder {
                if case .file = FileSystem.kind(of: parent) {
                    throw VaultError(
                        .alreadyExists, "\(Terminal.printable(parent)) is a file, not a folder; nothing was written")
                }
                parent = FileSystem.directory(of: parent)
            }
        }
        self.targets = targets
    }

    /// Fails when a folder on the way from `folder` to the document at `relative` under it is a
    /// symbolic link: a link planted in a shared folder (`sub -> /elsewhere`) would take the
    /// document outside it. Checked before anything is written and again just before each file.
    static func refuseLinks(in folder: String, _ relative: String) throws {
        var path = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        for part in relative.split(separator: "/").dropLast() {
            path += "/" + part
            if FileSystem.kind(of: path, following: false) == .other {
                throw VaultError(
                    .alreadyExists,
                    """
                        \(Terminal.printable(path)) is a symbolic link, and a document is never written through one \
                        (it could lead outside \(Terminal.printable(folder))); nothing more was written
                        """,
                    hint: "remove the link, or get into another folder")
            }
        }
    }
}

extension VaultCommand.Get {
    /// `body` given what names documents by their stations' ids: for a local vault its history
    /// (nil), for a vault on a store nothing at first, and its receivers' log (read only then)
    /// when nothing else matched.
    static func resolving<T>(
        _ office: (@Sendable () async throws -> OfficeBook)?, _ body: (OfficeBook?) throws -> T
    ) async throws -> T {
        guard let office else { return try body(nil) }
        do {
            return try body(OfficeBook([]))
        } catch let e as VaultError where e.code == .notFound {
            return try body(try await office())
        }
    }
}
