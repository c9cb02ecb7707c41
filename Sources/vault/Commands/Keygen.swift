import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension VaultCommand {
    /// `vault keygen`: an age identity for a back office that takes sealed deliveries.
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make an age identity file (0600) and print its recipient.",
            discussion: """
                The file is in age's format (age-keygen's), so age -d -i FILE opens what vault seals \
                to its recipient, and vault receive --identity FILE takes sealed batches. The recipient \
                (age1…, or age1pq1… with --post-quantum) is printed on standard output: give it to the \
                stations (vault destination add … --recipient, or vault init --capture-for FILE for a \
                capture-only station). The identity is never printed; an \
                existing file is never replaced. See docs/EXPORT.md.

                Examples:
                  vault keygen --out office.key
                  vault keygen --post-quantum --out office-pq.key
                """)

        @Option(help: ArgumentHelp("The identity file to create.", valueName: "file"), completion: .file())
        var out: String

        @Flag(help: "A post-quantum hybrid identity (ML-KEM-768 + X25519, age v1.3's age1pq1… recipients).")
        var postQuantum = false

        func run() throws {
            do {
                if FileSystem.kind(of: out) != .missing {
                    throw VaultError(
                        .alreadyExists, "\(out) already exists; it is not replaced",
                        hint: "give another --out file, or remove that one first if you mean to")
                }
                let identity = try AgeIdentity.generate(postQuantum: postQuantum)
                let created = UTCTime(Date()).iso8601
                let text = "# created: \(created)\n# public key: \(identity.recipient)\n\(identity.secretText)\n"
                let f = try AtomicFile(destination: out, permissions: .ownerReadWrite)
                try f.file.write(Array(text.utf8))
                try f.commit(replace: false)
                Terminal.out("\(identity.recipient)\n")
            } catch let e as VaultError {
                Terminal.report(e)
                throw ExitCode(ExitStatus.code(for: e))
            }
        }
    }
}
