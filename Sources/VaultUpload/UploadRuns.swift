#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The interrupted runs to one destination still worth finishing.
public struct UnfinishedRuns: Sendable, Equatable {
    /// How many runs.
    public var runs: Int
    /// Their unconfirmed batches.
    public var batches: Int

    /// `runs` runs with `batches` unconfirmed batches between them.
    public init(runs: Int, batches: Int) {
        self.runs = runs
        self.batches = batches
    }

    mutating func add(batches more: Int) {
        runs += 1
        batches += more
    }
}

/// An interrupted run that a command would finish: its job and the chosen documents it holds.
public struct InterruptedRun: Sendable {
    /// The run's job (its journal's name).
    public var job: String
    /// Its documents among those chosen.
    public var records: [DocumentRecord]
}

/// An interrupted run to a destination, started with other settings than a command's.
public struct MismatchedRun: Sendable, Equatable {
    /// A setting that differs: its name (as ``UploadOptions/settings`` names it), its value
    /// when the run started, and the command's.
    public struct Difference: Sendable, Equatable {
        /// The setting's name (`batchSize`, `maxBytes`, `shape`, `method`, `protocol`, `field`,
        /// `formFields`, `partSize`).
        public var setting: String
        /// Its value when the run started.
        public var then: String
        /// Its value in this command (`none` when it has none).
        public var now: String
    }

    /// The run's id.
    public var runID: String
    /// The settings that differ, by name; empty for a journal of an earlier version.
    public var differences: [Difference]
}
