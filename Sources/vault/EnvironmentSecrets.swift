#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The secrets the environment may carry, moved at start into secret memory: each value is
/// copied into ``SecretBytes``, overwritten with zeros where the process keeps it (the block
/// `/proc/PID/environ` shows), and unset. Nothing copies the environment into Swift strings
/// before this runs, and nothing reads these variables afterwards.
enum EnvironmentSecrets {
    /// The vault password, an import's password, and the upload credentials.
    static let names = [
        "VAULT_PASSWORD", "VAULT_IMPORT_PASSWORD", "VAULT_NEW_PASSWORD", "VAULT_UPLOAD_TOKEN", "VAULT_UPLOAD_USER",
        "VAULT_UPLOAD_PASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
    ]

    // nonisolated(unsafe): written once by capture() before any command runs, then only read.
    nonisolated(unsafe) private static var values: [String: SecretBytes] = [:]

    /// Moves the variables in ``names`` out of the environment. Call first thing in `main`.
    static func capture() throws {
        for name in names {
            values[name] = try Platform.takeEnvironmentValue(name) { try SecretBytes(copying: $0) }
        }
    }

    /// The value `name` had, if it was set.
    static func value(_ name: String) -> SecretBytes? { values[name] }
}

/// A variable that holds no secret, read without copying the whole environment.
func environment(_ name: String) -> String? {
    Platform.environment(name)
}
