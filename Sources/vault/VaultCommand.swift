import ArgumentParser
import VaultCore

/// `vault`: the root command.
@main
struct VaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Keep documents password-encrypted on disk and ship them in batches.",
        discussion: """
            The password comes from --password-file FILE, else --password-command CMD, else \
            $VAULT_PASSWORD, else $VAULT_PASSWORD_FILE, else $VAULT_PASSWORD_COMMAND, else a \
            no-echo prompt on the terminal; never from the command line. The options below go \
            before or after any command. 'man vault' is the manual.

            Examples:
              vault init
              vault add scan.pdf && vault list
              vault export --out outbox/
              vault remote add office s3://backoffice/vault && vault push

            Exit codes:
              0    success
              1    internal error
              2    partial success: some documents were skipped, not added, or
                   too large for the server
              3    not found (vault, document, input file, password file, tag,
                   remote)
              4    ambiguous id prefix or name
              64   usage: bad arguments, no password, refused http://, binary to
                   a terminal
              65   damaged data (an envelope, the index, vault.json, the
                   history); audit findings; pulled objects that fail
              69   upload: the server rejected a batch, or its host does not
                   resolve
              73   the output or vault exists, or the document is already in the
                   vault; the store holds another vault
              74   I/O error (permissions, disk full, file too large)
              75   upload, push, pull: retries ran out; run the same command
                   again to resume. Busy: another command holds the vault or
                   the export folder
              76   upload, push, pull: the server refused the credentials
              77   wrong password
              78   upload: no credentials are set and the destination is not
                   known to take none (--no-credentials); nothing was sent
              130  interrupted (SIGINT, SIGTERM, SIGHUP); no partial output is left
            """,
        version: BuildInfo.line,
        subcommands: [
            Init.self, Add.self, Import.self, Restore.self, List.self, Get.self, Tag.self, Remove.self, Verify.self,
            Export.self, Upload.self, Uploads.self, Log.self, Audit.self, Passwd.self,
            Destinations.self, Status.self, Remote.self, Push.self, Pull.self, Clone.self, Receive.self, Keygen.self,
            Version.self
        ]
    )

    @OptionGroup(visibility: .hidden) var global: GlobalOptions

    /// Before any parsing: no core dumps, large buffers off the heap and the heap trimmed between documents (the
    /// library leaves its host's heap alone unless asked), secrets out of the environment, and interrupts that
    /// remove temporary files, restore the terminal, print `vault: interrupted` and exit 130.
    static func main() async {
        do {
            try Interrupts.disableCoreDumps()
            ProcessMemory.mapLargeBuffersDirectly()
            ProcessMemory.trimHeapBetweenDocuments()
            try EnvironmentSecrets.capture()
            IOReport.install()
            #if DEBUG
            // Tests stop a command at a named moment (docs/SECURITY.md); a release build has no such hook.
            if let point = Platform.environment("VAULT_PAUSE_AT"),
                let marker = Platform.environment("VAULT_PAUSE_FILE")
            {
                PausePoint.arm(point, marker: marker)
            }
            #endif
            VaultNotices.install { Terminal.warn($0) }
            DestinationIdentity.useS3(S3Environment.place())
            try Interrupts.install { _ in
                Terminal.interrupted()
                Platform.exitNow(ExitStatus.interrupted)
            }
        } catch let e as VaultError {
            Terminal.report(e)
            Platform.exit(ExitStatus.failure)
        } catch {
            Platform.exit(ExitStatus.failure)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            if var run = command as? AsyncParsableCommand { try await run.run() } else { try command.run() }
        } catch {
            exitReporting(error, arguments: arguments)
        }
        Platform.exit(0)
    }
}
