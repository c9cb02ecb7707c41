import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultRemote
import VaultS3

/// What push, pull and clone share: objects in flight, progress, and how a run is reported.
struct TransferOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Objects in flight at once.", valueName: "n"))
    var parallel: Int = 4

    @Option(
        help: ArgumentHelp(
            "Seconds a request may go without progress; a whole request may take this plus its bytes at 256 KiB/s.",
            valueName: "seconds"))
    var timeout: Double = 60

    @OptionGroup var progress: ProgressOptions

    @Flag(
        help:
            """
                Print the result as one JSON object on standard output (schemas: docs/schemas, installed in \
                share/doc/vault/schemas).
                """
    )
    var json = false

    /// True when the summary line goes on stderr: not with `--quiet`, `--json` or `--progress json`.
    var printsSummary: Bool { progress.printsSummary && !json }

    /// `push --json`.
    struct PushResult: Encodable {
        var remote: String
        var sent: [String]
        var sentBytes: UInt64
        var alreadyThere: Int
        var tombstones: Int
        var refusedTombstones: [String]
        var created: Bool
        var passwordCarried: Bool
        var seconds: Double
    }

    /// `pull --json` and `clone --json`.
    struct PullResult: Encodable {
        struct Rejected: Encodable { var key, code, message: String }
        var remote: String
        var fetched: [String]
        var fetchedBytes: UInt64
        var removed: [String]
        var rejected: [Rejected]
        var refusedTombstones: [String]
        var seconds: Double
    }

    func validate() throws {
        if !(1...32).contains(parallel) { throw ValidationError("--parallel must be 1 to 32.") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds.") }
    }

    /// The local vault (unlocked), the store `remote` names, and a client of it.
    func open(
        _ remote: String?, _ options: GlobalOptions, purpose: String
    ) throws -> (VaultCore.Vault, RemoteLocation, S3Client) {
        try options.requireLocal()
        let store = options.store
        try options.checkExists(store)
        let connection = try S3Environment.connection(purpose: purpose)  // checked before the password is asked
        let vault = try options.unlock()
        let location = try RemoteList.load(vault).resolve(remote).location
        return (vault, location, connection.client(timeout: timeout))
    }

    /// Runs `body` with a progress bar or events (cleared before any summary or error); failures
    /// that are not `VaultError`s (the network) become exit 75.
    func run<R>(
        _ location: RemoteLocation, label: String,
        _ body: (@escaping @Sendable (TransferProgress) -> Void) async throws -> R
    ) async throws -> R {
        let renderer = ProgressRenderer(mode: progress.resolved)
        defer { renderer.clear() }
        do {
            return try await body { renderer.handle($0, label: label) }
        } catch var e as VaultError {
            if e.code == .storeUnavailable && e.hint == nil {
                e.hint = "run the command again: finished objects are not sent or fetched twice"
            }
            throw e
        } catch {
            throw VaultError(
                .storeUnavailable, "\(location): \(error)",
                hint: "run the command again: finished objects are not sent or fetched twice")
        }
    }
}
