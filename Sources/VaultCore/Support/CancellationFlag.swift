import Synchronization

/// A flag one thread sets and another polls: how a task's cancellation reaches the synchronous
/// pipeline, which checks it between chunk groups.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
