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
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("Files to add; - reads standard input; directories need -r.", valueName: "path"))
        var paths: [String]

        @Option(help: "The document name (default: the file name). Only with a single path.")
        var name: String?

        @Option(name: .customLong("type"), help: ArgumentHelp("The MIME type (default: detected from the content).", valueName: "mime"))
        var contentType: String?

        @Option(name: .customLong("tag"), help: ArgumentHelp("A tag for every added document; repeat for several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(name: [.short, .customLong("recursive")], help: "Add the files inside directories, recursively (names are paths relative to the directory).")
        var recursive = false

        func validate() throws {
            if paths.isEmpty { throw ValidationError("Give at least one file to add.") }
            if name != nil && paths.count > 1 { throw ValidationError("--name needs exactly one path.") }
            if paths.contains("-") && name == nil { throw ValidationError("Reading standard input (-) needs --name.") }
            if paths.filter({ $0 == "-" }).count > 1 { throw ValidationError("Standard input (-) can be added only once.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            // Check every input before asking for the password or storing anything.
            let inputs = try expandInputs()
            if inputs.count > 1 && name != nil {
                throw VaultError(.usage, "--name needs exactly one file, but \(paths[0]) holds \(inputs.count)")
            }
            let vault = try options.unlock()
            for input in inputs {
                let file = input.path == "-" ? FileDescriptor.standard(0, name: "standard input")
                                             : try FileDescriptor.openForReading(input.path)
                let record: DocumentRecord
                do {
                    record = try vault.add(from: file, name: name ?? input.name, contentType: contentType, tags: tags)
                } catch {
                    let e = VaultError.from(error)
                    throw VaultError(e.code, "cannot add \(input.path == "-" ? "standard input" : input.path): \(e.message)",
                                     hint: e.hint ?? "it was not added", cause: e.cause)
                }
                Terminal.out(record.id.hex + "\n")
            }
        }

        private struct Input { var path: String; var name: String }

        private func expandInputs() throws -> [Input] {
            var out: [Input] = []
            for path in paths {
                if path == "-" { out.append(Input(path: "-", name: name ?? "stdin")); continue }
                switch FileSystem.kind(of: path) {
                case .missing:
                    throw VaultError(.notFound, "\(path): no such file", hint: "nothing was added")
                case .directory:
                    guard recursive else {
                        throw VaultError(.usage, "\(path) is a directory", hint: "use -r to add the files inside it; nothing was added")
                    }
                    let files = try walk(path)
                    if files.isEmpty { Terminal.warn("\(path) holds no files") }
                    out += files
                case .file:
                    out.append(Input(path: path, name: URL(fileURLWithPath: path).lastPathComponent))
                case .other:
                    throw VaultError(.usage, "\(path) is not a regular file", hint: "nothing was added")
                }
                if case .file = FileSystem.kind(of: path), access(path, R_OK) != 0 {
                    throw VaultError(.io, "\(path): permission denied", hint: "nothing was added")
                }
            }
            return out
        }

        /// Regular files under `dir`, sorted, not following symbolic links.
        private func walk(_ dir: String) throws -> [Input] {
            let base = URL(fileURLWithPath: dir).standardizedFileURL.path
            guard let e = FileManager.default.enumerator(atPath: base) else {
                throw VaultError(.io, "cannot list \(dir)")
            }
            var found: [Input] = []
            while let rel = e.nextObject() as? String {
                let full = base + "/" + rel
                var st = stat()
                guard lstat(full, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
                guard access(full, R_OK) == 0 else { throw VaultError(.io, "\(full): permission denied", hint: "nothing was added") }
                found.append(Input(path: full, name: rel))
            }
            return found.sorted { $0.name < $1.name }
        }
    }
}
