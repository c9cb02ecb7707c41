/// Random access to one document's plaintext.
///
/// ``read(at:count:)`` decrypts and authenticates only the 64 KiB chunks that cover the range
/// (nothing before them is read); opened chunks are kept in a cache of at most `cacheBytes`,
/// least recently used first out, so reading a file front to back in small pieces, or going
/// back to a piece just read, opens each chunk once. Every byte returned has authenticated, and
/// the final chunk is recognised by its flag, so a cut or extended envelope fails as it does
/// for a full read.
package final class DocumentReader {
    /// The document's metadata (from its authenticated header).
    package let metadata: DocumentMetadata
    /// Plaintext bytes in the document.
    package var size: UInt64 { metadata.size }
    /// Chunks decrypted and authenticated so far (cache hits do not count).
    package private(set) var chunksOpened: UInt64 = 0

    /// Opens a reader of `chunks` chunks from chunk `start`.
    typealias Opener = (_ start: UInt64, _ chunks: Int) throws -> EnvelopeReader
    private let opener: Opener
    private let cacheBytes: Int
    private var cache: [UInt64: [UInt8]] = [:]
    private var recent: [UInt64] = []  // least recently used first

    init(metadata: DocumentMetadata, cacheBytes: Int, opener: @escaping Opener) {
        self.metadata = metadata
        self.cacheBytes = max(cacheBytes, EnvelopeFormat.chunkSize)
        self.opener = opener
    }

    deinit { for key in cache.keys { cache[key]!.withUnsafeMutableBytes { Sodium.wipe($0) } } }

    /// Up to `count` bytes from `offset` (fewer at the end of the document; none past it).
    package func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        guard count > 0,
              offset < size else { return [] }
        let end = min(size, offset + UInt64(count))
        let cs = UInt64(EnvelopeFormat.chunkSize)
        var out = [UInt8]()
        out.reserveCapacity(Int(end - offset))
        // In windows the cache can hold, so no chunk of a window is evicted before it is copied.
        let window = UInt64(cacheBytes / EnvelopeFormat.chunkSize)
        var first = offset / cs
        let last = (end - 1) / cs
        while first <= last {
            let upTo = min(last, first + window - 1)
            try load(first...upTo)
            for index in first...upTo {
                let chunk = cache[index]!
                let from = index == offset / cs ? Int(offset - index * cs) : 0
                let to = index == last ? Int(end - index * cs) : chunk.count
                out.append(contentsOf: chunk[from..<to])
                touch(index)
            }
            first = upTo + 1
        }
        return out
    }

    /// Opens the chunks of `range` the cache lacks, each run of missing chunks with one reader.
    private func load(_ range: ClosedRange<UInt64>) throws {
        var index = range.lowerBound
        while index <= range.upperBound {
            guard cache[index] == nil else { index += 1; continue }
            // A run of missing chunks, at most one batch long: each reader opens exactly the
            // chunks asked for (a second batch of a longer run would read past the run's end).
            var runEnd = index
            while runEnd < range.upperBound && cache[runEnd + 1] == nil
                && runEnd - index + 1 < UInt64(ChunkBatching.reading.chunks)
            { runEnd += 1 }
            let chunks = Int(runEnd - index + 1)
            let reader = try opener(index, chunks)
            var at = index
            while at <= runEnd, let batch = try reader.next() {
                var rest = batch
                while !rest.isEmpty && at <= runEnd {
                    let n = min(rest.count, EnvelopeFormat.chunkSize)
                    insert(at, Array(UnsafeRawBufferPointer(rebasing: rest[0..<n])))
                    rest = UnsafeRawBufferPointer(rebasing: rest[n...])
                    at += 1
                }
            }
            chunksOpened += reader.openedChunks
            index = runEnd + 1
        }
    }

    private func insert(_ index: UInt64, _ plain: [UInt8]) {
        cache[index] = plain
        touch(index)
        // Evict the least recently used beyond the limit, but never the chunks just loaded
        // for the read in progress (the limit is at least one chunk).
        while cache.count * EnvelopeFormat.chunkSize > cacheBytes, let oldest = recent.first, oldest != index {
            recent.removeFirst()
            cache[oldest]?.withUnsafeMutableBytes { Sodium.wipe($0) }
            cache[oldest] = nil
        }
    }

    private func touch(_ index: UInt64) {
        if let i = recent.lastIndex(of: index) { recent.remove(at: i) }
        recent.append(index)
    }
}
