import ArgumentParser
import CVaultBuildInfo
import VaultCore

/// What this binary is: its version, the commit it was built from, how it was built and the
/// libsodium it runs with (restic's `version` command; `vault --version` prints the same line).
enum BuildInfo {
    static let version = "0.2.0"

    static var commit: String { String(cString: vault_build_commit()) }

    /// "release, static" from the install build; else the configuration of a plain `swift build`.
    static var build: String {
        if let flavor = vault_build_flavor() { return String(cString: flavor) }
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    static var platform: String {
        #if os(Linux)
        let os = "linux"
        #elseif os(macOS)
        let os = "macos"
        #else
        let os = "unknown"
        #endif
        #if arch(x86_64)
        return os + "/x86_64"
        #elseif arch(arm64)
        return os + "/arm64"
        #else
        return os + "/unknown"
        #endif
    }

    /// `vault 0.2.0 (commit 1a2b3c4, release, static; libsodium 1.0.18; linux/x86_64)`.
    static var line: String {
        "vault \(version) (commit \(commit), \(build); libsodium \(Libsodium.version); \(platform))"
    }
}

extension VaultCommand {
    /// `vault version`: the same facts as `--version`, or JSON for scripts.
    struct Version: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "version",
            abstract: "Print the version, the source commit, the build and the libsodium in use.",
            discussion: """
                Examples:
                  vault version
                  vault version --json
                """)

        @Flag(help: "Print one JSON object: version, commit, build, libsodium, platform.")
        var json = false

        struct Result: Encodable { var version, commit, build, libsodium, platform: String }

        func run() throws {
            if json {
                Terminal.out(
                    JSONOutput.line(
                        Result(
                            version: BuildInfo.version, commit: BuildInfo.commit, build: BuildInfo.build,
                            libsodium: Libsodium.version, platform: BuildInfo.platform)))
            } else {
                Terminal.out(BuildInfo.line + "\n")
            }
        }
    }
}
