import VaultCore

/// The names of the steps that set right the errors of remote vaults.
extension VaultError.Remedy.Name {
    /// Push a vault to the store first.
    public static let pushFirst = Self(rawValue: "push-first")
    /// Name a remote store for the vault.
    public static let addRemote = Self(rawValue: "add-remote")
    /// Delete the damaged remote list, then name the stores again.
    public static let addRemotesAgain = Self(rawValue: "add-remotes-again")
    /// Push to a new prefix, or clone the store again with its password.
    public static let pushToNewPrefixOrClone = Self(rawValue: "push-to-new-prefix-or-clone")
    /// Create the bucket, or check the store's URL and endpoint.
    public static let checkBucketAndEndpoint = Self(rawValue: "check-bucket-and-endpoint")
    /// Take on the password changed at another station (pull, giving the new one).
    public static let takePasswordChange = Self(rawValue: "take-password-change")
}

/// The steps that set right the errors of remote vaults.
extension VaultError.Remedy {
    /// Push a vault to the store first.
    public static let pushFirst = Self(.pushFirst)
    /// Name a remote store for the vault.
    public static let addRemote = Self(.addRemote)
    /// Delete the damaged remote list, then name the stores again.
    public static let addRemotesAgain = Self(.addRemotesAgain)
    /// Push to a new prefix, or clone the store again with its password.
    public static let pushToNewPrefixOrClone = Self(.pushToNewPrefixOrClone)
    /// Create the bucket, or check the store's URL and endpoint.
    public static let checkBucketAndEndpoint = Self(.checkBucketAndEndpoint)
    /// Take on the password changed at another station (pull, giving the new one).
    public static let takePasswordChange = Self(.takePasswordChange)
}
