import ArgumentParser
import VaultCore

/// `--recipient` and `--recipients-file`: seal what leaves to age recipients (docs/EXPORT.md,
/// "Sealed payloads"). Recipients are public keys; identities are never read from the command line.
struct SealingOptions: ParsableArguments {
    @Option(
        name: .customLong("recipient"),
        help: ArgumentHelp(
            "Seal every document and its metadata to this age recipient (age1… or age1pq1…); repeatable.",
            valueName: "age1…"))
    var recipients: [String] = []

    @Option(
        name: .customLong("recipients-file"),
        help: ArgumentHelp(
            "Seal to the recipients in this file (age's format: one per line, # comments).", valueName: "file"),
        completion: .file())
    var recipientsFiles: [String] = []

    /// Every recipient named, in order, each once; refused with any shape but objects (a sealed
    /// entry carries its id and metadata).
    func parsed(shape: PayloadShape = .objects) throws -> [AgeRecipient] {
        var out: [AgeRecipient] = []
        for r in recipients {
            do { out.append(try AgeRecipient(parsing: r)) } catch let e as VaultError {
                throw VaultError(.usage, "--recipient: \(e.message)", hint: e.hint)
            }
        }
        for path in recipientsFiles { out += try Self.recipients(inFile: path) }
        var seen = Set<AgeRecipient>()
        let unique = out.filter { seen.insert($0).inserted }
        guard unique.count <= AgeRecipient.maxRecipients else {
            throw VaultError(.usage, "at most \(AgeRecipient.maxRecipients) recipients, not \(unique.count)")
        }
        if !unique.isEmpty && shape != .objects {
            throw VaultError(
                .usage, "--recipient seals the objects shape only: a sealed entry carries its id and metadata",
                hint: "leave out --shape strings")
        }
        return unique
    }
}

extension SealingOptions {
    /// The recipients in an age recipients file (one a line, `#` comments).
    static func recipients(inFile path: String) throws -> [AgeRecipient] {
        let bytes = try FileSystem.readFile(path, limit: 64 << 10 + 1)
        return try AgeRecipient.parseFile(String(decoding: bytes, as: UTF8.self), path: path)
    }
}

/// `--identity FILE` of `import --age` and `receive`: age identity files, read straight from
/// the files (never from arguments), the bytes wiped once parsed.
enum AgeIdentityFiles {
    static func read(_ paths: [String]) throws -> [AgeIdentity] {
        var out: [AgeIdentity] = []
        for path in paths {
            var bytes = try FileSystem.readFile(path, limit: 64 << 10 + 1)
            defer { bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            out += try AgeIdentity.parseFile(String(decoding: bytes, as: UTF8.self), path: path)
        }
        return out
    }
}
