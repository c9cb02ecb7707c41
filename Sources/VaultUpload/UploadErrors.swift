import VaultCore

/// The errors an upload raises, declared here as VaultUpload raises them.
extension VaultError.Code {
    /// The upload server refused the credentials (401, 403).
    public static let uploadUnauthorized = Self(rawValue: "upload-unauthorized")
    /// The upload needs credentials and none were given (no token, no user and password), and
    /// the destination is not known to take none: refused before anything was sent.
    public static let uploadNoCredentials = Self(rawValue: "upload-no-credentials")
    /// The upload server rejected a batch for good (4xx other than 401, 403, 408, 429).
    public static let uploadRejected = Self(rawValue: "upload-rejected")
    /// The upload gave up after its retries (network, timeouts, 5xx): run it again to resume.
    public static let uploadFailed = Self(rawValue: "upload-failed")
    /// The server refused one document of a batch, named by its place (vault's receiver: a name
    /// it will not store, a document that does not verify): it was left out of the run and is
    /// not delivered; a later run tries it again.
    public static let documentRefused = Self(rawValue: "document-refused")
    /// A document whose name no back office takes (docs/RECEIVE.md: a relative path without
    /// control characters): left out of the run before anything was sent, and not delivered.
    public static let nameNotDeliverable = Self(rawValue: "name-not-deliverable")
}

/// The names of the steps that set right the errors of uploads.
extension VaultError.Remedy.Name {
    /// Remove the upload's journal; the upload then starts afresh.
    public static let pruneUploadJournal = Self(rawValue: "prune-upload-journal")
    /// Check the host name in the URL (it does not resolve).
    public static let checkHostName = Self(rawValue: "check-host-name")
    /// Use `https://`, or allow plain `http://` on a network the user trusts.
    public static let useHTTPS = Self(rawValue: "use-https")
    /// Use `https://`, or send without credentials.
    public static let dropCredentials = Self(rawValue: "drop-credentials")
    /// Trust the server's certificate authority (a private CA), or check the URL's host name.
    public static let trustServerCertificate = Self(rawValue: "trust-server-certificate")
    /// Check the URL's path (the server has nothing there: 404).
    public static let checkURLPath = Self(rawValue: "check-url-path")
    /// Check the recipients a document was sealed to: the receiver holds no identity among them.
    public static let checkRecipients = Self(rawValue: "check-recipients")
}

/// The steps that set right the errors of uploads.
extension VaultError.Remedy {
    /// Remove the upload's journal; the upload then starts afresh.
    public static let pruneUploadJournal = Self(.pruneUploadJournal)
    /// Check the host name in the URL (it does not resolve).
    public static let checkHostName = Self(.checkHostName)
    /// Use `https://`, or allow plain `http://` on a network the user trusts.
    public static let useHTTPS = Self(.useHTTPS)
    /// Use `https://`, or send without credentials.
    public static let dropCredentials = Self(.dropCredentials)
    /// Trust the server's certificate authority (a private CA), or check the URL's host name.
    public static let trustServerCertificate = Self(.trustServerCertificate)
    /// Check the URL's path (the server has nothing there: 404).
    public static let checkURLPath = Self(.checkURLPath)
    /// Check the recipients a document was sealed to: the receiver holds no identity among them.
    public static let checkRecipients = Self(.checkRecipients)
}
