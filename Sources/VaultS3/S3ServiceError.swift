import VaultCore

/// An S3 error answer, parsed: the HTTP status and the `<Code>` and `<Message>` of the error
/// document (no code when the answer had none, as a HEAD's never does). Kept as the cause of
/// the ``VaultError`` the client throws, so callers decide on the code, never on text.
public struct S3ServiceError: Error, Sendable, CustomStringConvertible, CauseStatedInMessage {
    /// The HTTP status.
    public var status: Int
    /// The S3 error code (`NoSuchKey`, `BadDigest`, ...), if the answer named one.
    public var code: String?
    /// The store's message, cut at ``maxMessage`` characters.
    public var message: String

    /// The most of a store's message (and code) kept: enough for any real store's sentence; a
    /// hostile store's 4 MB message went to stderr whole.
    public static let maxMessage = 300

    public init(status: Int, code: String?, message: String) {
        self.status = status
        self.code = code.map { Self.cut($0, at: 64) }
        self.message = Self.cut(message, at: Self.maxMessage)
    }

    private static func cut(_ s: String, at n: Int) -> String {
        s.count > n ? String(s.prefix(n)) + "…" : s
    }

    /// The code, or `HTTP <status>`, then the message.
    public var description: String {
        (code ?? "HTTP \(status)") + (message.isEmpty ? "" : ": \(message)")
    }

    /// What kind of failure it is.
    public var vaultCode: VaultError.Code {
        switch code {
        case "SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "ExpiredToken", "InvalidToken":
            .storeUnauthorized
        case "NoSuchBucket", "NoSuchKey", "NoSuchUpload": .notFound
        case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout": .storeUnavailable
        default: status >= 500 ? .storeUnavailable : .storeRejected
        }
    }
}

extension VaultError {
    /// The S3 error code behind this error, when a store answered with one.
    public var s3Code: String? { (cause as? S3ServiceError)?.code }
}
