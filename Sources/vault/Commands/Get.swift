import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
    /// `vault get`: decrypt one document.
    struct Get: VaultSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Decrypt one document to a file or standard output.",
            discussion: """
                With -o FILE the plaintext goes to a temporary file beside FILE that is renamed into \
                place only after every chunk has authenticated, so a damaged document never leaves a \
                partial file. Binary content is never written to a terminal.

                Examples:
                  vault get scan.pdf -o scan.pdf
                  vault get 79d6 > notes.txt
                  vault get 79d6 -o copy.pdf --force
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("A unique id prefix (4+ digits) or an exact name.", valueName: "id-or-name"))
        var document: String

        @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file (mode 0600); - for standard output (the default).", valueName: "file"), completion: .file())
        var output: String?

        @Flag(help: "Replace the output file if it exists.")
        var force = false

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            let toStdout = output == nil || output == "-"
            if !toStdout, let path = output {
                switch FileSystem.kind(of: path) {
                case .directory: throw VaultError(.usage, "\(path) is a directory", hint: "give a file name with -o")
                case .file, .other:
                    if !force { throw VaultError(.alreadyExists, "\(path) already exists", hint: "use --force to replace it") }
                case .missing: break
                }
                guard FileSystem.kind(of: FileSystem.directory(of: path)) == .directory else {
                    throw VaultError(.notFound, "cannot write \(path): its directory does not exist")
                }
            }
            let vault = try options.unlock()
            let record = try DocumentSelection.resolve(document, in: vault.records().records)
            let reader = try vault.open(record.id)
            if toStdout {
                if Terminal.isTTY(1) && !ContentType.isText(reader.metadata.contentType) {
                    throw VaultError(.usage, "refusing to write \(reader.metadata.contentType) data to a terminal",
                                     hint: "use -o FILE, or redirect standard output")
                }
                while let batch = try reader.next() { try Terminal.stdout.write(batch) }
                return
            }
            try Self.writeFile(reader, to: output!, force: force)
        }

        /// Streams into a temporary file beside `path` (swept there if a killed `get` left one),
        /// fsyncs, then renames it into place: a damaged document or an interrupt leaves no file.
        static func writeFile(_ reader: EnvelopeReader, to path: String, force: Bool) throws {
            AtomicFile.sweep(FileSystem.directory(of: path))
            let output = try AtomicFile(destination: path)
            while let batch = try reader.next() { try output.file.write(batch) }
            try output.commit(replace: force)
        }
    }
}
