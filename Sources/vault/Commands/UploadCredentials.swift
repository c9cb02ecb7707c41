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
        let token: SecretBytes, why: String
        if let path = environment("VAULT_UPLOAD_TOKEN_FILE"), !path.isEmpty {
            token = try PasswordReader.fromFile(path, named: "VAULT_UPLOAD_TOKEN_FILE")
            why = "the file VAULT_UPLOAD_TOKEN_FILE names is empty"
        } else if let command = environment("VAULT_UPLOAD_TOKEN_COMMAND"), !command.isEmpty {
            token = try PasswordReader.fromCommand(command, named: "VAULT_UPLOAD_TOKEN_COMMAND")
            why = "the command VAULT_UPLOAD_TOKEN_COMMAND runs printed nothing"
        } else {
            return nil
        }
        guard token.count > 0 else { throw VaultError(.usage, "the upload token is empty", hint: why) }
        return token
    }

    /// The token from the file or command `destination` keeps (`vault destination set`); nil
    /// when it keeps neither.
    static func kept(by destination: DestinationEntry) throws -> SecretBytes? {
        let token: SecretBytes, why: String
        if let path = destination.tokenFile {
            token = try PasswordReader.fromFile(path, named: "the token file of destination '\(destination.name)'")
            why = "the token file destination '\(destination.name)' keeps is empty"
        } else if let command = destination.tokenCommand {
            token = try PasswordReader.fromCommand(
                command, named: "the token command of destination '\(destination.name)'")
            why = "the token command destination '\(destination.name)' keeps printed nothing"
        } else {
            return nil
        }
        guard token.count > 0 else { throw VaultError(.usage, "the upload token is empty", hint: why) }
        return token
    }
}
