import ArgumentParser
import Foundation
import VaultCore

/// Options every command takes; they may come before or after the command name.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The vault directory (default: $VAULT_DIR, else $XDG_DATA_HOME/vault or ~/.local/share/vault).", valueName: "dir"), completion: .directory)
    var vault: String?

    @Option(name: .long, help: ArgumentHelp("Read the password from this file (one trailing newline is ignored) instead of $VAULT_PASSWORD or a prompt.", valueName: "file"), completion: .file())
    var passwordFile: String?

    /// These options, with any unset value taken from `outer` (the options given before the command name).
    func merged(with outer: GlobalOptions) -> GlobalOptions {
        var m = self
        m.vault = vault ?? outer.vault
        m.passwordFile = passwordFile ?? outer.passwordFile
        return m
    }

    /// The vault directory: `--vault`, `$VAULT_DIR`, `$XDG_DATA_HOME/vault`, or `~/.local/share/vault`.
    var store: VaultStore {
        if let v = vault { return VaultStore(root: v) }
        if let v = environment("VAULT_DIR"), !v.isEmpty { return VaultStore(root: v) }
        if let x = environment("XDG_DATA_HOME"), !x.isEmpty { return VaultStore(root: x + "/vault") }
        return VaultStore(root: (environment("HOME") ?? NSHomeDirectory()) + "/.local/share/vault")
    }

    /// Reads the password and unlocks the vault (one Argon2id run).
    func unlock() throws -> VaultCore.Vault {
        let store = self.store
        _ = try store.unlockCheckExists()
        let password = try PasswordReader.read(file: passwordFile)
        return try store.unlock(password: password)
    }
}

extension VaultStore {
    /// Fails with a clear message before asking for a password if there is no vault here.
    func unlockCheckExists() throws -> Bool {
        switch FileSystem.kind(of: root) {
        case .missing:
            throw VaultError(.notFound, "no vault at \(root)", hint: "create one with 'vault init', or pass --vault DIR")
        case .directory where exists:
            return true
        default:
            throw VaultError(.notFound, "\(root) is not a vault (it has no vault.json)", hint: "create one with 'vault init'")
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
