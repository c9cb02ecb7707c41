#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultRemote
import VaultUpload

/// What the CLI adds to an error before it is printed: the libraries name no command, option
/// or environment variable (a test holds them to it), so the words that tell a user which
/// command or variable to reach for are added here, from the error's ``VaultError/Remedy`` or,
/// failing that, its code.
enum Hints {
    /// `error` with its remedy worded (before any hint the library or the command gave) and,
    /// where it has no hint, the one its code calls for.
    static func complete(_ error: VaultError) -> VaultError {
        var e = completed(error)
        if e.nothingChanged { e.hint = [e.hint, "nothing was changed"].compactMap { $0 }.joined(separator: "; ") }
        return e
    }

    private static func completed(_ error: VaultError) -> VaultError {
        var e = error
        if let remedy = e.remedy {
            e.hint = [text(remedy), e.hint].compactMap { $0 }.joined(separator: "; ")
            return e
        }
        switch e.code {
        case .uploadFailed:
            e.hint = [e.hint, "run the same command again to resume"].compactMap { $0 }.joined(separator: "; ")
        case _ where e.hint != nil:
            break
        case .wrongPassword:
            e.hint = PasswordReader.wrongPasswordHint
        case .uploadUnauthorized:
            e.hint = "check VAULT_UPLOAD_TOKEN, or VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD"
        case .storeUnauthorized:
            e.hint = "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"
        case .storeUnavailable:
            e.hint = "check AWS_ENDPOINT_URL and the network"
        default:
            break
        }
        return e
    }

    /// For a command that changes the vault: an I/O error that says the vault cannot be
    /// written gets a hint saying so.
    static func readOnlyVault(_ error: any Error) -> any Error {
        guard var e = error as? VaultError,
              e.code == .io,
              e.hint == nil,
              e.isWriteRefused else { return error }
        e.hint = "this user cannot write to the vault folder: is it read-only (or on a read-only file system)?"
        return e
    }

    /// An error's message with its remedy, for a line of its own (a document left out).
    static func withRemedy(_ e: VaultError) -> String {
        e.remedy.map { e.message + "; " + text($0) } ?? e.message
    }

    /// A remedy as the command that does it.
    static func text(_ remedy: VaultError.Remedy) -> String {
        switch remedy.name {
        case .createVault: "create one with 'vault init'"
        case .listDocuments: "see 'vault list'"
        case .rebuildIndex: "run 'vault verify' to rebuild the index"
        case .auditAndRemoveAgain:
            "run 'vault audit'; 'vault remove \(remedy.document?.hex.prefix(8) ?? "ID")' removes it again"
        case .verifyThenRemoveOrRestore: "run 'vault verify', and remove or restore that document first"
        case .cloneFirst:
            "clone it first with 'vault clone \(remedy.location ?? "URL") --vault NEW-FOLDER', or use a replica"
        case .addRecursively: "use -r to add the files inside it"
        case .openWithIdentity: "give --identity FILE (the office's age identity) to get or export it"
        case .otherIdentity:
            "give the office's identity: the one whose recipient ('age-keygen -y FILE') the station was made for"
        case .pruneUploadJournal: "'vault uploads prune' removes it; the upload then starts afresh"
        case .pushFirst: "push one there first with 'vault push'"
        case .addRemote: "add one with 'vault remote add NAME s3://BUCKET/PREFIX', or give an s3:// URL"
        case .addRemotesAgain: "delete it, then 'vault remote add' the stores again"
        case .addDestination: "add one with 'vault destination add NAME URL', or give a URL"
        case .addDestinationsAgain: "delete it, then 'vault destination add' the destinations again"
        case .pushToNewPrefixOrClone:
            "push to a new prefix with 'vault remote add NAME s3://BUCKET/NEW-PREFIX', "
                + "or clone the store again with its password"
        case .checkBucketAndEndpoint: "create it, or check the URL and AWS_ENDPOINT_URL"
        case .takePasswordChange:
            "run 'vault pull' with this vault's password and give the new one when asked "
                + "(or in VAULT_NEW_PASSWORD): the vault then moves to it"
        case .checkStoreEndpoint: "check the bucket's name and AWS_ENDPOINT_URL (without it, s3:// is AWS)"
        case .useHTTPS: "use https://, or --insecure-http on a network you trust"
        case .dropCredentials: "use https://, or unset VAULT_UPLOAD_TOKEN, VAULT_UPLOAD_USER and VAULT_UPLOAD_PASSWORD"
        case .trustServerCertificate:
            "trust a private certificate authority with --cacert FILE, or check the host name in the URL"
        case .checkHostName: "check the host name in the URL (or the destination's, 'vault destination')"
        case .checkRecipients:
            "none of the office's identities ('vault receive serve --identity') opens what it was sealed to: "
                + "check the destination's recipients ('vault destination')"
        case .checkURLPath: "check the path in the URL (or the destination's, 'vault destination')"
        case .raiseByteLimit:
            "use --max-bytes \(ByteCount.atLeast(remedy.bytes ?? 0)) or more, or leave this document out"
        case .freeSpace: "free some space and run the command again"
        default: remedy.name.rawValue  // a remedy a newer library names and this front end does not word
        }
    }
}

/// Where the documentation a hint names is on this machine: beside an installed binary
/// (`PREFIX/share/doc/vault`), or the source tree's `docs/` for a binary built in it; else
/// the file's name in the source tree (a hint never names a folder that is not there).
enum DocsLocation {
    static func path(_ file: String) -> String {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let bin = URL(fileURLWithPath: exe).deletingLastPathComponent()
        let candidates = [
            bin.appendingPathComponent("../share/doc/vault/" + file),  // PREFIX/bin/vault
            bin.appendingPathComponent("../../docs/" + file),  // .build/debug/vault
            bin.appendingPathComponent("../../../docs/" + file)
        ]  // .build/<triple>/debug/vault
        for c in candidates where FileManager.default.fileExists(atPath: c.standardizedFileURL.path) {
            return c.standardizedFileURL.path
        }
        return "docs/\(file) in vault's source"
    }
}
