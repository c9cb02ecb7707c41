import ArgumentParser
import VaultCore

/// `vault`: the root command.
@main
struct VaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Keep documents password-encrypted on disk and ship them in batches.",
        discussion: """
            The password comes from --password-file FILE, else $VAULT_PASSWORD, else a no-echo \
            prompt on the terminal; never from the command line. Exit codes are listed in docs/CLI.md.
            """,
        version: "0.1.0",
        subcommands: [Init.self, Add.self, List.self, Get.self, Remove.self, Verify.self, Export.self, Upload.self]
    )

    @OptionGroup var global: GlobalOptions
}
