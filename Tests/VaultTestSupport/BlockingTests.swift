import Foundation
import Testing

/// Runs each test of a suite on threads of its own instead of Swift's cooperative pool.
///
/// The CLI tests are synchronous: they start the `vault` binary or a peer and wait for it. The
/// cooperative pool has one thread per core (two here), so two such tests waiting on a child —
/// or on a timeout they test — kept every other test from starting, and the cores idled. Under
/// this trait a test runs on one of ``BlockingTestExecutor/shared``'s threads (six): up to six
/// wait at once, and async tests keep the cooperative pool to themselves.
package struct BlockingTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Around each test case only (a suite's scope is entered once, on the pool).
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
    }
}

extension Trait where Self == BlockingTrait {
    /// The suite's tests wait on processes: run them on threads of their own (``BlockingTrait``).
    package static var blocking: Self { BlockingTrait() }
}

/// A task executor with a fixed number of threads, which jobs may block.
package final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is touched only under `condition`.
    /// Six threads: the CLI tests mostly wait for a child process; more would crowd two cores.
    package static let shared = BlockingTestExecutor(threads: 6)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    /// An executor of `threads` threads of its own (for a test that must not wait on others').
    package init(threads: Int) {
        for i in 0..<threads {
            let thread = Thread { [unowned self] in work() }
            thread.name = "blocking-tests-\(i)"
            thread.start()
        }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
