#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultUpload

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
        try checkPrintable(user, "VAULT_UPLOAD_USER")
        try checkPrintable(password, "VAULT_UPLOAD_PASSWORD")
        return "Basic " + Data((text(user) + ":" + text(password)).utf8).base64EncodedString()
    }

    /// Whether the environment gives the variable `name`, non-empty: a secret one (moved into
    /// locked memory at start) or a plain one (a file's path, a command).
    static func isSet(_ name: String) -> Bool {
        (environment(name)?.isEmpty == false) || (EnvironmentSecrets.value(name)?.count ?? 0) > 0
    }

    /// What to check when the server refused the credentials: where they came from, in the
    /// order they are read (the environment's token, its file or command, the destination's,
    /// a user and password), or that none were sent.
    static func refusedCredentialsHint(destination: DestinationEntry?) -> String {
        let set = isSet
        if set("VAULT_UPLOAD_TOKEN") { return "check VAULT_UPLOAD_TOKEN" }
        if set("VAULT_UPLOAD_TOKEN_FILE") { return "check the token in the file VAULT_UPLOAD_TOKEN_FILE names" }
        if set("VAULT_UPLOAD_TOKEN_COMMAND") { return "check what VAULT_UPLOAD_TOKEN_COMMAND prints" }
        if let d = destination, let file = d.tokenFile {
            return "check the token in \(Terminal.printable(file)), the file destination '\(d.name)' keeps"
        }
        if let d = destination, d.tokenCommand != nil {
            return "check what the token command destination '\(d.name)' keeps prints"
        }
        if set("VAULT_UPLOAD_USER") { return "check VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD" }
        return "none were sent: the server needs some (set VAULT_UPLOAD_TOKEN, or keep a token source with "
            + "'vault destination set NAME --token-file FILE')"
    }

    /// A credential goes into a header: one holding a control character (a second line of its
    /// file, say) cannot, and is refused here, before anything is sent and without being shown
    /// (an HTTP client's own error would name the header's value).
    static func checkPrintable(_ secret: SecretBytes, _ what: String) throws {
        let clean = secret.withUnsafeBytes { $0.allSatisfy { $0 >= 0x20 && $0 != 0x7F } }
        guard clean else {
            throw VaultError(
                .usage, "\(what) holds a control character (a line break?); nothing was sent",
                hint: "a token is one line: check where it comes from")
        }
    }

    /// Before anything is sent (and, for a URL given, before the password is asked): an upload
    /// with no credentials goes ahead only where the server is known to take none
    /// (`--no-credentials`, or the destination keeps it so); one that says so and has some set
    /// is a contradiction. S3 signs with its own credentials, and plain http:// off loopback
    /// never carries any.
    func checkCredentials(_ options: UploadOptions, destination: DestinationEntry?) throws {
        if noCredentials {
            let given = [
                "VAULT_UPLOAD_TOKEN", "VAULT_UPLOAD_TOKEN_FILE", "VAULT_UPLOAD_TOKEN_COMMAND", "VAULT_UPLOAD_USER",
                "VAULT_UPLOAD_PASSWORD"
            ].contains(where: Self.isSet)
            guard !given else {
                throw VaultError(
                    .usage, "--no-credentials, but credentials are set in the environment",
                    hint: "unset VAULT_UPLOAD_TOKEN (…_FILE, …_COMMAND) and VAULT_UPLOAD_USER/PASSWORD, "
                        + "or drop --no-credentials")
            }
            return
        }
        guard options.target.authorization == nil,
              options.wire.name != .s3,
              destination?.noCredentials != true,
              !options.target.isCleartextOverNetwork else { return }
        let hint =
            destination.map { d in
                "set VAULT_UPLOAD_TOKEN (or VAULT_UPLOAD_TOKEN_FILE, VAULT_UPLOAD_TOKEN_COMMAND), or keep a token "
                    + "source with 'vault destination set \(d.name) --token-file FILE'; if it takes none, "
                    + "'vault destination set \(d.name) --no-credentials'"
            }
            ?? "set VAULT_UPLOAD_TOKEN (or VAULT_UPLOAD_TOKEN_FILE, VAULT_UPLOAD_TOKEN_COMMAND, or "
            + "VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD); if the server takes none, add --no-credentials"
        throw VaultError(
            .uploadNoCredentials, "no upload credentials are set for \(options.target.redacted); nothing was sent",
            hint: hint)
    }

    /// The upload token, read as the vault password is: `VAULT_UPLOAD_TOKEN`, else the file
    /// `VAULT_UPLOAD_TOKEN_FILE` names (one trailing newline dropped), else what the command
    /// `VAULT_UPLOAD_TOKEN_COMMAND` prints; never from argv, never shown. Nil when none is set.
    static func token() throws -> SecretBytes? {
        if let token = EnvironmentSecrets.value("VAULT_UPLOAD_TOKEN"), token.count > 0 {
            try checkPrintable(token, "VAULT_UPLOAD_TOKEN")
            return token
        }
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
            (token, why) = (
                try PasswordReader.fromCommand(command, named: named.command, unlocks: "nothing was sent"),
                empty.command
            )
        } else {
            return nil
        }
        guard token.count > 0 else { throw VaultError(.usage, "the upload token is empty", hint: why) }
        try checkPrintable(token, "the upload token")
        return token
    }
}
