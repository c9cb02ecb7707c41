import SystemPackage

/// The one error type of VaultCore.
///
/// Every failure carries a ``Code`` that callers can switch on (the CLI maps codes to exit
/// codes; the fixture vectors name them in their `expect:` line), a message that names the
/// file or document involved, an optional hint saying what to do next, and the underlying
/// cause when there is one. Messages never contain a password, a key or document contents.
public struct VaultError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is. Extensible: new codes are new static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The password does not unlock the vault or envelope.
        public static let wrongPassword = Code(rawValue: "wrong-password")
        /// The bytes are not a vault envelope, or a header field is out of range.
        public static let headerMalformed = Code(rawValue: "header-malformed")
        /// The envelope was written by a format version this build does not read.
        public static let unsupportedVersion = Code(rawValue: "unsupported-version")
        /// The envelope asks for password-hashing parameters above the `sensitive` level.
        public static let kdfParametersRejected = Code(rawValue: "kdf-parameters-rejected")
        /// The header (wrapped key or metadata) failed authentication.
        public static let headerAuthenticationFailed = Code(rawValue: "header-authentication-failed")
        /// A payload chunk failed authentication (bit flip, reordering, foreign chunk).
        public static let chunkAuthenticationFailed = Code(rawValue: "chunk-authentication-failed")
        /// The data ends before its final chunk.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the final chunk.
        public static let trailingData = Code(rawValue: "trailing-data")
        /// The decrypted plaintext does not match the digest recorded at add time.
        public static let digestMismatch = Code(rawValue: "digest-mismatch")
        /// A vault file other than an envelope (vault.json, index) is damaged.
        public static let vaultDamaged = Code(rawValue: "vault-damaged")
        /// No document, vault or file by that name or id.
        public static let notFound = Code(rawValue: "not-found")
        /// An id prefix or name matches more than one document.
        public static let ambiguous = Code(rawValue: "ambiguous")
        /// The target already exists and would be overwritten.
        public static let alreadyExists = Code(rawValue: "already-exists")
        /// An imported message's HMAC does not match (wrong password or key, or a changed file).
        public static let hmacMismatch = Code(rawValue: "hmac-mismatch")
        /// An imported message's padding is invalid although its HMAC matched.
        public static let badPadding = Code(rawValue: "bad-padding")
        /// A document with the same contents (SHA-256) is already in the vault.
        public static let duplicate = Code(rawValue: "duplicate")
        /// A stream (standard output) can take one batch, and the selection needs several.
        public static let singleBatchNeeded = Code(rawValue: "single-batch-needed")
        /// The request is invalid (bad option value, missing password, empty name, ...).
        public static let usage = Code(rawValue: "usage")
        /// The operating system refused an operation (permissions, disk full, ...).
        public static let io = Code(rawValue: "io")
        /// The upload server refused the credentials (401, 403).
        public static let uploadUnauthorized = Code(rawValue: "upload-unauthorized")
        /// The upload server rejected a batch for good (4xx other than 401, 403, 408, 429).
        public static let uploadRejected = Code(rawValue: "upload-rejected")
        /// The upload gave up after its retries (network, timeouts, 5xx): run it again to resume.
        public static let uploadFailed = Code(rawValue: "upload-failed")
        /// A remote store (S3) refused the credentials: a bad signature, an unknown or expired key,
        /// access denied.
        public static let storeUnauthorized = Code(rawValue: "store-unauthorized")
        /// A remote store refused a request for good (an S3 error other than the above, a 4xx).
        public static let storeRejected = Code(rawValue: "store-rejected")
        /// A remote store could not be reached or answered with a transient failure (a dropped
        /// connection, a timeout, a passed deadline, 5xx, SlowDown) after the retries.
        public static let storeUnavailable = Code(rawValue: "store-unavailable")
        /// Another vault command holds the vault, and this one cannot run beside it (a
        /// password change while another command has the vault open): run it when that ends.
        public static let busy = Code(rawValue: "busy")
        /// Some documents were processed and some were skipped.
        public static let partial = Code(rawValue: "partial")
        /// A broken invariant or failing library call that is not the user's doing.
        public static let `internal` = Code(rawValue: "internal")

        /// True for the codes that mean stored data failed a check.
        public var isDamage: Bool {
            [.headerMalformed, .unsupportedVersion, .kdfParametersRejected, .headerAuthenticationFailed,
             .chunkAuthenticationFailed, .truncated, .trailingData, .digestMismatch, .vaultDamaged, .hmacMismatch, .badPadding].contains(self)
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// One line saying what happened, naming the file or document.
    public var message: String
    /// What the user can do about it, if anything useful can be said.
    public var hint: String?
    /// The step that would set things right, when it is one of the vault's own operations: a
    /// library names no command, option or variable, so a front end words it (the CLI as the
    /// command that does it).
    public var remedy: Remedy?
    /// The lower-level error this one wraps.
    public var cause: (any Error)?
    /// True when the operation failed before it changed anything (a full disk met before the
    /// commit, say), so a front end can say that nothing was changed.
    public var nothingChanged = false

    /// Creates an error.
    public init(_ code: Code, _ message: String, hint: String? = nil, remedy: Remedy? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
        self.remedy = remedy
        self.cause = cause
    }

    /// A step, among the vault's own operations, that would set an error right.
    public enum Remedy: Sendable, Equatable {
        /// Create a vault there.
        case createVault
        /// Look the document up among those the vault lists.
        case listDocuments
        /// Rebuild the index (verifying the vault does).
        case rebuildIndex
        /// Audit the vault, and remove the document (this id) again.
        case auditAndRemoveAgain(DocumentID)
        /// Verify the vault, and remove or restore the failing document before trying again.
        case verifyThenRemoveOrRestore
        /// Make a local copy of the remote vault (named so) first, or use a replica.
        case cloneFirst(String)
        /// Add the files inside the folder instead (recursively).
        case addRecursively
        /// Remove the upload's journal; the upload then starts afresh.
        case pruneUploadJournal
        /// Push a vault to the store first.
        case pushFirst
        /// Name a remote store for the vault.
        case addRemote
        /// Delete the damaged remote list, then name the stores again.
        case addRemotesAgain
        /// Name a destination for the vault.
        case addDestination
        /// Delete the damaged destination list, then name the destinations again.
        case addDestinationsAgain
        /// Push to a new prefix, or clone the store again with its password.
        case pushToNewPrefixOrClone
        /// Create the bucket, or check the store's URL and endpoint.
        case checkBucketAndEndpoint
        /// Check the host name in the URL (it does not resolve).
        case checkHostName
        /// Raise the payload byte limit to at least this many bytes, or leave the document out.
        case raiseByteLimit(UInt64)
        /// Free some disk space and run the operation again.
        case freeSpace
    }

    /// The message, then the cause if it adds anything (an `errno` or a store's error is
    /// already in the message).
    public var description: String {
        if let cause, !(cause is VaultError), !(cause is any CauseStatedInMessage) { return "\(message) (\(cause))" }
        return message
    }

    /// The same error with its message prefixed by a context such as a document id.
    public func context(_ prefix: String) -> VaultError {
        var copy = self
        copy.message = "\(prefix): \(message)"
        return copy
    }
}

/// A cause whose words the error's message already holds: ``VaultError/description`` does not
/// repeat it.
package protocol CauseStatedInMessage: Error {}

/// An operating-system error (`errno`), kept as the cause of ``VaultError/Code/io`` errors.
package struct POSIXErrorCode: Error, CustomStringConvertible, Sendable, CauseStatedInMessage {
    /// The error.
    package let errno: Errno
    /// Its `errno` value.
    package var value: Int32 { errno.rawValue }
    /// The operating system's text for it.
    package var description: String { errno.description }
}

extension VaultError {
    /// An error for `operation` on `path` from a system call's `error` (an `Errno`; anything
    /// else is passed through ``from(_:)``).
    static func posix(_ operation: String, _ path: String, _ error: any Error) -> VaultError {
        guard let err = error as? Errno else { return from(error) }
        let cause = POSIXErrorCode(errno: err)
        switch err {
        case .noSuchFileOrDirectory:
            return VaultError(.notFound, "\(operation) \(path): no such file or directory", cause: cause)
        case .noSpace, .diskQuotaExceeded:
            var e = VaultError(.io, "\(operation) \(path): no space left on device", remedy: .freeSpace, cause: cause)
            e.nothingChanged = true
            return e
        case .fileTooLarge:
            var e = VaultError(.io, "\(operation) \(path): file too large for this file system or limit", cause: cause)
            e.nothingChanged = true
            return e
        case .permissionDenied, .notPermitted:
            return VaultError(.io, "\(operation) \(path): permission denied", cause: cause)
        case .isDirectory:
            return VaultError(.usage, "\(path) is a directory", cause: cause)
        default:
            return VaultError(.io, "\(operation) \(path): \(cause)", cause: cause)
        }
    }

    /// True when this error's cause is a full disk or an exceeded quota.
    public var isNoSpace: Bool {
        guard let e = (cause as? POSIXErrorCode)?.errno else { return false }
        return e == .noSpace || e == .diskQuotaExceeded
    }

    /// True when the operating system (or SQLite) refused to write: permission denied, a
    /// read-only file system, a read-only database.
    public var isWriteRefused: Bool {
        if let e = (cause as? POSIXErrorCode)?.errno { return e == .permissionDenied || e == .notPermitted || e == .readOnlyFileSystem }
        return (cause as? SQLiteFailure)?.isReadOnly ?? false
    }
}

extension VaultError {
    /// `error` as a VaultError: itself if it is one, else an internal error wrapping it.
    public static func from(_ error: any Error) -> VaultError {
        if let e = error as? VaultError { return e }
        return VaultError(.internal, "unexpected error: \(error)", cause: error)
    }
}
