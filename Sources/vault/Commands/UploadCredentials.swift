#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

extension VaultCommand.Upload {
    /// The `Authorization` header from the credentials taken out of the environment, else
    /// from the token source `destination` keeps.
    static func authorization(destination: DestinationEntry? = nil) throws -> String? {
        func text(_ s: SecretBytes) -> String { s.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        if let token = try token() ?? destination.flatMap({ try kept(by: $0) }) { return "Bearer " + text(token) }
        let user = EnvironmentSecrets.value("VAULT_UPLOAD_USER"),
            password = EnvironmentSecrets.value("VAULT_UPLOAD_PASSWORD")
        guard user != nil || password != nil else { return nil }
        guard let user,
              let password else {
            throw VaultError(.usage, "VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD must be set together")
        }
        return "Basic " + Data((text(user) + ":" + text(password)).utf8).base64EncodedString()
    }

    /// The upload token, read as the vault password is: `VAULT_UPLOAD_TOKEN`, else the file
    /// `VAULT_UPLOAD_TOKEN_FILE` names (one trailing newline dropped), else what the command
    /// `VAULT_UPLOAD_TOKEN_COMMAND` prints; never from argv, never shown. Nil when none is set.
    static func token() throws -> SecretBytes? {
        if let token = EnvironmentSecrets.value("VAULT_UPLOAD_TOKEN"), token.count > 0 { return token }
        return try read(
            file: environment("VAULT_UPLOAD_TOKEN_FILE").flatMap { $0.isEmpty ? nil : $0 },
            command: environment("VAULT_UPLOAD_TOKEN_COMMAND").flatMap { $0.isEmpty ? nil : $0 },
            named: ("VAULT_UPLOAD_TOKEN_FILE", "VAULT_UPLOAD_TOKEN_COMMAND"),
            empty: ("the file VAULT_UPLOAD_TOKEN_FILE names is empty",
                "the command VAULT_UPLOAD_TOKEN_COMMAND runs printed nothing"))
    }

    /// The token from the file or command `destination` keeps (`vault destination set`); nil
    /// when it keeps neither.
    static func kept(by destination: DestinationEntry) throws -> SecretBytes? {
        let d = destination.name
        return try read(
            file: destination.tokenFile, command: destination.tokenCommand,
            named: ("the token file of destination '\(d)'", "the token command of destination '\(d)'"),
            empty: ("the token file destination '\(d)' keeps is empty",
                "the token command destination '\(d)' keeps printed nothing"))
    }

    /// A token read from `file`, else from what `command` prints, as the password is; nil
    /// when neither is given. An empty one is refused with the hint `empty` gives.
    private static func read(
        file: String?, command: String?, named: (file: String, command: String), empty: (file: String, command: String)
    ) throws -> SecretBytes? {
        let token: SecretBytes, why: String
        if let file {
            (token, why) = (try PasswordReader.fromFile(file, named: named.file), empty.file)
        } else if let command {
            (token, why) = (try PasswordReader.fromCommand(command, named: named.command), empty.command)
        } else {
            return nil
        }
        guard token.count > 0 else { throw VaultError(.usage, "the upload token is empty", hint: why) }
        return token
    }
}
