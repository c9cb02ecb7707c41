import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import VaultCore
import VaultS3

/// A remote vault's envelopes read in place by ranged GETs (a vault opened at `s3://BUCKET/PREFIX`).
///
/// Each envelope is read in blocks: its head (the first 8 KiB, which holds the header of any
/// ordinary document: what `list` needs), then chunk groups counted from the end of the header:
/// 16 sealed chunks (1 MiB of plaintext) for random reads, up to 256 for sequential ones. A random read fetches only
/// the groups that
/// cover it; a sequential read also fetches the next groups ahead while the current one is
/// decrypted. Blocks go through one cache with a byte limit (least recently used first out);
/// groups a sequential reader has passed are dropped at once. Nothing is written to disk.
public final class S3ObjectSource: ObjectSource, @unchecked Sendable {
    // @unchecked: the mutable state (cache, in-flight fetches, counters) is guarded by `lock`.
    let client: any ObjectStore
    public let location: RemoteLocation
    /// How a block's fetch is retried.
    let policy: RetryPolicy
    /// The listing: each envelope's size (a captured document's data file's).
    public let sizes: [DocumentID: UInt64]
    /// The listing's captured documents: each metadata file's size.
    public let captured: [DocumentID: UInt64]
    /// The cache's byte limit.
    public let cacheBytes: Int
    /// Groups fetched ahead of a sequential reader.
    public let readAhead: Int

    static let headBytes: UInt64 = 8 << 10
    /// Chunks per group of a random read: 16 (1 MiB of plaintext).
    public static let randomGroupChunks: UInt64 = 16
    /// Chunks per group of a sequential read: up to 256 (16 MiB), so that the current group and
    /// those read ahead fit the cache's limit. Large ranges cost the store far less per byte
    /// than many small ones (SeaweedFS used 2.4 s of CPU for 1 GB in 8 MiB ranges, 1.6 s in 16).
    public let sequentialGroupChunks: UInt64

    /// A block of an envelope: its head (`block` -1), or group `block` of `chunks` chunks.
    struct BlockKey: Hashable {
        var id: DocumentID
        var block: Int
        var chunks: UInt64 = 0
        var bytes: UInt64 { chunks * UInt64(EnvelopeFormat.sealedChunkSize) }
    }

    /// A block's bytes, in memory of the pool (groups) or its own (heads); the memory goes back
    /// to the pool when the last holder (the cache, a reader) lets go of the block.
    final class Block: @unchecked Sendable {
        // @unchecked: written once by the fetch before its future completes, read-only after.
        let memory: UnsafeMutableRawBufferPointer
        var count = 0
        let pool: Pool?

        init(memory: UnsafeMutableRawBufferPointer, pool: Pool?) {
            self.memory = memory
            self.pool = pool
        }

        deinit { if let pool { pool.give(memory) } else { memory.deallocate() } }

        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: memory[0..<count]) }
    }

    /// Group-sized buffers, reused: a fresh mapping per block cost a page fault per 4 KiB (a
    /// direct export of 1 GB took 347,000 faults and 2 s of system time).
    final class Pool: @unchecked Sendable {
        // @unchecked: `free` is guarded by `lock`.
        let size: Int
        let keep: Int
        private let lock = NIOLock()
        private var free: [UnsafeMutableRawBufferPointer] = []

        init(size: Int, keep: Int) {
            self.size = size
            self.keep = keep
        }

        deinit { free.forEach { $0.deallocate() } }

        func take() -> UnsafeMutableRawBufferPointer {
            lock.withLock { free.popLast() } ?? .allocate(byteCount: size, alignment: 64)
        }

        func give(_ memory: UnsafeMutableRawBufferPointer) {
            let kept = lock.withLock { () -> Bool in
                guard free.count < keep else { return false }
                free.append(memory)
                return true
            }
            if !kept { memory.deallocate() }
        }
    }

    private let pool: Pool
    private let lock = NIOLock()
    private var cache: [BlockKey: (block: Block, used: UInt64)] = [:]
    private var cached = 0
    private var clock: UInt64 = 0
    private var inFlight: [BlockKey: EventLoopFuture<Block>] = [:]
    private var headerSizes: [DocumentID: UInt64] = [:]
    private var fetched = Transferred(requests: 0, bytes: 0)

    public init(
        client: any ObjectStore, location: RemoteLocation, sizes: [DocumentID: UInt64],
        captured: [DocumentID: UInt64] = [:], cacheBytes: Int = 64 << 20, readAhead: Int = 2,
        policy: RetryPolicy = .store
    ) {
        self.client = client
        self.policy = policy
        self.location = location
        self.sizes = sizes
        self.captured = captured.filter { sizes[$0.key] != nil }
        // A captured data file is an age file: no envelope header, its blocks counted from byte 0.
        headerSizes = self.captured.mapValues { _ in 0 }
        self.cacheBytes = max(cacheBytes, 2 << 20)
        self.readAhead = max(0, readAhead)
        let perGroup = UInt64(self.cacheBytes / (self.readAhead + 2)) / UInt64(EnvelopeFormat.sealedChunkSize)
        sequentialGroupChunks = max(Self.randomGroupChunks, min(256, perGroup))
        pool = Pool(size: Int(sequentialGroupChunks) * EnvelopeFormat.sealedChunkSize, keep: self.readAhead + 2)
    }

    public var name: String { location.description }

    public func objectIDs() throws -> Set<DocumentID> { Set(sizes.keys) }

    package func input(for id: DocumentID, sequential: Bool) throws -> any EnvelopeInput {
        guard let size = sizes[id] else { throw VaultError(.notFound, "its object is not at \(location)") }
        return Input(source: self, id: id, size: size, sequential: sequential)
    }

    package func holdsCaptured(_ id: DocumentID) -> Bool { captured[id] != nil }

    package func capturedMetadata(_ id: DocumentID, limit: Int) throws -> [UInt8] {
        guard let size = captured[id] else {
            throw VaultError(.notFound, "its metadata file is not at \(location)")
        }
        guard size <= UInt64(limit) else {
            throw VaultError(.vaultDamaged, "its metadata file at \(location) is over \(limit) bytes")
        }
        guard size > 0 else { return [] }
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(size), alignment: 8)
        defer { memory.deallocate() }
        return try policy.runBlocking(isTransient: VaultError.isTransientStoreFailure) {
            do {
                let n = try client.getRange(
                    bucket: location.bucket, key: location.capturedMetadataKey(id), range: 0...(size - 1), into: memory
                ).wait()
                lock.withLock {
                    fetched.requests += 1
                    fetched.bytes += UInt64(n)
                }
                return Array(UnsafeRawBufferPointer(rebasing: memory[0..<n]))
            } catch let e as VaultError {
                throw e
            } catch {
                throw VaultError(.storeUnavailable, "\(location): \(error)")
            }
        }
    }

    /// GET requests made and bytes received so far.
    public var transferred: Transferred { lock.withLock { fetched } }

    /// What a source has fetched from the store.
    public struct Transferred: Sendable, Equatable {
        /// GET requests made.
        public var requests: Int
        /// Bytes received.
        public var bytes: UInt64
    }

    /// Fetches the heads of `ids`, many at once (the index of a cold cache is rebuilt from them).
    public func prefetchHeads(_ ids: [DocumentID], inFlight limit: Int = 16) throws {
        var pending: [EventLoopFuture<Block>] = []
        for id in ids {
            guard let f = future(BlockKey(id: id, block: -1)) else { continue }
            pending.append(f)
            if pending.count >= limit {
                _ = try? pending.removeFirst().wait()
            }
        }
        for f in pending { _ = try? f.wait() }
    }

    // MARK: Blocks

    /// The byte range of a block of `id`, or nil past the end.
    func range(_ key: BlockKey) -> ClosedRange<UInt64>? {
        let size = sizes[key.id] ?? 0
        if key.block < 0 {
            let end = min(size, max(Self.headBytes, lock.withLock { headerSizes[key.id] } ?? 0))
            return end == 0 ? nil : 0...(end - 1)
        }
        guard let header = lock.withLock({ headerSizes[key.id] }) else { return nil }
        let start = header + UInt64(key.block) * key.bytes
        guard start < size else { return nil }
        return start...(min(start + key.bytes, size) - 1)
    }

    /// The block, from the cache, from a fetch already under way, or fetched now.
    func block(_ key: BlockKey) throws -> Block {
        if let hit = lock.withLock({ () -> Block? in
            guard let e = cache[key] else { return nil }
            clock += 1
            cache[key] = (e.block, clock)
            return e.block
        }) {
            return hit
        }
        // A dropped connection or a 5xx is fetched again, under the store's policy.
        return try policy.runBlocking(isTransient: VaultError.isTransientStoreFailure) {
            guard let f = future(key) else {
                throw VaultError(.truncated, "document \(key.id): a read past the end of its object at \(location)")
            }
            do {
                return try f.wait()
            } catch let e as VaultError {
                throw e
            } catch {
                throw VaultError(.storeUnavailable, "\(location): \(error)")
            }
        }
    }

    /// The fetch of `key`: the one under way, or a new one that fills the cache when it lands;
    /// nil for a block past the envelope's end.
    func future(_ key: BlockKey) -> EventLoopFuture<Block>? {
        lock.lock()
        if let f = inFlight[key] { lock.unlock(); return f }
        lock.unlock()
        guard let r = range(key) else { return nil }
        let length = Int(r.upperBound - r.lowerBound + 1)
        let block =
            key.chunks != sequentialGroupChunks || length > pool.size
            ? Block(memory: .allocate(byteCount: length, alignment: 64), pool: nil)
            : Block(memory: pool.take(), pool: pool)
        let f = client.getRange(bucket: location.bucket, key: location.objectKey(key.id), range: r, into: block.memory)
            .map { n -> Block in
                block.count = n
                return block
            }
        lock.withLock { inFlight[key] = f }
        f.whenComplete { [self] result in
            lock.withLock {
                inFlight[key] = nil
                guard case .success(let block) = result else { return }
                fetched.requests += 1
                fetched.bytes += UInt64(block.count)
                if key.block < 0, headerSizes[key.id] == nil, block.count >= EnvelopeFormat.fixedHeaderSize,
                    let h = try? EnvelopeHeader.headerLength(
                        fromPrefix: Array(block.bytes.prefix(EnvelopeFormat.fixedHeaderSize)))
                {
                    headerSizes[key.id] = UInt64(h)
                }
                insert(key, block)
            }
        }
        return f
    }

    /// Starts fetching `key` unless it is cached or on its way (read-ahead).
    func prefetch(_ key: BlockKey) {
        guard !lock.withLock({ cache[key] != nil || inFlight[key] != nil }) else { return }
        _ = future(key)
    }

    /// Puts a block in the cache, evicting the least recently used past the limit (lock held).
    private func insert(_ key: BlockKey, _ block: Block) {
        if let old = cache[key] { cached -= old.block.memory.count }
        clock += 1
        cache[key] = (block, clock)
        cached += block.memory.count
        while cached > cacheBytes, let victim = cache.min(by: { $0.value.used < $1.value.used })?.key, victim != key {
            cached -= cache[victim]!.block.memory.count
            cache[victim] = nil
        }
    }

    /// True when the block is in the cache or on its way.
    func isCached(_ key: BlockKey) -> Bool { lock.withLock { cache[key] != nil || inFlight[key] != nil } }

    /// Exactly `range` of `id` (a few bytes), not cached.
    func exact(_ id: DocumentID, _ range: ClosedRange<UInt64>) throws -> [UInt8] {
        let memory = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(range.upperBound - range.lowerBound + 1), alignment: 8)
        defer { memory.deallocate() }
        do {
            let n = try client.getRange(
                bucket: location.bucket, key: location.objectKey(id), range: range, into: memory
            ).wait()
            lock.withLock {
                fetched.requests += 1; fetched.bytes += UInt64(n)
            }
            return Array(UnsafeRawBufferPointer(rebasing: memory[0..<n]))
        } catch let e as VaultError {
            throw e
        } catch {
            throw VaultError(.storeUnavailable, "\(location): \(error)")
        }
    }

    /// Drops a block a sequential reader has passed.
    func drop(_ key: BlockKey) {
        lock.withLock {
            if let old = cache.removeValue(forKey: key) { cached -= old.block.memory.count }
        }
    }

    func headerSize(_ id: DocumentID) -> UInt64? { lock.withLock { headerSizes[id] } }

    /// One envelope as an ``EnvelopeInput``: reads are served from its blocks.
    final class Input: EnvelopeInput {
        let source: S3ObjectSource
        let id: DocumentID
        let size: UInt64
        let sequential: Bool
        var position: UInt64 = 0
        var current: (key: BlockKey, start: UInt64, block: Block)?
        /// Reads of at most this many bytes outside the current block are fetched exactly.
        static let exactReadLimit = 64

        init(source: S3ObjectSource, id: DocumentID, size: UInt64, sequential: Bool) {
            self.source = source
            self.id = id
            self.size = size
            self.sequential = sequential
        }

        func totalSize() throws -> UInt64? { size }

        func seek(to offset: UInt64) throws { position = offset }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard position < size,
                  buffer.count > 0 else { return 0 }
            if current == nil || position < current!.start || position >= current!.start + UInt64(current!.block.count)
            {
                if !sequential, buffer.count <= Self.exactReadLimit, let header = source.headerSize(id),
                    position >= header,
                    !source.isCached(
                        BlockKey(
                            id: id,
                            block: Int(
                                (position - header)
                                    / (S3ObjectSource.randomGroupChunks * UInt64(EnvelopeFormat.sealedChunkSize))),
                            chunks: S3ObjectSource.randomGroupChunks))
                {
                    // A few bytes past what a random reader asked for (its look-ahead for the
                    // end of the payload): fetched exactly, not as a whole group.
                    let n = Int(min(UInt64(buffer.count), size - position))
                    let bytes = try source.exact(id, position...(position + UInt64(n) - 1))
                    bytes.copyBytes(to: buffer)
                    position += UInt64(bytes.count)
                    return bytes.count
                }
                try load()
            }
            let c = current!
            let at = Int(position - c.start)
            let n = min(buffer.count, c.block.count - at)
            guard n > 0 else {
                throw VaultError(.truncated, "document \(id): the store returned less than its listing said")
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: c.block.bytes[at..<at + n]))
            position += UInt64(n)
            return n
        }

        /// Makes the block holding `position` current.
        private func load() throws {
            var header = source.headerSize(id)
            if header == nil || position < header! {
                let key = BlockKey(id: id, block: -1)
                var head = try source.block(key)
                header = source.headerSize(id)
                if let h = header, h > UInt64(head.count), position < h {
                    source.drop(key)  // a header longer than the head: fetch it whole
                    head = try source.block(key)
                }
                if header == nil || position < header! {
                    current = (key, 0, head)
                    return
                }
            }
            let h = header!
            let chunks = sequential ? source.sequentialGroupChunks : S3ObjectSource.randomGroupChunks
            let groupBytes = chunks * UInt64(EnvelopeFormat.sealedChunkSize)
            let group = Int((position - h) / groupBytes)
            let key = BlockKey(id: id, block: group, chunks: chunks)
            if sequential, let previous = current?.key, previous.block >= 0, previous.block < group {
                source.drop(previous)
            }
            let block = try source.block(key)
            if sequential {
                for ahead in 0..<source.readAhead {
                    source.prefetch(BlockKey(id: id, block: group + 1 + ahead, chunks: chunks))
                }
            }
            current = (key, h + UInt64(group) * groupBytes, block)
        }
    }
}
