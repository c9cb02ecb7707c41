import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension VaultCommand {
    /// `vault restore`: take envelopes of this vault back in (backups, older stores).
    struct Restore: VaultSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract:
                "Take envelopes of this vault back in, from a backup or a store written before a password change.",
            discussion: """
                Each FILE is one of this vault's envelopes (an objects/<id>.vlt file), of the current key \
                epoch or of one a password change retired: the current password opens them all, through \
                the keyring in vault.json. Every chunk and the SHA-256 are checked before the document is \
                committed, sealed under the current key, with the original's name, type and tags and a \
                new id. An envelope of another vault or a damaged one is named and not taken (exit 65, or \
                2 when others were); one whose contents are already in the vault is skipped (exit 73 with \
                one file) unless --allow-duplicate.

                Examples:
                  vault restore backup-2026-10/objects/3f2a9c0d1e2f30415263748596a7b8c9.vlt
                  vault restore old-store-copy/objects/*.vlt --json
                """)

        @OptionGroup(visibility: .hidden) var global: GlobalOptions
        @ParentCommand var root: VaultCommand

        @Argument(
            help: ArgumentHelp("Envelope files (objects/<id>.vlt) of this vault.", valueName: "file"),
            completion: .file())
        var files: [String]

        @Flag(help: "Restore a document even when its contents are already in the vault.")
        var allowDuplicate = false

        @OptionGroup var result: OutputOptions

        /// `restore --json`.
        struct Result: Encodable {
            struct Restored: Encodable { var id, path, name, contentType: String; var size: UInt64; var sha256: String }
            struct NotRestored: Encodable { var path, code, message: String }
            var restored: [Restored] = []
            var notRestored: [NotRestored] = []
        }

        func validate() throws {
            if files.isEmpty { throw ValidationError("Give at least one envelope file to restore.") }
        }

        func run() async throws { try await run(parent: root.global) }

        func execute(_ options: GlobalOptions) async throws {
            for f in files where FileSystem.kind(of: f) != .file {
                throw VaultError(.notFound, "\(f): no such file", hint: "nothing was restored")
            }
            let vault = try options.unlock()
            var outcome = Result()
            defer { if result.json { Terminal.out(JSONOutput.line(outcome)) } }
            let session = try AddSession(vault: vault, operation: .import)
            var damaged = 0, duplicates = 0
            for path in files {
                do {
                    let r = try vault.restore(envelopeAt: path, into: session, allowDuplicate: allowDuplicate)
                    outcome.restored.append(
                        .init(
                            id: r.id.hex, path: path, name: r.metadata.name, contentType: r.metadata.contentType,
                            size: r.metadata.size, sha256: Hex.encode(r.metadata.sha256)))
                    if !result.json && !result.quiet { Terminal.out(r.id.hex + "\n") }
                } catch let e as VaultError where e.code.isDamage || e.code == .duplicate {
                    Terminal.warn("\(Terminal.printable(path)) was not restored: \(e.message)")
                    outcome.notRestored.append(.init(path: path, code: e.code.rawValue, message: e.message))
                    if e.code == .duplicate { duplicates += 1 } else { damaged += 1 }
                }
            }
            try session.finish(
                outcome: outcome.notRestored.isEmpty ? .ok : outcome.restored.isEmpty ? .failed : .partial,
                detail: "restored from envelopes")
            guard !outcome.notRestored.isEmpty else { return }
            if !outcome.restored.isEmpty {
                throw VaultError(
                    .partial,
                    """
                        \(outcome.notRestored.count) of \(Plural.count(files.count, "envelope")) \
                        \(outcome.notRestored.count == 1 ? "was" : "were") not restored
                        """,
                    hint: "they are named above")
            }
            throw VaultError(
                damaged > 0 ? .headerAuthenticationFailed : .duplicate,
                "nothing was restored",
                hint: damaged > 0
                    ? "the files are damaged, or not this vault's envelopes"
                    : "use --allow-duplicate to restore them anyway")
        }
    }
}
