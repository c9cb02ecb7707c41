#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a batch stands: the one status of the export manifest's batches and the upload
/// journal's.
public enum BatchStatus: String, Codable, Sendable {
    /// Not written (or sent) yet.
    case pending
    /// The payload file is in place (or the server confirmed it).
    case complete
    /// The run stopped with an error before this batch was done.
    case failed
    /// The run was interrupted (SIGINT, SIGTERM, SIGHUP) before this batch was done.
    case interrupted

    /// Reads a status; `confirmed` (what upload journals of version 1 wrote) is `complete`.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let status = text == "confirmed" ? .complete : BatchStatus(rawValue: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "unknown batch status '\(text)'"))
        }
        self = status
    }
}

/// What the export manifest and the upload journal both keep about a batch.
package protocol BatchBookkeeping {
    /// Ids of the documents in the payload, in order.
    var documents: [DocumentID] { get }
    /// The payload's exact length.
    var bytes: UInt64 { get }
    /// Where it stands.
    var status: BatchStatus { get }
}
