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
                  vault get 79d6 --range 0-1023 > head.bin

                --range START-END (byte offsets, inclusive, as in HTTP Range) decrypts and \
                authenticates only the 64 KiB chunks that cover the range; END past the end of the \
                document is taken as its last byte.
                """)

        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(help: ArgumentHelp("A unique id prefix (4+ digits) or an exact name.", valueName: "id-or-name"))
        var document: String

        @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file (mode 0600); - for standard output (the default).", valueName: "file"), completion: .file())
        var output: String?

        @Flag(help: "Replace the output file if it exists.")
        var force = false

        @Option(help: ArgumentHelp("Only bytes START through END (inclusive, 0-based, as in HTTP Range).", valueName: "START-END"))
        var range: String?

        /// `START-END` with START <= END; `START-` (to the end) is allowed too.
        static func parse(range text: String) throws -> (UInt64, UInt64?) {
            let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let start = UInt64(parts[0]), parts[1].isEmpty || UInt64(parts[1]) != nil else {
                throw VaultError(.usage, "--range \(text) is not START-END", hint: "byte offsets, inclusive: --range 0-1023")
            }
            let end = UInt64(parts[1])
            if let end, end < start { throw VaultError(.usage, "--range \(text) ends before it starts") }
            return (start, end)
        }

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
            let bounds = try range.map(Self.parse(range:))
            let vault = try await options.open()
            let record = try vault.resolve(document)
            if let (start, end) = bounds {
                let reader = try vault.randomAccess(record.id)
                guard start < reader.size else {
                    throw VaultError(.usage, "--range \(range!) starts past the end of \(record.metadata.name) (\(reader.size) bytes)")
                }
                if toStdout && Terminal.isTTY(1) && !ContentType.isText(reader.metadata.contentType) {
                    throw VaultError(.usage, "refusing to write \(reader.metadata.contentType) data to a terminal",
                                     hint: "use -o FILE, or redirect standard output")
                }
                let last = min(end ?? (reader.size - 1), reader.size - 1)
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
            let reader = try vault.open(record.id)
            if toStdout {
                if Terminal.isTTY(1) && !ContentType.isText(reader.metadata.contentType) {
                    throw VaultError(.usage, "refusing to write \(reader.metadata.contentType) data to a terminal",
                                     hint: "use -o FILE, or redirect standard output")
                }
                // Text to a terminal: printable characters only, so a document cannot send the
                // terminal escape sequences (clear the screen, retitle the window, ...).
                var screen = Terminal.isTTY(1) ? PrintableText() : nil
                while let batch = try reader.next() {
                    try screen?.check(batch, name: record.metadata.name)
                    try Terminal.stdout.write(batch)
                }
                return
            }
            try Self.writeFile(reader, to: output!, force: force)
        }

        /// Streams into a temporary file beside `path` (swept there if a killed `get` left one),
        /// fsyncs, then renames it into place: a damaged document or an interrupt leaves no file.
        static func writeFile(_ reader: EnvelopeReader, to path: String, force: Bool) throws {
            let output = try atomicOutput(path)
            while let batch = try reader.next() { try output.file.write(batch) }
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
            let bad = afterC2 ? (0x80...0x9F).contains(b) : (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F
            if bad {
                throw VaultError(.usage, "refusing to write \(Terminal.printable(name)) to a terminal: it holds a control character (byte \(String(format: "0x%02X", b)) at offset \(offset)) that would drive the terminal",
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
