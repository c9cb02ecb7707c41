import VaultCore

/// The errors a remote store's requests raise, declared here as VaultS3 raises them.
extension VaultError.Code {
    /// A remote store (S3) refused the credentials: a bad signature, an unknown or expired key,
    /// access denied.
    public static let storeUnauthorized = Self(rawValue: "store-unauthorized")
    /// A remote store refused a request for good (an S3 error other than the above, a 4xx).
    public static let storeRejected = Self(rawValue: "store-rejected")
    /// A remote store could not be reached or answered with a transient failure (a dropped
    /// connection, a timeout, a passed deadline, 5xx, SlowDown) after the retries.
    public static let storeUnavailable = Self(rawValue: "store-unavailable")
}

/// The steps that set right the errors of remote stores.
extension VaultError.Remedy.Name {
    /// Check the bucket's name and the store's endpoint: the host a request went to does not
    /// resolve.
    public static let checkStoreEndpoint = Self(rawValue: "check-store-endpoint")
}

extension VaultError.Remedy {
    /// Check the bucket's name and the store's endpoint: the host a request went to does not
    /// resolve.
    public static let checkStoreEndpoint = Self(.checkStoreEndpoint)
}

extension VaultError {
    /// True for a store failure that may pass (`VaultError.Code.storeUnavailable`):
    /// the one kind a store operation retries.
    public static func isTransientStoreFailure(_ error: any Error) -> Bool {
        (error as? VaultError)?.code == .storeUnavailable
    }
}
