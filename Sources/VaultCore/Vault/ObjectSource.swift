/// Where a vault's envelopes are read from when they are not files in `objects/`: a remote
/// store read directly (VaultRemote's S3 source), through ranged reads.
///
/// A store with a source is read-only: its folder (a local cache) keeps `vault.json`, the sealed
/// index, the history and upload journals, while the objects come from the source.
package protocol ObjectSource: Sendable {
    /// The documents the source holds (a snapshot taken when it was opened).
    func objectIDs() throws -> Set<DocumentID>
    /// A reader of one envelope. `sequential`: it will be read front to back (read ahead);
    /// otherwise only what is asked is fetched (random access, header-only opens).
    func input(for id: DocumentID, sequential: Bool) throws -> any EnvelopeInput
    /// What the objects are, for messages (`s3://BUCKET/PREFIX`).
    var name: String { get }
    /// Whether document `id` is a captured pair (its metadata file is listed beside its data).
    func holdsCaptured(_ id: DocumentID) -> Bool
    /// Captured document `id`'s metadata file, whole (at most `limit` bytes).
    /// - Throws: ``VaultError/Code/notFound`` when it is not there.
    func capturedMetadata(_ id: DocumentID, limit: Int) throws -> [UInt8]
}
