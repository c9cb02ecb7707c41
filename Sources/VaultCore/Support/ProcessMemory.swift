import Synchronization

/// How a process that runs vault's pipelines should hold its memory. The host decides: the
/// library neither sets the allocator's thresholds nor trims the heap unless the host asked for
/// it (the CLI does, at start; an app keeps its heap as it tunes it).
package enum ProcessMemory {
    /// Large buffers get mappings of their own, returned to the system when freed.
    ///
    /// glibc serves an allocation from its mmap threshold up by `mmap`, but raises the threshold
    /// to the size of each such block freed; from then on, buffers of the same size (8 MiB S3
    /// parts, 4 MiB tus chunks) come from the per-thread heaps, where parts freed on one thread
    /// and allocated on another leave resident holes: peak memory grew with the number of parts
    /// (+25 MiB for 20 x 50 MiB with two parts in flight, where the parts themselves are 16).
    /// A fixed threshold of 4 MiB keeps smaller buffers on the heap, as before.
    package static let largeAllocation = 4 << 20

    /// Applies the policy above to this process (glibc; nothing elsewhere). Call it once, early.
    package static func mapLargeBuffersDirectly() {
        Platform.mapLargeAllocations(atLeast: largeAllocation)
    }

    /// True once the host asked for the heap's free pages to be given back between documents.
    private static let trimming = Atomic(false)

    /// Asks that long operations (add, export) give the heap's free pages back between documents
    /// (glibc `malloc_trim`; nothing elsewhere): glibc serves the per-document megabyte buffers
    /// from the heap once its dynamic mmap threshold has risen, and their freed pages would
    /// otherwise stay resident and fragment, so peak memory would grow with the number of
    /// documents. Call it once, early.
    package static func trimHeapBetweenDocuments() {
        trimming.store(true, ordering: .relaxed)
    }

    /// Gives the heap's free pages back, when the host asked for it.
    static func releaseFreeMemoryIfAsked() {
        guard trimming.load(ordering: .relaxed) else { return }
        Platform.releaseFreeMemory()
    }
}
