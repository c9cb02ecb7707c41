/// Authenticated plaintext bytes done and the total, shared by the batches of one run.
package final class ProgressCounter: @unchecked Sendable {
    // @unchecked: used from the producing thread only.
    package private(set) var done: UInt64 = 0
    package private(set) var total: UInt64
    package let documents: Int

    package init(total: UInt64, documents: Int) {
        self.total = total
        self.documents = documents
    }

    package func add(_ n: UInt64) { done += n }
    /// Sets what is done (an upload retrying a batch goes back to the batch's start).
    package func reset(done: UInt64) { self.done = done }
    package func skip(remaining: UInt64) { total -= remaining }
}
