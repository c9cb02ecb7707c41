#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an add of several files does with one it cannot add: leave it out and go on with the
/// rest, or stop there (what was added before stays).
public enum AddErrorAction: Sendable {
    /// Leave this file out and go on; the add ends as partial.
    case skip
    /// Stop: the files after this one are not tried. When none was added yet, the add fails.
    case stop

    /// The policy of `add` on a terminal: a file whose contents are already in the vault is left
    /// out, and any other error stops the add.
    public static func skippingDuplicates(_ error: VaultError) -> AddErrorAction {
        error.code == .duplicate ? .skip : .stop
    }
}

/// One input of a bulk add: how it is shown (a path), the document's name, its size as far as
/// known (for progress), and how to open it (only when its turn comes).
package struct AddInput {
    package var shown: String
    package var name: String
    package var size: UInt64
    package var open: () throws -> any ByteSource

    package init(shown: String, name: String, size: UInt64, open: @escaping () throws -> any ByteSource) {
        self.shown = shown
        self.name = name
        self.size = size
        self.open = open
    }
}

/// What a bulk add did, input by input (positions in the list it was given).
package struct BulkAddOutcome {
    /// The documents added, with their inputs' positions, in order.
    package var added: [(input: Int, record: DocumentRecord)] = []
    /// The inputs left out (the error callback said skip), with why.
    package var skipped: [(input: Int, error: VaultError)] = []
    /// The input that stopped the add, with why; nil when every input was tried.
    package var stopped: (input: Int, error: VaultError)?
    /// Inputs after the one that stopped the add: never tried.
    package var notTried = 0
    /// How the history records the add: ok, partial (some inputs left out or never tried, some
    /// added) or failed (it stopped before anything was added; no record is written then).
    package var outcome: HistoryRecord.Outcome = .ok
}

extension AddSession {
    /// Adds `inputs` in turn, one document each, then finishes the session: one history record
    /// names every document added, with the outcome the policy comes to. As restic's archiver
    /// takes an `ErrorFunc`, the caller decides what an input that cannot be added means:
    /// `onError` says skip (left out, the add ends partial) or stop (the rest are not tried;
    /// what was added stays, recorded as partial with the stopping error as its note).
    ///
    /// A wrong password (the vault's unlock failed while the first input was sealed) is thrown
    /// as it is: it is about the vault, not an input, and nothing was added.
    /// - Parameters:
    ///   - alreadyLeftOut: inputs the caller left out before (names no back office takes, say):
    ///     the add ends partial when there are any.
    ///   - starting: called with each input's position before it is read.
    ///   - progress: the plaintext bytes read so far of the input being added.
    ///   - added: called with each document as soon as it is committed.
    /// - Returns: what was added and what was not; when it stopped before anything was added,
    ///   `added` is empty and `stopped` says why (the caller says it failed).
    package func addAll(
        _ inputs: [AddInput], contentType: String? = nil, tags: [String] = [], allowDuplicate: Bool = false,
        alreadyLeftOut: Int = 0, onError: (AddInput, VaultError) -> AddErrorAction,
        starting: (Int) -> Void = { _ in }, progress: ((UInt64) -> Void)? = nil,
        added: (Int, DocumentRecord) -> Void = { _, _ in }
    ) throws -> BulkAddOutcome {
        var outcome = BulkAddOutcome()
        do {
            for (position, input) in inputs.enumerated() {
                starting(position)
                do {
                    let record = try add(
                        from: try input.open(), name: input.name, contentType: contentType, tags: tags,
                        allowDuplicate: allowDuplicate, progress: progress)
                    outcome.added.append((position, record))
                    added(position, record)
                } catch {
                    if let wrong = pendingFailure { throw wrong }
                    let e = VaultError.from(error)
                    if onError(input, e) == .skip {
                        outcome.skipped.append((position, e))
                        continue
                    }
                    outcome.stopped = (position, e)
                    outcome.notTried = inputs.count - position - 1
                    break
                }
            }
        } catch {
            // what was committed before the failure stays, durably
            if pendingFailure == nil { try? finish(outcome: .failed, detail: VaultError.from(error).message) }
            throw error
        }
        if let stopped = outcome.stopped, outcome.added.isEmpty {
            // nothing to record: what is thrown is the stopping error, not a failure to finish
            outcome.outcome = .failed
            try? finish(outcome: .failed, detail: stopped.error.message)
        } else if let stopped = outcome.stopped {
            outcome.outcome = .partial
            try finish(outcome: .partial, detail: "stopped at \(inputs[stopped.input].shown): \(stopped.error.message)")
        } else {
            outcome.outcome = outcome.skipped.isEmpty && alreadyLeftOut == 0 ? .ok : .partial
            try finish(outcome: outcome.outcome)
        }
        return outcome
    }
}
