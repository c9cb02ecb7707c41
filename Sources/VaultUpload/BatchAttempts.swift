import VaultCore

/// One batch's attempts as a value, learnt from AsyncHTTPClient's `RequestBag+StateMachine`: it
/// takes what happened (an attempt's outcome, a step done, a wait over) and returns what to do
/// next. It does no I/O and keeps no journal: `Uploader` performs each action and reports back,
/// and the tests drive it with tables of outcomes, without sockets.
///
/// The rules it keeps:
/// - an attempt that fails for a reason worth retrying waits and tries again, up to
///   `maxAttempts`; then the run gives up on the batch;
/// - an attempt that moved the server forward (tus: it acknowledged more bytes) resumes with a
///   fresh budget: the budget is for attempts that get nowhere;
/// - a batch made smaller (split, a document left out) starts its count again; a document
///   skipped for failing authentication does not count as an attempt;
/// - a confirmation ends the batch, as does the batch leaving the run; a refusal ends the run.
struct BatchAttempts {
    /// What happened.
    enum Event {
        /// The batch's turn came.
        case start
        /// An attempt ended so.
        case answered(AttemptOutcome)
        /// The step an action asked for is done; `left`: the batch left the run (split into
        /// batches of its own, or its one document left out).
        case handled(left: Bool)
        /// The wait before the next attempt is over.
        case waited
    }

    /// What to do next.
    enum Action {
        /// Record an attempt in the journal and send attempt `attempt` (from 1).
        case send(attempt: Int)
        /// Check the receipt in `body` and record the batch as confirmed, then report `handled`.
        case confirm(status: Int, duplicate: Bool, body: [UInt8])
        /// Split the batch (413), then report whether it left the run.
        case split(reason: String, serverSays: String)
        /// Take the document that failed authentication out of the batch, then report.
        case skip(DocumentFailure)
        /// Leave the document at `place` out (the server refused it), then report whether the
        /// batch left the run.
        case leaveOut(place: Int, reason: String, otherwise: VaultError, remedy: VaultError.Remedy?)
        /// Save the journal and wait (`retryAfter`, or the policy's delay for `attempt`), then
        /// report `waited`. `resumedAt`: the server has this many of the batch's bytes.
        case wait(attempt: Int, retryAfter: Double?, reason: String, resumedAt: UInt64?)
        /// Save the journal and end the run with this refusal.
        case refuse(VaultError)
        /// Save the journal and end the run: `attempts` attempts failed, the last for `reason`.
        case giveUp(attempts: Int, reason: String)
        /// The batch is done: confirmed, or (`left`) it left the run; `retries` waits it took.
        case done(retries: Int, left: Bool)
    }

    private enum State {
        case idle
        /// Attempt `attempt` is on the wire.
        case sending(attempt: Int)
        /// A step is being done; `next` is the attempt to send if the batch stays.
        case handling(next: Int)
        /// A confirmation is being recorded.
        case confirming
        /// Waiting before attempt `next`.
        case waiting(next: Int)
        case finished
    }

    let maxAttempts: Int
    private var state = State.idle
    /// Waits taken so far.
    private(set) var retries = 0

    init(maxAttempts: Int) {
        self.maxAttempts = maxAttempts
    }

    /// What to do after `event`. An event the state does not expect is a programming error.
    mutating func take(_ event: Event) -> Action {
        switch (state, event) {
        case (.idle, .start):
            state = .sending(attempt: 1)
            return .send(attempt: 1)
        case (.sending(let attempt), .answered(let outcome)):
            return answered(outcome, attempt: attempt)
        case (.handling(let next), .handled(let left)):
            if left {
                state = .finished
                return .done(retries: retries, left: true)
            }
            state = .sending(attempt: next)
            return .send(attempt: next)
        case (.confirming, .handled):
            state = .finished
            return .done(retries: retries, left: false)
        case (.waiting(let next), .waited):
            state = .sending(attempt: next)
            return .send(attempt: next)
        default:
            preconditionFailure("internal error: batch attempts got \(event) in \(state)")
        }
    }

    private mutating func answered(_ outcome: AttemptOutcome, attempt: Int) -> Action {
        switch outcome {
        case .confirmed(let status, let duplicate, let body):
            state = .confirming
            return .confirm(status: status, duplicate: duplicate, body: body)
        case .split(let reason, let says):
            state = .handling(next: 1)
            return .split(reason: reason, serverSays: says)
        case .skip(let failure):
            // the same attempt again, without the document: it did not count
            state = .handling(next: attempt)
            return .skip(failure)
        case .refused(let error):
            state = .finished
            return .refuse(error)
        case .refusedDocument(let place, let reason, let otherwise, let remedy):
            state = .handling(next: 1)
            return .leaveOut(place: place, reason: reason, otherwise: otherwise, remedy: remedy)
        case .resume(let at, let reason):
            // Progress was made: the retry budget is for attempts that get nowhere.
            retries += 1
            state = .waiting(next: 2)
            return .wait(attempt: 1, retryAfter: nil, reason: reason, resumedAt: at)
        case .retry(let reason, let retryAfter, _):
            guard attempt < maxAttempts else {
                state = .finished
                return .giveUp(attempts: attempt, reason: reason)
            }
            retries += 1
            state = .waiting(next: attempt + 1)
            return .wait(attempt: attempt, retryAfter: retryAfter, reason: reason, resumedAt: nil)
        }
    }
}
