import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension VaultCommand {
    /// `vault import --rncryptor`: bring RNCryptor v3 files in as documents.
    struct Import: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import RNCryptor v3 or age files as documents, verified before they count.",
            discussion: """
                Each file is read once, in constant memory: its HMAC is computed and its AES-256-CBC \
                decrypted as it streams into a new sealed envelope, and the document is committed only \
                when the HMAC (constant-time) and the padding check out; otherwise nothing is added and \
                the error names the file and why (hmac-mismatch, bad-padding, unsupported-version, \
                truncated). Password-based files take the RNCryptor password from --from-password-file, \
                $VAULT_IMPORT_PASSWORD or a prompt (it may differ from the vault's); key-based files \
                need --from-key-file. age v1 files (what age -r writes, X25519 or post-quantum \
                recipients) need --identity FILE: each chunk is authenticated as it streams, and a \
                file that fails adds nothing. A file whose contents are already in the vault is \
                skipped, so an interrupted import can simply be run again.

                Examples:
                  vault import --rncryptor scans/*.rncryptor --tag legacy
                  vault import --rncryptor -r old-app-export/ --skip-bad --progress bar
                  vault import --rncryptor photo.enc --from-key-file keys.bin --remove-source
                  vault import --age --identity office.key inbox/*.age
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand
        @OptionGroup var progressOptions: ProgressOptions

        @Flag(help: "The files are RNCryptor v3 messages.")
        var rncryptor = false

        @Flag(help: "The files are age v1 files (age-encryption.org/v1), opened with --identity.")
        var age = false

        @Option(
            name: .customLong("identity"),
            help: ArgumentHelp(
                "With --age: an age identity file (age-keygen's or vault keygen's); repeatable.", valueName: "file"),
            completion: .file())
        var identities: [String] = []

        @Argument(
            help: ArgumentHelp("RNCryptor or age files; folders need -r.", valueName: "path"), completion: .file())
        var paths: [String]

        @Flag(name: [.short, .customLong("recursive")], help: "Import the files inside folders, recursively.")
        var recursive = false

        @Option(
            help: ArgumentHelp(
                "Read the RNCryptor password from this file (one trailing newline is ignored).", valueName: "file"),
            completion: .file())
        var fromPasswordFile: String?

        @Option(
            help: ArgumentHelp(
                """
                For key-based files: a file holding the 32-byte encryption key then the 32-byte HMAC key (64 \
                bytes, or 128 hex digits).
                """,
                valueName: "file"),
            completion: .file())
        var fromKeyFile: String?

        @Option(
            help:
                "The document name (default: the file name without .rncryptor, .enc or .age). Only with a single file.")
        var name: String?

        @Option(
            name: .customLong("type"),
            help: ArgumentHelp("The MIME type (default: detected from the decrypted content).", valueName: "mime"))
        var contentType: String?

        @Option(
            name: .customLong("tag"),
            help: ArgumentHelp("A tag for every imported document; repeat for several.", valueName: "tag"))
        var tags: [String] = []

        @Flag(help: "Delete each source file once its document is committed and the vault synced.")
        var removeSource = false

        @Flag(help: "Go on after a file that fails (it is named; exit code 2 at the end).")
        var skipBad = false

        @Flag(help: "Import a file even when its contents are already in the vault.")
        var allowDuplicate = false

        @OptionGroup var result: ResultOptions

        func validate() throws {
            if rncryptor == age { throw ValidationError("Give --rncryptor or --age: the format of the files.") }
            if age && identities.isEmpty { throw ValidationError("--age needs --identity FILE.") }
            if !age && !identities.isEmpty { throw ValidationError("--identity is for --age files.") }
            if age && (fromKeyFile != nil || fromPasswordFile != nil) {
                throw ValidationError("--from-key-file and --from-password-file are for --rncryptor files.")
            }
            if paths.isEmpty { throw ValidationError("Give at least one file to import.") }
            if paths.contains("-") { throw ValidationError("import reads files, not standard input.") }
            if name != nil && paths.count > 1 { throw ValidationError("--name needs exactly one path.") }
            if fromKeyFile != nil && fromPasswordFile != nil {
                throw ValidationError("Give --from-key-file or --from-password-file, not both.")
            }
        }

        /// `import --json`.
        struct Result: Encodable {
            struct Imported: Encodable { var id, path, name, contentType: String; var size: UInt64; var sha256: String }
            struct NotImported: Encodable { var path, code, message: String }
            var imported: [Imported] = []
            var failed: [NotImported] = []
            var skipped: [NotImported] = []

            init(_ o: Importer.Outcome) {
                imported = o.imported.map { i in
                    let m = i.record.metadata
                    return Imported(
                        id: i.record.id.hex, path: i.path, name: m.name, contentType: m.contentType, size: m.size,
                        sha256: Hex.encode(m.sha256))
                }
                failed = o.failed.map {
                    NotImported(path: $0.path, code: $0.error.code.rawValue, message: $0.error.message)
                }
                skipped = o.skipped.map {
                    NotImported(path: $0.path, code: $0.error.code.rawValue, message: $0.error.message)
                }
            }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            // Every input and the RNCryptor credentials before the vault password.
            let (inputs, unnamed) = try InputFiles.expandReporting(
                paths, recursive: recursive, stdinName: "", verb: "import")
            if inputs.isEmpty, let first = unnamed.first {
                throw VaultError(
                    .usage, "\(Terminal.printable(first.shown)) was not imported: \(first.error.message)",
                    hint: "rename it; nothing was imported")
            }
            if inputs.count > 1 && name != nil {
                throw VaultError(.usage, "--name needs exactly one file, but \(paths[0]) holds \(inputs.count)")
            }
            let decryption: Importer.Decryption =
                age ? .age(try AgeIdentityFiles.read(identities)) : .rncryptor(try credentials())
            let vault = try options.unlock()
            let renderer = ProgressRenderer(mode: progressOptions.resolved)
            for skip in unnamed {
                Terminal.warn("\(Terminal.printable(skip.shown)) was not imported: \(skip.error.message)")
            }
            var importOptions = Importer.Options()
            (importOptions.contentType, importOptions.tags, importOptions.allowDuplicate) = (
                contentType, tags, allowDuplicate
            )
            (importOptions.removeSource, importOptions.skipBad) = (removeSource, skipBad)
            let json = result.json
            let importer = Importer(
                vault: vault, decryption: decryption, options: importOptions,
                failedBefore: unnamed.map { ($0.shown, $0.error) }
            ) { event in
                if case .imported(_, let record) = event, !json { Terminal.out(record.id.hex + "\n") }
                renderer.handle(event)
            }
            let started = Date()
            defer { if json { Terminal.out(JSONOutput.line(Result(importer.outcome))) } }
            do {
                try importer.run(inputs.map { Importer.File(path: $0.path, name: name ?? Self.documentName($0.name)) })
            } catch {
                renderer.clear()
                throw error
            }
            renderer.clear()
            let outcome = importer.outcome
            if progressOptions.printsSummary && !result.json {
                let bytes = outcome.imported.reduce(UInt64(0)) { $0 + $1.record.metadata.size }
                Terminal.err(
                    "vault: imported \(outcome.imported.count) of \(inputs.count) file\(inputs.count == 1 ? "" : "s") "
                        + "(\(Terminal.size(bytes))) in \(Seconds.tenths(Date().timeIntervalSince(started))) s; "
                        + "\(outcome.failed.count) failed, \(outcome.skipped.count) skipped (already in the vault)")
            }
            if !outcome.failed.isEmpty {
                throw VaultError(
                    .partial, "\(outcome.failed.count) of \(Plural.count(inputs.count, "file")) could not be imported",
                    hint: "they are named above")
            }
        }

        /// The RNCryptor credentials: the two keys, or the password.
        private func credentials() throws -> RNCryptorKeys {
            guard let fromKeyFile else {
                return try RNCryptorKeys(password: PasswordReader.read(file: fromPasswordFile, from: .rncryptor))
            }
            let raw = try Self.readKeyFile(fromKeyFile)
            // 64 raw bytes, or 128 hex digits (and a newline).
            let bytes: SecretBytes = try raw.withUnsafeBytes { whole in
                if whole.count == 2 * RNCryptorFormat.keySize { return raw }
                var b = whole
                while let last = b.last, last == 0x0A || last == 0x0D {
                    b = UnsafeRawBufferPointer(rebasing: b.dropLast())
                }
                guard b.count == 4 * RNCryptorFormat.keySize,
                    b.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit })
                else {
                    throw VaultError(
                        .usage, "\(fromKeyFile) must hold 64 bytes (encryption key, then HMAC key) or 128 hex digits")
                }
                var decoded = [UInt8](repeating: 0, count: 2 * RNCryptorFormat.keySize)
                defer { decoded.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
                for i in decoded.indices { decoded[i] = UInt8(Self.nibble(b[2 * i]) << 4 | Self.nibble(b[2 * i + 1])) }
                return try decoded.withUnsafeBytes { try SecretBytes(copying: $0) }
            }
            return try bytes.withUnsafeBytes { b in
                try RNCryptorKeys(
                    encryptionKey: SecretBytes(
                        copying: UnsafeRawBufferPointer(rebasing: b[..<RNCryptorFormat.keySize])),
                    hmacKey: SecretBytes(copying: UnsafeRawBufferPointer(rebasing: b[RNCryptorFormat.keySize...])))
            }
        }

        /// A key file's bytes (at most 256), straight into secret memory.
        private static func readKeyFile(_ path: String) throws -> SecretBytes {
            let file: OpenFile
            do { file = try OpenFile.openForReading(path) } catch let e as VaultError {
                throw VaultError(e.code, "key file: \(e.message)", hint: e.hint, remedy: e.remedy)
            }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 257, alignment: 1)
            defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
            let n = try file.readFully(into: buffer)
            guard n <= 256 else { throw VaultError(.usage, "\(path) is too long for a key file") }
            return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }

        private static func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            default: c - 0x61 + 10
            }
        }

        /// The file name without an `.rncryptor`, `.enc` or `.age` suffix (any case).
        static func documentName(_ fileName: String) -> String {
            for suffix in [".rncryptor", ".enc", ".age"]
            where fileName.lowercased().hasSuffix(suffix) && fileName.count > suffix.count {
                return String(fileName.dropLast(suffix.count))
            }
            return fileName
        }
    }
}
