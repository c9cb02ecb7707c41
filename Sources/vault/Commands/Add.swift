import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage
import VaultCore

extension VaultCommand {
    /// `vault add`: encrypt files into the vault.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Encrypt files into the vault and print their new ids.",
            usage: "vault add [<options>] <path> ...",
            discussion: """
                Each file becomes one document; its id is printed on its own line as soon as it is \
                stored. Use - to read standard input (needs --name). The content type is detected \
                from the first bytes unless --type is given. In folders (-r), files matching \
                --exclude are left out, and so are .DS_Store, Thumbs.db, desktop.ini, ._* and \
                Office lock files (~$*) unless --no-default-excludes. On a terminal a bar shows \
                large files; a last line on standard error says what was added (with -r also when \
                not a terminal; -q silences it); --dry-run lists what would be added and adds nothing.

                Examples:
                  vault add scan.pdf receipt.jpg --tag 2026
                  vault add -r inbox/ --exclude '*.tmp' --dry-run
                  cat photo.heic | vault add - --name photo.heic
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp("Files to add; - reads standard input; directories need -r.", valueName: "path"),
            completion: .file())
        var paths: [String]

        @Option(help: "The document name (default: the file name). Only with a single path.")
        var name: String?

        @Option(
            name: .customLong("type"),
            help: ArgumentHelp("The MIME type (default: detected from the content).", valueName: "mime"))
        var contentType: String?

        @Option(
            name: .customLong("tag"),
            help: ArgumentHelp("A tag for every added document; repeat for several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(help: "Add a file even when a document with the same contents is already in the vault.")
        var allowDuplicate = false

        @Flag(
            name: [.short, .customLong("recursive")],
            help: "Add the files inside directories, recursively (names are paths relative to the directory).")
        var recursive = false

        @Option(
            name: .customLong("exclude"),
            help: ArgumentHelp(
                "Leave out files matching GLOB (by name or relative path); repeat for several.", valueName: "glob"))
        var excludes: [String] = []

        @Flag(help: "Also add .DS_Store, Thumbs.db, desktop.ini, ._* and ~$* files found in folders.")
        var noDefaultExcludes = false

        @Flag(help: "List what would be added, with sizes, and add nothing (no password needed).")
        var dryRun = false

        @Option(help: "Progress on stderr: bar, none, or auto (bar on a terminal).")
        var progress: ProgressMode = .auto

        @OptionGroup var result: OutputOptions

        /// `add --json`: what was added, and what was not (with why); with `--dry-run`, what would be.
        struct Result: Encodable {
            struct Added: Encodable { var id, path, name, contentType: String; var size: UInt64; var sha256: String }
            struct NotAdded: Encodable { var path, code, message: String }
            struct WouldAdd: Encodable { var path, name: String; var size: UInt64 }
            var added: [Added] = []
            var notAdded: [NotAdded] = []
            var excluded: [String] = []
            var dryRun: Bool?
            var wouldAdd: [WouldAdd]?
        }

        /// What `--progress` comes to (`json` is not offered: `--json` is the machine form).
        var progressMode: ProgressMode {
            let mode = progress == .auto ? (Terminal.isTTY(2) ? .bar : .none) : progress
            return result.json || result.quiet || mode == .json ? .none : mode
        }

        func validate() throws {
            if paths.isEmpty { throw ValidationError("Give at least one file to add.") }
            if name != nil && paths.count > 1 { throw ValidationError("--name needs exactly one path.") }
            if paths.contains("-") && name == nil { throw ValidationError("Reading standard input (-) needs --name.") }
            if paths.filter({ $0 == "-" }).count > 1 {
                throw ValidationError("Standard input (-) can be added only once.")
            }
            if let bad = tags.first(where: { !TagChange.isPlain($0) }) {
                throw ValidationError(
                    """
                        --tag '\(Terminal.printable(bad))': a tag has no control characters or commas, and does not \
                        begin or end with a space.
                        """
                )
            }
        }

        func run() async throws { try await run(parent: root.global) }

        /// The stopping error's advice for a partial add: its remedy and hint, but not that nothing
        /// was changed (some files were added).
        static func advice(_ error: VaultError) -> String {
            let words = [error.remedy.map(Hints.text), error.hint].compactMap { $0 }
            return words.isEmpty ? "" : "; " + words.joined(separator: "; ")
        }

        func execute(_ options: GlobalOptions) async throws {
            // Check every input before asking for the password or storing anything.
            let exclusions = Exclusions(patterns: excludes, defaults: !noDefaultExcludes)
            let (inputs, skipped, excluded) = try InputFiles.expandReporting(
                paths, recursive: recursive, stdinName: name ?? "stdin",
                verb: "add", exclusions: exclusions)
            if inputs.isEmpty, let first = skipped.first {
                throw VaultError(
                    .usage, "\(Terminal.printable(first.shown)) was not added: \(first.error.message)",
                    hint: "rename it; nothing was added")
            }
            if inputs.count > 1 && name != nil {
                throw VaultError(.usage, "--name needs exactly one file, but \(paths[0]) holds \(inputs.count)")
            }
            if inputs.isEmpty && !excluded.isEmpty {
                throw VaultError(
                    .notFound, "every file was left out (\(Plural.count(excluded.count, "file")) matched an exclusion)",
                    hint: "--no-default-excludes or fewer --exclude patterns; nothing was added")
            }
            if dryRun {
                // What the add would find before the password: the vault is there.
                try options.requireLocal()
                try options.checkExists(options.store)
                return try preview(inputs, skipped: skipped, excluded: excluded)
            }
            let sizes = inputs.map {
                $0.path == "-" ? 0 : (try? FilePath($0.path).stat().size).map { UInt64(max($0, 0)) } ?? 0
            }
            let renderer = ProgressRenderer(mode: progressMode)
            renderer.handle(Importer.Event.started(files: inputs.count, bytes: sizes.reduce(0, +)))
            // Argon2id runs while the first file is read, hashed and sealed.
            let vault = try options.unlockInBackground()
            var outcome = Result()
            defer { if result.json { Terminal.out(JSONOutput.line(outcome)) } }
            let session = try AddSession(pending: vault, operation: .add)
            outcome.excluded = excluded
            for skip in skipped {
                Terminal.warn("\(Terminal.printable(skip.shown)) was not added: \(skip.error.message)")
                outcome.notAdded.append(
                    .init(path: skip.shown, code: skip.error.code.rawValue, message: skip.error.message))
            }
            defer { renderer.clear() }
            let added = try add(
                inputs.enumerated().map { position, input in
                    AddInput(
                        shown: input.path == "-" ? "standard input" : input.path, name: name ?? input.name,
                        size: sizes[position]
                    ) {
                        input.path == "-"
                            ? OpenFile.standard(0, name: "standard input") as any ByteSource
                            : try ReadAheadFile(try input.open(), window: ReadAheadFile.inputWindow)
                    }
                }, into: session, skipped: skipped.count, renderer: renderer, outcome: &outcome)
            try report(
                added, inputs: inputs, skipped: skipped, excluded: excluded, outcome: outcome, renderer: renderer)
        }

        /// What the add came to, once the bar is gone: the undeliverable names, a line on a
        /// terminal, and the exit status (partial when some files were not added, duplicate when
        /// none was because all were in the vault already).
        private func report(
            _ added: BulkAddOutcome, inputs: [InputFiles.Input], skipped: [InputFiles.Skipped], excluded: [String],
            outcome: Result, renderer: ProgressRenderer
        ) throws {
            let duplicates = added.skipped.count
            // Said once the bar is gone (a line printed under it would leave it on the screen).
            renderer.clear()
            for (_, r) in added.added where DocumentName.problem(r.metadata.name) != nil {
                Self.warnIfUndeliverable(r.metadata.name, id: r.id)
            }
            let total = inputs.count + skipped.count
            if let stopped = added.stopped {
                // Some files are stored; the error stopped the rest. The history says "partial" and which were added.
                let shown = inputs[stopped.input].path == "-" ? "standard input" : inputs[stopped.input].path
                let rest =
                    added.notTried > 0 ? " (\(added.notTried) more \(Plural.files(added.notTried)) not tried)" : ""
                throw VaultError(
                    .partial, "cannot add \(Terminal.printable(shown)): \(stopped.error.message)",
                    hint:
                        """
                            \(outcome.added.count) of \(Plural.count(total, "file")) \
                            \(outcome.added.count == 1 ? "was" : "were") added (their ids are above); 
                            """
                        + """
                            \(total - outcome.added.count) \(total - outcome.added.count == 1 ? "was" : "were") \
                            not\(rest)
                            """
                        + Self.advice(stopped.error))
            }
            renderer.clear()
            if progressMode == .bar || (recursive && !result.quiet && !result.json) {
                // What happened in one line (the ids are on standard output): on a terminal, and for
                // a folder in a log too, where a count is what a cron job's reader looks for.
                let bytes = outcome.added.reduce(UInt64(0)) { $0 + $1.size }
                var line = "vault: added \(Plural.count(outcome.added.count, "document")) (\(Terminal.size(bytes)))"
                if duplicates > 0 { line += ", \(duplicates) already in the vault" }
                if !excluded.isEmpty { line += ", \(excluded.count) left out by exclusions" }
                Terminal.err(line)
            }
            if outcome.added.isEmpty && skipped.isEmpty && duplicates > 0 {  // nothing happened: not a partial success
                throw VaultError(
                    .duplicate,
                    """
                        none of the \(Plural.count(inputs.count, "file")) was added: their contents are already in \
                        the vault
                        """,
                    hint: "they are named above; --allow-duplicate adds them anyway")
            }
            if !skipped.isEmpty || duplicates > 0 {
                let why =
                    duplicates == 0
                    ? "they are named above"
                    : "they are named above; --allow-duplicate adds a file whose contents are already in the vault"
                let left = skipped.count + duplicates
                throw VaultError(
                    .partial, "\(left) of \(Plural.count(total, "file")) \(left == 1 ? "was" : "were") not added",
                    hint: why)
            }
        }

        /// Adds the inputs with the library's bulk add, showing each as it goes (its id on
        /// standard output once stored, a bar on a terminal) and recording each outcome for
        /// `--json`. A duplicate among several files is left out with a warning; any other error
        /// stops the add. When it stops before anything was added, the error is thrown here.
        private func add(
            _ inputs: [AddInput], into session: AddSession, skipped: Int, renderer: ProgressRenderer,
            outcome: inout Result
        ) throws -> BulkAddOutcome {
            let total = inputs.reduce(UInt64(0)) { $0 + $1.size }
            var before: UInt64 = 0
            var notAdded: [Result.NotAdded] = []
            var added: [Result.Added] = []
            defer { outcome.notAdded += notAdded; outcome.added += added }
            let bulk = try session.addAll(
                inputs, contentType: contentType, tags: tags, allowDuplicate: allowDuplicate, alreadyLeftOut: skipped,
                onError: { input, e in
                    notAdded.append(.init(path: input.shown, code: e.code.rawValue, message: e.message))
                    // The others are still added; the exit code says some were not.
                    guard e.code == .duplicate && inputs.count > 1 else { return .stop }
                    Terminal.warn("\(input.shown) was not added: \(e.message)")
                    return .skip
                },
                starting: { position in
                    if position > 0 { before += inputs[position - 1].size }
                    let name = inputs[position].name
                    renderer.handle(Importer.Event.fileStarted(position: position + 1, of: inputs.count, name: name))
                },
                progress: { done in
                    renderer.handle(Importer.Event.progress(done: before + done, total: max(total, before + done)))
                },
                added: { position, record in
                    let m = record.metadata
                    added.append(
                        .init(
                            id: record.id.hex, path: inputs[position].shown, name: m.name, contentType: m.contentType,
                            size: m.size, sha256: Hex.encode(m.sha256)))
                    if !result.json && !result.quiet { Terminal.out(record.id.hex + "\n") }
                })
            guard let stopped = bulk.stopped, bulk.added.isEmpty else { return bulk }
            let shown = inputs[stopped.input].shown
            if stopped.error.code == .duplicate {
                throw VaultError(
                    .duplicate, "\(shown) was not added: \(stopped.error.message)",
                    hint: "use --allow-duplicate to add it anyway")
            }
            var failed = stopped.error.context("cannot add \(shown)")
            if failed.hint == nil && failed.remedy == nil && !failed.nothingChanged { failed.hint = "it was not added" }
            throw failed
        }

        /// A document whose name no back office takes (docs/RECEIVE.md: a relative path without
        /// control characters) is kept, and said so now rather than at its first upload.
        static func warnIfUndeliverable(_ name: String, id: DocumentID?) {
            guard let why = DocumentName.problem(name) else { return }
            let which = id.map { "\($0.hex.prefix(12)) " } ?? ""
            Terminal.warn(
                """
                    \(which)\(name): its name \(why), which no back office takes: uploads will \
                    leave it out (add the file again with --name NAME to deliver it)
                    """)
        }

        /// `--dry-run`: what would be added (name, size, path), what is left out and why;
        /// nothing is read but the folders, and no password is asked for.
        func preview(_ inputs: [InputFiles.Input], skipped: [InputFiles.Skipped], excluded: [String]) throws {
            var outcome = Result()
            outcome.dryRun = true
            outcome.excluded = excluded
            outcome.notAdded = skipped.map {
                .init(path: $0.shown, code: $0.error.code.rawValue, message: $0.error.message)
            }
            var would: [Result.WouldAdd] = []
            for input in inputs {
                if !result.json { Self.warnIfUndeliverable(DocumentName.normalized(name ?? input.name), id: nil) }
                let size =
                    input.path == "-" ? 0 : (try? FilePath(input.path).stat().size).map { UInt64(max($0, 0)) } ?? 0
                would.append(
                    .init(path: input.path == "-" ? "standard input" : input.path, name: name ?? input.name, size: size)
                )
            }
            outcome.wouldAdd = would
            if result.json { Terminal.out(JSONOutput.line(outcome)); return }
            if !result.quiet {
                var lines = ""
                for w in would {
                    lines +=
                        """
                            would add \(Terminal.printable(w.name)) \
                            (\(w.path == "standard input" ? "from standard input" : Terminal.size(w.size)))\n
                            """
                }
                for e in excluded { lines += "left out \(Terminal.printable(e)) (excluded)\n" }
                for s in skipped { lines += "left out \(Terminal.printable(s.shown)) (\(s.error.message))\n" }
                Terminal.out(lines)
                let bytes = would.reduce(UInt64(0)) { $0 + $1.size }
                Terminal.err(
                    "vault: dry run: would add \(Plural.count(would.count, "file")) (\(Terminal.size(bytes)))"
                        + (excluded.isEmpty && skipped.isEmpty ? "" : ", leaving out \(excluded.count + skipped.count)")
                        + "; nothing was added (a file whose contents are in the vault already is found when adding)")
            }
            // The exit status the add would have: a file it would not take is a partial add.
            if !skipped.isEmpty {
                throw VaultError(
                    .partial,
                    """
                        dry run: \(skipped.count) of \(Plural.count(inputs.count + skipped.count, "file")) would not \
                        be added
                        """,
                    hint: "they are named above")
            }
        }
    }
}
