#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import Synchronization

/// Where an upload has got to.
public struct UploadProgress: Sendable, Equatable {
    /// Plaintext bytes of the documents sent so far, over the whole run (it goes back when a
    /// batch is sent again).
    public var completedBytes: UInt64 = 0
    /// Plaintext bytes in the run.
    public var totalBytes: UInt64 = 0
    /// Batches the server has confirmed, including those confirmed before a resumed run.
    public var confirmedBatches = 0
    /// Batches in the run.
    public var batches = 0
    /// Attempts that failed and were tried again.
    public var retries = 0

    /// `completedBytes` over `totalBytes` (confirmed batches over batches for a run of empty documents).
    public var fractionCompleted: Double {
        if totalBytes > 0 { return Double(completedBytes) / Double(totalBytes) }
        return batches == 0 ? 1 : Double(confirmedBatches) / Double(batches)
    }
}

/// Turns the uploader's events into ``UploadProgress`` values. Events come from the uploader's
/// task and the HTTP client's body-pulling task, one at a time; the lock makes that a rule.
final class UploadProgressTracker: Sendable {
    private let continuation: AsyncStream<UploadProgress>.Continuation
    private let current = Mutex(UploadProgress())

    init(_ continuation: AsyncStream<UploadProgress>.Continuation) { self.continuation = continuation }

    func take(_ event: UploadEvent) {
        let value: UploadProgress? = current.withLock { p in
            switch event {
            case .started(_, let batches, _, _, let confirmed, _):
                p.batches = batches
                p.confirmedBatches = confirmed
            case .document(.progress(let done, let total)):
                p.completedBytes = done
                p.totalBytes = total
            case .confirmed:
                p.confirmedBatches += 1
            case .retry:
                p.retries += 1
            case .split(_, let into):
                p.batches += into.count - 1
            default:
                return nil
            }
            return p
        }
        if let value { continuation.yield(value) }
    }
}
