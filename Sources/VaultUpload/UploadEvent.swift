#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What the uploader reports as it works.
public enum UploadEvent: Sendable {
    /// The run is planned (or resumed): totals, and how much was confirmed before.
    case started(
        runID: String, batches: Int, documents: Int, payloadBytes: UInt64, confirmedBatches: Int, resumed: Bool)
    /// An attempt at a batch begins.
    case attempt(batch: Int, of: Int, attempt: Int, documents: Int, payloadBytes: UInt64)
    /// Payload bytes handed to the network for the whole run: confirmed batches plus the current
    /// attempt (it falls back to the batch's start when an attempt is retried).
    case sent(done: UInt64, total: UInt64)
    /// An attempt failed and will be retried after `delay` seconds.
    case retry(batch: Int, attempt: Int, delay: Double, reason: String)
    /// A batch was too large for the server and was split in two.
    case split(batch: Int, into: [Int])
    /// tus: a batch continues from `at`, the offset the server already has.
    case resumed(batch: Int, at: UInt64)
    /// tus: the server refused a chunk as too large (413); chunks are now `bytes` long.
    case chunkSize(bytes: Int, reason: String)
    /// The server confirmed a batch.
    case confirmed(batch: Int, of: Int, status: Int, duplicate: Bool)
    /// A damaged document was left out (skipping was asked for).
    case skipped(id: DocumentID, name: String, error: VaultError)
    /// Document-level events from the payload producer.
    case document(ExportEvent)
    /// Every batch is confirmed.
    case finished(batches: Int, documents: Int, payloadBytes: UInt64, retries: Int, skipped: Int)
}

/// The outcome of an upload.
public struct UploadSummary: Sendable {
    /// The run id.
    public var runID: String
    /// Batches in the run.
    public var batches: Int
    /// Batches of the run the server had confirmed before this call (an interrupted run resumed).
    public var alreadyConfirmed: Int
    /// Documents delivered.
    public var documents: Int
    /// Their ids, batch by batch.
    public var documentIDs: [DocumentID] = []
    /// Payload bytes of the run.
    public var payloadBytes: UInt64
    /// Retries this command made.
    public var retries: Int
    /// Documents left out (damaged with skipping asked for, too large for the server, or refused
    /// by it).
    public var skipped: Int
    /// Those of them the server refused as too large (413 for the document alone): not
    /// delivered, tried again by a later run.
    public var tooLarge: [DocumentID] = []
    /// Those of them the server refused by their place in a batch (vault's receiver: a name it
    /// will not store, a document that does not verify): not delivered, tried again by a later
    /// run.
    public var refused: [DocumentID] = []
    /// Those of them left out before anything was sent: their names are not ones a back office
    /// takes (a relative path without control characters, docs/RECEIVE.md).
    public var unsendable: [DocumentID] = []
    /// How many recipients the batches were sealed to (0: sent plain).
    public var sealedTo = 0
    /// Documents this call sent and had confirmed (a resumed run's earlier batches are not
    /// counted).
    public var sentDocuments = 0
    /// Batches this call sent and had confirmed.
    public var sentBatches = 0
    /// Payload bytes of the batches this call sent and had confirmed.
    public var sentBytes: UInt64 = 0
    /// Documents removed once delivered (`removeDelivered`), as they were.
    public var removed: [DocumentRecord] = []
    /// tus: payload bytes the server already had when batches resumed (not sent again).
    public var resumedBytes: UInt64 = 0
}
