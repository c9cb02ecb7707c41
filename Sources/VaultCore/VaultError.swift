import SystemPackage

/// The one error type of VaultCore.
///
/// Every failure carries a ``Code`` that callers can switch on (the CLI maps codes to exit
/// codes; the fixture vectors name them in their `expect:` line), a message that names the
/// file or document involved, an optional hint saying what to do next, and the underlying
/// cause when there is one. Messages never contain a password, a key or document contents.
public struct VaultError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is. Extensible: new codes are new static members, declared by
    /// the module that raises them (VaultUpload's `upload-*`, VaultS3's `store-*`).
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
        /// Another vault command holds the vault, and this one cannot run beside it (a
        /// password change while another command has the vault open): run it when that ends.
        public static let busy = Code(rawValue: "busy")
        /// Some documents were processed and some were skipped.
        public static let partial = Code(rawValue: "partial")
        /// A broken invariant or failing library call that is not the user's doing.
        public static let `internal` = Code(rawValue: "internal")

        /// True for the codes that mean stored data failed a check.
        public var isDamage: Bool {
            [
                .headerMalformed, .unsupportedVersion, .kdfParametersRejected, .headerAuthenticationFailed,
                .chunkAuthenticationFailed, .truncated, .trailingData, .digestMismatch, .vaultDamaged, .hmacMismatch,
                .badPadding
            ].contains(self)
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
    public init(_ code: Code, _ message: String, hint: String? = nil, remedy: Remedy? = nil, cause: (any Error)? = nil)
    {
        self.code = code
        self.message = message
        self.hint = hint
        self.remedy = remedy
        self.cause = cause
    }

    /// A step, among the vault's own operations, that would set an error right. Extensible like
    /// ``Code``: each module declares the remedies of the errors it raises (VaultUpload,
    /// VaultRemote), as static members of ``Remedy`` and its ``Remedy/Name``.
    public struct Remedy: Sendable, Hashable {
        /// Which step.
        public let name: Name
        /// The document the step concerns, when it concerns one.
        public let document: DocumentID?
        /// The place the step names (a remote vault's URL), when it names one.
        public let location: String?
        /// The byte count the step names (a limit to raise to), when it names one.
        public let bytes: UInt64?

        /// A remedy `name`, about `document`, `location` or `bytes` where the step needs one.
        public init(_ name: Name, document: DocumentID? = nil, location: String? = nil, bytes: UInt64? = nil) {
            self.name = name
            self.document = document
            self.location = location
            self.bytes = bytes
        }

        /// The name of a step. Extensible: new steps are new static members.
        public struct Name: RawRepresentable, Hashable, Sendable {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            /// Create a vault there.
            public static let createVault = Name(rawValue: "create-vault")
            /// Look the document up among those the vault lists.
            public static let listDocuments = Name(rawValue: "list-documents")
            /// Rebuild the index (verifying the vault does).
            public static let rebuildIndex = Name(rawValue: "rebuild-index")
            /// Audit the vault, and remove the document (``Remedy/document``) again.
            public static let auditAndRemoveAgain = Name(rawValue: "audit-and-remove-again")
            /// Verify the vault, and remove or restore the failing document before trying again.
            public static let verifyThenRemoveOrRestore = Name(rawValue: "verify-then-remove-or-restore")
            /// Make a local copy of the remote vault (``Remedy/location``) first, or use a replica.
            public static let cloneFirst = Name(rawValue: "clone-first")
            /// Add the files inside the folder instead (recursively).
            public static let addRecursively = Name(rawValue: "add-recursively")
            /// Name a destination for the vault.
            public static let addDestination = Name(rawValue: "add-destination")
            /// Delete the damaged destination list, then name the destinations again.
            public static let addDestinationsAgain = Name(rawValue: "add-destinations-again")
            /// Raise the payload byte limit to at least ``Remedy/bytes``, or leave the document out.
            public static let raiseByteLimit = Name(rawValue: "raise-byte-limit")
            /// Free some disk space and run the operation again.
            public static let freeSpace = Name(rawValue: "free-space")
            /// Open the document with the office's age identity (it came sealed from a
            /// capture-only station and is kept so).
            public static let openWithIdentity = Name(rawValue: "open-with-identity")
            /// Give the office's age identity: the one given opens nothing of the document.
            public static let otherIdentity = Name(rawValue: "other-identity")
        }

        /// Create a vault there.
        public static let createVault = Remedy(.createVault)
        /// Look the document up among those the vault lists.
        public static let listDocuments = Remedy(.listDocuments)
        /// Rebuild the index (verifying the vault does).
        public static let rebuildIndex = Remedy(.rebuildIndex)
        /// Audit the vault, and remove the document `id` again.
        public static func auditAndRemoveAgain(_ id: DocumentID) -> Remedy {
            Remedy(.auditAndRemoveAgain, document: id)
        }
        /// Verify the vault, and remove or restore the failing document before trying again.
        public static let verifyThenRemoveOrRestore = Remedy(.verifyThenRemoveOrRestore)
        /// Make a local copy of the remote vault at `source` first, or use a replica.
        public static func cloneFirst(_ source: String) -> Remedy { Remedy(.cloneFirst, location: source) }
        /// Add the files inside the folder instead (recursively).
        public static let addRecursively = Remedy(.addRecursively)
        /// Name a destination for the vault.
        public static let addDestination = Remedy(.addDestination)
        /// Delete the damaged destination list, then name the destinations again.
        public static let addDestinationsAgain = Remedy(.addDestinationsAgain)
        /// Raise the payload byte limit to at least `bytes`, or leave the document out.
        public static func raiseByteLimit(_ bytes: UInt64) -> Remedy { Remedy(.raiseByteLimit, bytes: bytes) }
        /// Free some disk space and run the operation again.
        public static let freeSpace = Remedy(.freeSpace)
        /// Open the document with the office's age identity (it came sealed from a capture-only
        /// station and is kept so).
        public static let openWithIdentity = Remedy(.openWithIdentity)
        /// Give the office's age identity: the one given opens nothing of the document.
        public static let otherIdentity = Remedy(.otherIdentity)
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
        if let e = (cause as? POSIXErrorCode)?.errno {
            return e == .permissionDenied || e == .notPermitted || e == .readOnlyFileSystem
        }
        return (cause as? SQLiteFailure)?.isReadOnly ?? false
    }
}

extension VaultError {
    /// `error` as a VaultError: itself if it is one, else an internal error wrapping it.
    public static func from(_ error: any Error) -> VaultError {
        if let e = error as? VaultError { return e }
        if let f = error as? AgeFailure { return f.vaultError("age file") }
        return VaultError(.internal, "unexpected error: \(error)", cause: error)
    }
}
