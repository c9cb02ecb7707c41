import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
    /// `vault add`: encrypt files into the vault.
    struct Add: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Encrypt files into the vault and print their new ids.",
            discussion: """
                Each file becomes one document; its id is printed on its own line as soon as it is \
                stored. Use - to read standard input (needs --name). The content type is detected \
                from the first bytes unless --type is given.

                Examples:
                  vault add scan.pdf receipt.jpg --tag 2026
                  vault add -r inbox/
                  cat photo.heic | vault add - --name photo.heic
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Files to add; - reads standard input; directories need -r.", valueName: "path"), completion: .file())
        var paths: [String]

        @Option(help: "The document name (default: the file name). Only with a single path.")
        var name: String?

        @Option(name: .customLong("type"), help: ArgumentHelp("The MIME type (default: detected from the content).", valueName: "mime"))
        var contentType: String?

        @Option(name: .customLong("tag"), help: ArgumentHelp("A tag for every added document; repeat for several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(help: "Add a file even when a document with the same contents is already in the vault.")
        var allowDuplicate = false

        @Flag(name: [.short, .customLong("recursive")], help: "Add the files inside directories, recursively (names are paths relative to the directory).")
        var recursive = false

        @OptionGroup var result: OutputOptions

        /// `add --json`: what was added, and what was not (with why).
        struct Result: Encodable {
            struct Added: Encodable { var id, path, name, contentType: String; var size: UInt64; var sha256: String }
            struct NotAdded: Encodable { var path, code, message: String }
            var added: [Added] = []
            var notAdded: [NotAdded] = []
        }

        func validate() throws {
            if paths.isEmpty { throw ValidationError("Give at least one file to add.") }
            if name != nil && paths.count > 1 { throw ValidationError("--name needs exactly one path.") }
            if paths.contains("-") && name == nil { throw ValidationError("Reading standard input (-) needs --name.") }
            if paths.filter({ $0 == "-" }).count > 1 { throw ValidationError("Standard input (-) can be added only once.") }
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
            let (inputs, skipped) = try InputFiles.expandReporting(paths, recursive: recursive, stdinName: name ?? "stdin", verb: "add")
            if inputs.isEmpty, let first = skipped.first {
                throw VaultError(.usage, "\(Terminal.printable(first.shown)) was not added: \(first.error.message)", hint: "rename it; nothing was added")
            }
            if inputs.count > 1 && name != nil {
                throw VaultError(.usage, "--name needs exactly one file, but \(paths[0]) holds \(inputs.count)")
            }
            // Argon2id runs while the first file is read, hashed and sealed.
            let vault = try options.unlockInBackground()
            var duplicates = 0
            var stopped: (shown: String, error: VaultError)?   // the error that stopped the command after some files were added
            var outcome = Result()
            defer { if result.json { Terminal.out(JSONOutput.line(outcome)) } }
            let session = try AddSession(pending: vault, operation: .add)
            for skip in skipped {
                Terminal.warn("\(Terminal.printable(skip.shown)) was not added: \(skip.error.message)")
                outcome.notAdded.append(.init(path: skip.shown, code: skip.error.code.rawValue, message: skip.error.message))
            }
            do { for input in inputs {
                let file: any ByteSource = input.path == "-" ? OpenFile.standard(0, name: "standard input")
                                                              : try ReadAheadFile(try input.open())
                let shown = input.path == "-" ? "standard input" : input.path
                let record: DocumentRecord
                do {
                    record = try session.add(from: file, name: name ?? input.name, contentType: contentType, tags: tags,
                                             allowDuplicate: allowDuplicate)
                } catch let e as VaultError where e.code == .duplicate {
                    guard inputs.count > 1 else {
                        outcome.notAdded.append(.init(path: shown, code: e.code.rawValue, message: e.message))
                        throw VaultError(.duplicate, "\(shown) was not added: \(e.message)", hint: "use --allow-duplicate to add it anyway")
                    }
                    // The others are still added; the exit code says some were not.
                    Terminal.warn("\(shown) was not added: \(e.message)")
                    outcome.notAdded.append(.init(path: shown, code: e.code.rawValue, message: e.message))
                    duplicates += 1
                    continue
                } catch {
                    if let wrong = vault.failure { throw wrong }   // a wrong password is about the vault, not this file
                    let e = VaultError.from(error)
                    outcome.notAdded.append(.init(path: shown, code: e.code.rawValue, message: e.message))
                    guard outcome.added.isEmpty else { stopped = (shown, e); break }   // those added stay: a partial add
                    var failed = e.context("cannot add \(shown)")
                    if failed.hint == nil && failed.remedy == nil && !failed.nothingChanged { failed.hint = "it was not added" }
                    throw failed
                }
                let m = record.metadata
                outcome.added.append(.init(id: record.id.hex, path: shown, name: m.name, contentType: m.contentType, size: m.size,
                                           sha256: Hex.encode(m.sha256)))
                if !result.json && !result.quiet { Terminal.out(record.id.hex + "\n") }
            } } catch {
                if vault.failure == nil { try? session.finish(outcome: .failed, detail: VaultError.from(error).message) }   // what was committed before the failure stays, durably
                throw error
            }
            let total = inputs.count + skipped.count
            if let stopped {
                // Some files are stored; the error stopped the rest. The history says "partial" and which were added.
                let notTried = inputs.count - outcome.added.count - duplicates - 1
                try session.finish(outcome: .partial, detail: "stopped at \(stopped.shown): \(stopped.error.message)")
                let rest = notTried > 0 ? " (\(notTried) more \(Plural.files(notTried)) not tried)" : ""
                throw VaultError(.partial, "cannot add \(Terminal.printable(stopped.shown)): \(stopped.error.message)",
                                 hint: "\(outcome.added.count) of \(total) \(Plural.files(total)) were added (their ids are above); "
                                     + "\(total - outcome.added.count) were not\(rest)" + Self.advice(stopped.error))
            }
            try session.finish(outcome: duplicates > 0 || !skipped.isEmpty ? .partial : .ok)
            if outcome.added.isEmpty && skipped.isEmpty && duplicates > 0 {   // nothing happened: not a partial success
                throw VaultError(.duplicate, "none of the \(inputs.count) files was added: their contents are already in the vault",
                                 hint: "they are named above; --allow-duplicate adds them anyway")
            }
            if !skipped.isEmpty || duplicates > 0 {
                let why = duplicates == 0 ? "they are named above"
                    : "they are named above; --allow-duplicate adds a file whose contents are already in the vault"
                throw VaultError(.partial, "\(skipped.count + duplicates) of \(total) \(Plural.files(total)) were not added", hint: why)
            }
        }
    }
}
