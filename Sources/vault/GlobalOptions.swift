import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import VaultCore
import VaultRemote
import VaultS3

/// Options every command takes; they may come before or after the command name.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            """
                The vault directory (default: $VAULT_DIR, else $XDG_DATA_HOME/vault or ~/.local/share/vault); or, for \
                list, get, verify, export and upload, a vault read in place on a store: s3://BUCKET/PREFIX or a \
                remote's name.
                """,
            valueName: "dir"), completion: .directory)
    var vault: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --vault s3://…: the memory for envelope blocks read from the store (default 64M).",
            valueName: "size"),
        transform: ByteCount.option)
    var cacheSize: ByteCount?

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
                Read the password from this file (one trailing newline is ignored) instead of the variables or a \
                prompt; see the password order below.
                """,
            valueName: "file"), completion: .file())
    var passwordFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
                Run this command and take what it prints as the password (a password manager's CLI; split into words \
                like a shell's, nothing expanded), instead of the variables or a prompt.
                """,
            valueName: "command"))
    var passwordCommand: String?

    /// These options, with any unset value taken from `outer` (the options given before the command name).
    func merged(with outer: GlobalOptions) -> GlobalOptions {
        var m = self
        m.vault = vault ?? outer.vault
        m.passwordFile = passwordFile ?? outer.passwordFile
        m.passwordCommand = passwordCommand ?? outer.passwordCommand
        m.cacheSize = cacheSize ?? outer.cacheSize
        return m
    }

    /// What `--vault` names for a command that reads in place.
    enum Target: Equatable {
        /// A vault folder.
        case local
        /// A store: `s3://BUCKET/PREFIX`.
        case store(RemoteLocation)
        /// The name of a remote of the default vault (not also a folder here): resolved once that
        /// vault is unlocked, since its remote list is sealed.
        case remote(String)
    }

    func target() throws -> Target {
        guard let v = vault ?? environment("VAULT_DIR").flatMap({ RemoteLocation.isURL($0) ? $0 : nil }) else {
            return .local
        }
        if RemoteLocation.isURL(v) { return .store(try RemoteLocation(url: v)) }
        guard !v.contains("/"),
              FileSystem.kind(of: v) == .missing,
              RemoteList.isValidName(v) else { return .local }
        var local = self
        local.vault = nil
        guard local.store.exists,
              FileSystem.kind(of: RemoteList.path(local.store)) == .file else { return .local }
        return .remote(v)
    }

    /// $HOME, else the account's home folder.
    private var home: String { environment("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path }

    /// Where vaults read in place keep their cache folders: $XDG_CACHE_HOME/vault, else ~/.cache/vault.
    var cacheRoot: String {
        if let x = environment("XDG_CACHE_HOME"), !x.isEmpty { return x + "/vault" }
        return home + "/.cache/vault"
    }

    /// Unlocks the vault for a command that only reads documents (and may record what it
    /// sends): a local vault, or one read in place on an S3-compatible store.
    func open() async throws -> VaultCore.Vault {
        if let opened = try await openStore() { return opened.vault }
        return try unlock()
    }

    /// The vault on a store these options name, opened in place, with the store's client and
    /// where on it the vault is; nil when they name a local vault.
    func openStore() async throws -> (vault: VaultCore.Vault, client: S3Client, location: RemoteLocation)? {
        let target = try target()
        if case .local = target { return nil }
        let pw: SecretBytes
        let location: RemoteLocation
        let connection: S3Environment.Connection
        switch target {
        case .local: preconditionFailure("internal error: a local vault is opened above")
        case .store(let l):
            // The store's credentials are checked before the password is asked.
            connection = try S3Environment.connection(purpose: "--vault \(vault ?? environment("VAULT_DIR") ?? "")")
            pw = try PasswordReader.read(file: passwordFile, command: passwordCommand)
            location = l
        case .remote(let name):
            // The default vault's sealed list says where the name points (so the password comes
            // first: a name that is not there is said before credentials are asked for); the same
            // password then opens the store (it holds the same vault).
            pw = try PasswordReader.read(file: passwordFile, command: passwordCommand)
            location = try remote(name, password: pw)
            connection = try S3Environment.connection(purpose: "--vault \(name)")
        }
        let client = connection.client()
        RemoteClients.keep(client)
        do {
            let opened = try await RemoteVault.open(
                location, client: client, cacheRoot: cacheRoot, password: pw,
                cacheBytes: Int(cacheSize?.value ?? 64 << 20))
            Terminal.warnRefusedTombstones(opened.refusedTombstones)
            return (opened.vault, client, location)
        } catch let e as VaultError {
            throw e
        } catch {
            throw VaultError(.storeUnavailable, "\(location): \(error)")
        }
    }

    /// The vault directory: `--vault`, `$VAULT_DIR`, `$XDG_DATA_HOME/vault`, or `~/.local/share/vault`.
    var store: VaultStore {
        if let v = vault { return VaultStore(root: v) }
        if let v = environment("VAULT_DIR"), !v.isEmpty { return VaultStore(root: v) }
        if let x = environment("XDG_DATA_HOME"), !x.isEmpty { return VaultStore(root: x + "/vault") }
        return VaultStore(root: home + "/.local/share/vault")
    }

    /// Reads the password and unlocks the vault (one Argon2id run).
    func unlock() throws -> VaultCore.Vault {
        try requireLocal()
        try requireFolder()
        let store = self.store
        try checkExists(store)
        let password = try PasswordReader.read(file: passwordFile, command: passwordCommand)
        return try store.unlock(password: password)
    }

    /// Reads the password here, then unlocks on another thread (see ``PendingVault``).
    func unlockInBackground() throws -> PendingVault {
        try requireLocal()
        try requireFolder()
        let store = self.store
        try checkExists(store)
        return PendingVault(
            store: store, password: try PasswordReader.read(file: passwordFile, command: passwordCommand))
    }
}

extension GlobalOptions {
    /// Fails before any password is asked for when there is no vault at `store`; the hint
    /// creates one where this command looked (`vault init` alone would make the default one).
    func checkExists(_ store: VaultStore) throws {
        do {
            _ = try store.unlockCheckExists()
        } catch var e as VaultError {
            if let v = vault {
                e.hint = "check the path, or create a vault there with 'vault init --vault \(v)'"
            } else if let v = environment("VAULT_DIR"), !v.isEmpty {
                e.hint = "check VAULT_DIR, or create a vault there with 'vault init' (VAULT_DIR=\(v))"
            }
            throw e
        }
    }

    /// `--vault NAME` without a `/` that names no folder here: a remote of the default vault
    /// (this command needs a folder), or nothing at all — said so, rather than "no vault at NAME".
    func requireFolder() throws {
        guard let name = vault,
              !name.contains("/"),
              FileSystem.kind(of: name) == .missing,
              RemoteList.isValidName(name) else { return }
        var local = self
        local.vault = nil
        guard local.store.exists else { return }  // no default vault to have remotes: "no vault at NAME" says it
        guard FileSystem.kind(of: RemoteList.path(local.store)) == .file else { throw noVaultOrRemote(name, known: []) }
        let location = try remote(name, password: try PasswordReader.read(file: passwordFile, command: passwordCommand))
        throw VaultError(
            .usage, "this command needs a local vault; '\(name)' is the remote \(location)",
            hint: "make a replica with 'vault clone \(location) --vault NEW-FOLDER'")
    }

    /// Where the default vault's remote `name` points (one unlock of the default vault).
    /// - Throws: ``VaultError/Code/notFound`` (``noVaultOrRemote(_:known:)``) when it has none of that name.
    private func remote(_ name: String, password: SecretBytes) throws -> RemoteLocation {
        var local = self
        local.vault = nil
        let list = try RemoteList.load(try local.store.unlock(password: password))
        guard let remote = list.remotes.first(where: { $0.name == name }) else {
            throw noVaultOrRemote(name, known: list.remotes.map(\.name))
        }
        return try RemoteLocation(url: remote.url)
    }

    /// `--vault NAME` that is neither a folder nor a remote (one removed, or mistyped).
    func noVaultOrRemote(_ name: String, known: [String]) -> VaultError {
        VaultError(
            .notFound, "no vault at \(name), and the vault has no remote named '\(name)'",
            hint: (known.isEmpty ? "it has no remotes" : "its remotes: " + known.joined(separator: ", "))
                + "; a new vault folder is made with 'vault init --vault ./\(name)'")
    }

    /// Fails when `--vault` names a store: the command needs a local vault.
    /// - Parameter hint: what to do instead (by default: make a replica).
    func requireLocal(hint: String? = nil) throws {
        if let v = vault, RemoteLocation.isURL(v) {
            throw VaultError(
                .usage,
                """
                    this command needs a local vault; \(v) can be read in place only by list, get, verify, export, \
                    upload, log and audit (and served by receive)
                    """,
                hint: hint ?? "make a replica with 'vault clone \(v) --vault NEW-FOLDER'")
        }
    }
}

/// S3 clients of vaults read in place live as long as the process (their connections close with it).
enum RemoteClients {
    // nonisolated(unsafe): accessed only under `lock`.
    nonisolated(unsafe) private static var clients: [S3Client] = []
    private static let lock = NIOLock()
    static func keep(_ client: S3Client) { lock.withLock { clients.append(client) } }
}

extension VaultStore {
    /// Fails with a clear message before asking for a password if there is no vault here.
    func unlockCheckExists() throws -> Bool {
        switch FileSystem.kind(of: root) {
        case .missing:
            throw VaultError(
                .notFound, "no vault at \(root)", hint: "create one with 'vault init', or pass --vault DIR")
        case .directory where exists:
            return true
        default:
            throw VaultError(
                .notFound, "\(root) is not a vault (it has no vault.json)", hint: "create one with 'vault init'")
        }
    }
}

/// A command body run with the CLI's error reporting: a ``VaultError`` is printed as
/// `vault: ...` with its hint, and the process exits with the documented code.
protocol VaultSubcommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    func execute(_ options: GlobalOptions) async throws
}

extension VaultSubcommand {
    func run(parent: GlobalOptions) async throws {
        Platform.ignoreFileSizeSignal()
        do {
            try await execute(global.merged(with: parent))
        } catch let e as VaultError {
            Terminal.report(e)
            throw ExitCode(ExitStatus.code(for: e))
        }
    }
}
