import Foundation
import NIOCore
import Testing
import VaultCore
@testable import VaultRemote
import VaultS3

/// A capture station: a vault in a temp folder, with the plaintext of what it holds.
final class Station {
    let dir: String
    let vault: Vault
    var originals: [DocumentID: [UInt8]] = [:]

    static func password(_ s: String = "correct horse") -> SecretBytes {
        Array(s.utf8).withUnsafeBytes { try! SecretBytes(copying: $0) }
    }

    static func temporaryFolder() -> String {
        var template = Array("\(NSTemporaryDirectory())/vault-remote-test-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    init(sizes: [Int] = [], password: String = "correct horse") throws {
        dir = Self.temporaryFolder()
        vault = try VaultStore(root: dir + "/vault").create(password: Self.password(password), kdf: .minimum)
        for size in sizes { try add(size) }
    }

    /// A replica cloned here from `location` on `store`.
    init(cloning location: RemoteLocation, from store: any ObjectStore, password: String = "correct horse") async throws
    {
        dir = Self.temporaryFolder()
        vault = try await Replicator.clone(
            location, client: store, into: VaultStore(root: dir + "/vault"), password: Self.password(password)
        ).vault
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Adds a document of `size` bytes (distinct for each call).
    @discardableResult
    func add(_ size: Int) throws -> DocumentID {
        var state = UInt64(originals.count + 1) &* 0x9E37_79B9_7F4A_7C15 | 1
        let bytes = (0..<size).map { _ -> UInt8 in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        let path = dir + "/in-\(originals.count)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try vault.add(
            from: VaultCore.OpenFile.openForReading(path), name: "doc-\(originals.count).bin", allowDuplicate: true)
        originals[r.id] = bytes
        return r.id
    }

    /// The envelope of `id` as it is on disk.
    func envelope(_ id: DocumentID) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: vault.objectPath(id))))
    }

    /// The plaintext of `id`, read and authenticated.
    func plaintext(_ id: DocumentID, in vault: Vault? = nil) throws -> [UInt8] {
        let reader = try (vault ?? self.vault).open(id, verifyDigest: true)
        var bytes: [UInt8] = []
        while let piece = try reader.next() { bytes += piece }
        return bytes
    }
}

/// Records the waits a policy asks for instead of waiting.
final class RecordingClock: @unchecked Sendable {
    // @unchecked: the lock guards `recorded`.
    private let lock = NSLock()
    private var recorded: [Double] = []
    var waits: [Double] { lock.withLock { recorded } }

    /// The store's policy (3 retries, ceilings 0.5, 1, 2 s), jitter at one half, on this clock.
    var policy: RetryPolicy {
        var p = RetryPolicy.store
        p.clock = RetryPolicy.Clock(
            sleep: { s in self.lock.withLock { self.recorded.append(s) } },
            sleepBlocking: { s in self.lock.withLock { self.recorded.append(s) } })
        p.random = { 0.5 }
        return p
    }
}

func expectError(
    _ code: VaultError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let e = await #expect(throws: VaultError.self, comment, sourceLocation: sourceLocation) { try await body() }
    #expect(e?.code == code, comment, sourceLocation: sourceLocation)
}

let location = try! RemoteLocation(url: "s3://vaults/station")

/// The replicator against the in-memory store: what push, pull and clone send and take, the
/// retry budget, and what a hostile store gets from them.
@Suite struct ReplicatorUnitTests {
    @Test func aFirstPushWritesTheConfigAndEveryEnvelopeAsItIsOnDiskAndASecondPushSendsNothing() async throws {
        let a = try Station(sizes: [10, 70_000, 0])
        let store = MemoryObjectStore()
        let report = try await Replicator(vault: a.vault, client: store, location: location).push()
        #expect(report.created && report.sent.count == 3 && report.tombstones == 0 && report.alreadyThere == 0)
        #expect(store.object("vaults", location.configKey) == (try a.vault.configBytes()))
        for id in a.originals.keys {
            #expect(store.object("vaults", location.objectKey(id)) == (try a.envelope(id)))
        }
        store.clearLog()
        let again = try await Replicator(vault: a.vault, client: store, location: location).push()
        #expect(again.sent.isEmpty && again.alreadyThere == 3 && !again.created)
        // Only the probe and the listings: no write, no read of an envelope.
        #expect(store.count(.put) + store.count(.putIfAbsent) + store.count(.createMultipart) == 0, "\(store.log)")
        #expect(store.count(.get, prefix: location.objectsPrefix) == 0)
    }

    @Test func anEnvelopeLargerThanAPartGoesInPartsAndAFailedPartSendsItAgainWholeWithTheUploadAborted() async throws {
        let a = try Station()
        let big = try a.add(12 << 20)
        let store = MemoryObjectStore()
        let clock = RecordingClock()
        store.fail(.uploadPart, times: 1, with: VaultError(.storeUnavailable, "503 SlowDown"))
        let report = try await Replicator(
            vault: a.vault, client: store, location: location, partSize: 5 << 20, policy: clock.policy
        ).push()
        #expect(report.sent == [big])
        #expect(store.object("vaults", location.objectKey(big)) == (try a.envelope(big)))
        #expect(store.count(.createMultipart) == 2 && store.count(.abort) == 1 && store.openUploads == 0)
        #expect(store.count(.uploadPart) == 1 + 3, "the failed first part, then three parts of at most 5 MiB")
        #expect(clock.waits == [0.25])
    }

    @Test func anOutageIsRetriedUnderOneBudgetAndARefusalNotAtAll() async throws {
        let a = try Station(sizes: [100])
        let store = MemoryObjectStore()
        let clock = RecordingClock()
        store.fail(.list, times: 100, with: VaultError(.storeUnavailable, "503"))
        await expectError(.storeUnavailable) {
            _ = try await Replicator(vault: a.vault, client: store, location: location, policy: clock.policy).push()
        }
        // Four tries of the two listings, no more: the client does not retry inside.
        #expect(store.count(.list) == 8)
        #expect(clock.waits == [0.25, 0.5, 1])

        let refused = MemoryObjectStore()
        let calm = RecordingClock()
        refused.fail(.list, times: 100, with: VaultError(.storeUnauthorized, "403 AccessDenied"))
        await expectError(.storeUnauthorized) {
            _ = try await Replicator(vault: a.vault, client: refused, location: location, policy: calm.policy).push()
        }
        #expect(calm.waits.isEmpty)
        #expect(refused.keys("vaults", prefix: location.objectsPrefix).isEmpty)
    }

    @Test func aStoreHoldingAnotherVaultIsRefusedAndNothingIsWrittenToIt() async throws {
        let a = try Station(sizes: [100, 200])
        let store = MemoryObjectStore()
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        let before = store.keys("vaults")
        let other = try Station(sizes: [300])
        await expectError(.alreadyExists) {
            _ = try await Replicator(vault: other.vault, client: store, location: location).push()
        }
        await expectError(.notFound) {
            _ = try await Replicator(
                vault: other.vault, client: store, location: try RemoteLocation(url: "s3://missing/x")
            ).push()
        }
        #expect(store.keys("vaults") == before)
        #expect(store.object("vaults", location.configKey) == (try a.vault.configBytes()))
    }

    @Test func aRemovalTravelsAsATombstoneThatAReplicaAppliesAndAPullTakesOnlyWhatIsNew() async throws {
        let a = try Station(sizes: [100, 70_000, 5])
        let store = MemoryObjectStore()
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        let b = try await Station(cloning: location, from: store)
        #expect(try b.vault.objectIDs() == Set(a.originals.keys))
        for (id, bytes) in a.originals { #expect(try b.plaintext(id) == bytes) }

        let gone = a.originals.keys.sorted()[1]
        try a.vault.removeDocuments([gone])
        let fresh = try a.add(4_000)
        let pushed = try await Replicator(vault: a.vault, client: store, location: location).push()
        #expect(pushed.tombstones == 1 && pushed.sent == [fresh])
        #expect(
            store.object("vaults", location.objectKey(gone)) == nil
                && store.object("vaults", location.tombstoneKey(gone)) != nil)

        store.clearLog()
        let pulled = try await Replicator(vault: b.vault, client: store, location: location).pull()
        #expect(pulled.removed == [gone] && pulled.fetched.map(\.id) == [fresh] && pulled.rejected.isEmpty)
        #expect(try b.vault.objectIDs() == Set(a.originals.keys).subtracting([gone]))
        #expect(try b.plaintext(fresh, in: b.vault) == a.originals[fresh])
        #expect(store.count(.get, prefix: location.objectsPrefix) == 1, "only the new envelope is fetched")

        store.clearLog()
        let again = try await Replicator(vault: b.vault, client: store, location: location).pull()
        #expect(again.fetched.isEmpty && again.removed.isEmpty)
        #expect(
            store.count(.get, prefix: location.objectsPrefix) == 0
                && store.count(.get, prefix: location.removedPrefix) == 0)
    }

    @Test func aPullRejectsADamagedOrOverlongEnvelopeAndAForgedTombstoneRemovesNothing() async throws {
        let a = try Station(sizes: [100])
        let store = MemoryObjectStore()
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        let b = try await Station(cloning: location, from: store)
        let (damaged, overlong, fine) = (try a.add(70_000), try a.add(3_000), try a.add(2_000))
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        var bytes = store.object("vaults", location.objectKey(damaged))!
        bytes[bytes.count / 2] ^= 1
        store.set("vaults", location.objectKey(damaged), bytes)
        // The listing says less than the object holds: the store sends on past it.
        store.listSize(of: location.objectKey(overlong), as: 1_000)
        // Junk where the tombstone of b's document would be.
        let kept = a.originals.keys.first { $0 != damaged && $0 != overlong && $0 != fine }!
        store.set("vaults", location.tombstoneKey(kept), Array(repeating: 7, count: 200))

        let report = try await Replicator(vault: b.vault, client: store, location: location).pull()
        #expect(report.fetched.map(\.id) == [fine])
        let rejected = Dictionary(uniqueKeysWithValues: report.rejected.map { ($0.key, $0.error.code) })
        #expect(rejected["objects/\(damaged.hex).vlt"]?.isDamage == true, "\(report.rejected)")
        #expect(rejected["objects/\(overlong.hex).vlt"] == .trailingData, "\(report.rejected)")
        #expect(report.removed.isEmpty && report.refusedTombstones.map(\.key) == ["removed/\(kept.hex)"])
        #expect(try b.vault.objectIDs() == [kept, fine])
        // Nothing half-downloaded stays behind.
        let objects = try FileManager.default.contentsOfDirectory(atPath: b.dir + "/vault/objects")
        #expect(objects.sorted() == [kept, fine].map { "\($0.hex).vlt" }.sorted(), "\(objects)")
    }

    @Test func aCloneChecksThePasswordBeforeCreatingAnything() async throws {
        let a = try Station(sizes: [100])
        let store = MemoryObjectStore()
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        let dir = Station.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        await expectError(.wrongPassword) {
            _ = try await Replicator.clone(
                location, client: store, into: VaultStore(root: dir + "/replica"), password: Station.password("wrong"))
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/replica"))
        await expectError(.notFound) {
            _ = try await Replicator.clone(
                try RemoteLocation(url: "s3://vaults/elsewhere"), client: store,
                into: VaultStore(root: dir + "/replica"),
                password: Station.password())
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/replica"))
    }
}

/// The range cache (``S3ObjectSource``) against the in-memory store: what each read fetches,
/// what the cache keeps, retries under the policy, and a store that sends less than listed.
@Suite struct RangeCacheUnitTests {
    static let group = Int(S3ObjectSource.randomGroupChunks) * EnvelopeFormat.sealedChunkSize

    /// A station with one document of `size` bytes pushed to a fresh store.
    static func pushed(_ size: Int) async throws -> (Station, DocumentID, MemoryObjectStore) {
        let a = try Station()
        let id = try a.add(size)
        let store = MemoryObjectStore()
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        store.clearLog()
        return (a, id, store)
    }

    /// `count` raw bytes at `offset` of `id`, read through the source.
    static func read(
        _ source: S3ObjectSource, _ id: DocumentID, at offset: UInt64, _ count: Int, sequential: Bool = false
    ) throws -> [UInt8] {
        let input = try source.input(for: id, sequential: sequential)
        try input.seek(to: offset)
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = try out.withUnsafeMutableBytes {
                try input.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
            }
            if n == 0 { break }
            filled += n
        }
        return Array(out[..<filled])
    }

    @Test func aSequentialReadFetchesEachByteOnceInGroupsAndReturnsTheEnvelope() async throws {
        let (a, id, store) = try await Self.pushed(6 << 20)
        let envelope = try a.envelope(id)
        let source = S3ObjectSource(
            client: store, location: location, sizes: [id: UInt64(envelope.count)], cacheBytes: 8 << 20)
        #expect(try Self.read(source, id, at: 0, envelope.count + 10, sequential: true) == envelope)
        let header = Int(source.headerSize(id)!)
        let groupBytes = Int(source.sequentialGroupChunks) * EnvelopeFormat.sealedChunkSize
        let groups = (envelope.count - header + groupBytes - 1) / groupBytes
        #expect(groups >= 2)
        // The head once, then each group once: nothing fetched twice but the head's tail.
        #expect(source.transferred.requests == 1 + groups && store.count(.getRange) == 1 + groups)
        #expect(source.transferred.bytes == UInt64(envelope.count - header + min(envelope.count, 8 << 10)))
    }

    @Test func aRandomReadFetchesTheHeadAndTheGroupThatCoversItAndAFewBytesExactly() async throws {
        let (a, id, store) = try await Self.pushed(6 << 20)
        let envelope = try a.envelope(id)
        let source = S3ObjectSource(
            client: store, location: location, sizes: [id: UInt64(envelope.count)], cacheBytes: 8 << 20)
        let at = 5 << 19  // inside group 2, clear of its ends
        #expect(try Self.read(source, id, at: UInt64(at), 4_096) == Array(envelope[at..<at + 4_096]))
        #expect(source.transferred.requests == 2, "the head, then one group")
        #expect(source.transferred.bytes <= UInt64((8 << 10) + Self.group))
        // The same bytes again come from the cache.
        #expect(try Self.read(source, id, at: UInt64(at + 100), 1_000) == Array(envelope[at + 100..<at + 1_100]))
        #expect(source.transferred.requests == 2)
        // A few bytes in a group not cached: fetched exactly, not as a group.
        let before = source.transferred
        #expect(try Self.read(source, id, at: 5 << 20, 40) == Array(envelope[(5 << 20)..<(5 << 20) + 40]))
        #expect(source.transferred.requests == before.requests + 1 && source.transferred.bytes == before.bytes + 40)
    }

    @Test func theCacheKeepsToItsLimitAndEvictsTheLeastRecentlyUsedGroupFirst() async throws {
        let (a, id, store) = try await Self.pushed(5 << 20)
        let envelope = try a.envelope(id)
        let source = S3ObjectSource(
            client: store, location: location, sizes: [id: UInt64(envelope.count)], cacheBytes: 4 << 20)
        _ = try Self.read(source, id, at: 0, 4_096)  // the head: the header's size is known from here on
        let header = Int(source.headerSize(id)!)
        func group(_ g: Int) throws -> Int {
            let before = source.transferred.requests
            let at = header + g * Self.group + 1_000
            #expect(try Self.read(source, id, at: UInt64(at), 4_096) == Array(envelope[at..<at + 4_096]))
            return source.transferred.requests - before
        }
        #expect(try group(0) == 1 && group(1) == 1 && group(2) == 1)
        #expect(try group(0) == 0, "cached, and now the most recently used")
        // Four groups pass the 4 MiB limit: the head and group 1, least recently used, go.
        #expect(try group(3) == 1)
        #expect(try group(0) == 0 && group(2) == 0 && group(3) == 0)
        #expect(try group(1) == 1)
    }

    @Test func aFailedFetchIsRetriedUnderThePolicyAndARefusalIsNot() async throws {
        let (a, id, store) = try await Self.pushed(2 << 20)
        let envelope = try a.envelope(id)
        let clock = RecordingClock()
        store.fail(.getRange, times: 1, with: VaultError(.storeUnavailable, "503"))
        let source = S3ObjectSource(
            client: store, location: location, sizes: [id: UInt64(envelope.count)], policy: clock.policy)
        #expect(try Self.read(source, id, at: 0, envelope.count, sequential: true) == envelope)
        #expect(clock.waits == [0.25])

        let down = RecordingClock()
        store.clearLog()
        store.fail(.getRange, times: 100, with: VaultError(.storeUnavailable, "503"))
        let failing = S3ObjectSource(
            client: store, location: location, sizes: [id: UInt64(envelope.count)], policy: down.policy)
        await expectError(.storeUnavailable) { _ = try Self.read(failing, id, at: 0, 100) }
        #expect(store.count(.getRange) == 4 && down.waits == [0.25, 0.5, 1])

        let refused = RecordingClock()
        let unauthorized = MemoryObjectStore()
        unauthorized.set("vaults", location.objectKey(id), envelope)
        unauthorized.fail(.getRange, times: 100, with: VaultError(.storeUnauthorized, "403"))
        let denied = S3ObjectSource(
            client: unauthorized, location: location, sizes: [id: UInt64(envelope.count)], policy: refused.policy)
        await expectError(.storeUnauthorized) { _ = try Self.read(denied, id, at: 0, 100) }
        #expect(unauthorized.count(.getRange) == 1 && refused.waits.isEmpty)
    }

    @Test func anObjectShorterThanItsListingEndsTheReadWithAnErrorNotALoop() async throws {
        let (a, id, store) = try await Self.pushed(1 << 20)
        let envelope = try a.envelope(id)
        let source = S3ObjectSource(client: store, location: location, sizes: [id: UInt64(envelope.count) + 100_000])
        await expectError(.truncated) {
            _ = try Self.read(source, id, at: 0, envelope.count + 100_000, sequential: true)
        }
        #expect(store.count(.getRange) < 10)
        // Through the envelope reader the same store fails the document as cut short.
        let vault = a.vault.reading(from: source)
        let e = #expect(throws: VaultError.self) {
            let reader = try vault.open(id)
            while try reader.next() != nil {}
        }
        #expect(e?.code == .truncated || e?.code.isDamage == true, "\(String(describing: e))")
    }

    @Test func openingARemoteVaultReadsOnlyHeadsAndHidesWhatATombstoneRemoved() async throws {
        let a = try Station()
        let gone = try a.add(100)
        let big = try a.add(3 << 20)
        for size in [5_000, 70_000] { try a.add(size) }
        let store = MemoryObjectStore()
        try a.vault.removeDocuments([gone])
        _ = try await Replicator(vault: a.vault, client: store, location: location).push()
        // Junk beside the real tombstone.
        store.set("vaults", location.removedPrefix + String(repeating: "ab", count: 16), [1, 2, 3])
        store.clearLog()
        let cache = Station.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let opened = try await RemoteVault.open(
            location, client: store, cacheRoot: cache + "/cache", password: Station.password())
        let (vault, source, refused) = (opened.vault, opened.source, opened.refusedTombstones)
        #expect(try vault.objectIDs() == Set(a.originals.keys).subtracting([gone]))
        #expect(refused.isEmpty, "junk whose id names no listed object is not even fetched: \(refused.map(\.key))")
        #expect(store.count(.getRange) == 3 && source.transferred.bytes <= 3 * 8 << 10, "one head per document")
        let records = try vault.records().records
        #expect(Set(records.map(\.id)) == Set(a.originals.keys).subtracting([gone]))
        #expect(records.first { $0.id == big }?.metadata.size == 3 << 20)
        #expect(try a.plaintext(big, in: vault) == a.originals[big])
        await expectError(.wrongPassword) {
            _ = try await RemoteVault.open(
                location, client: store, cacheRoot: cache + "/cache", password: Station.password("wrong"))
        }
    }
}
