import VaultCore

/// The errors the receiver's readers raise besides the payload's own.
extension VaultError.Code {
    /// A batch holds more documents than the receiver takes (answered 413, so an uploader
    /// splits it).
    package static let tooManyDocuments = Self(rawValue: "too-many-documents")
}
