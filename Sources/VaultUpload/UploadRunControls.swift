/// How one run relates to its job's earlier runs, and what it does once a batch is confirmed:
/// the plan's controls, apart from what a user asks of an upload (``UploadOptions``).
///
/// ``DocumentDelivery`` sets them for each run of its plan; an app that calls ``Uploader``
/// itself keeps the defaults (continue an unfinished journal of the job, else start a run;
/// remove nothing) or sets them as a plan would.
public struct UploadRunControls: Sendable {
    /// Start a new run even if a journal of the same job exists.
    public var newRun = false
    /// Fail unless a journal of this job exists.
    public var requireJournal = false
    /// A journal of this job whose batches are all confirmed is not continued (into sending
    /// nothing): a new run starts. For a run of what is undelivered, where a finished run of
    /// the same documents left some out (too large for the server, or damaged). The journal is
    /// still read and checked first.
    public var renewFinished = false
    /// Remove each document once its batch is confirmed and the confirmation recorded (and
    /// every destination of ``alsoRequired`` confirmed it too).
    public var removeDelivered = false
    /// Destinations (identities) that must have confirmed a document too before
    /// ``removeDelivered`` removes it.
    public var alsoRequired: [String] = []

    /// The defaults: continue an unfinished journal of the job, else start a run; remove nothing.
    public init(
        newRun: Bool = false, requireJournal: Bool = false, renewFinished: Bool = false,
        removeDelivered: Bool = false, alsoRequired: [String] = []
    ) {
        self.newRun = newRun
        self.requireJournal = requireJournal
        self.renewFinished = renewFinished
        self.removeDelivered = removeDelivered
        self.alsoRequired = alsoRequired
    }
}
