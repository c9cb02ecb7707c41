import Foundation
import Testing
@testable import VaultCore

/// A capture-only station's add (``CapturedDocument``) decides by the `vault.json` the password
/// opened, never by the one on disk when the add began.
@Suite struct CapturedAddTests {
    let dir = TempDir()

    /// Found in review: someone who can write to the folder put a `vault.json` without the
    /// recipients in place for the add's first read and the genuine one back for the unlock; the
    /// document was kept as an envelope, which the station's password opens. Now nothing is
    /// added, and no file under the folder is an envelope the password would open.
    @Test func aVaultJSONWithoutItsRecipientsForTheFirstReadGetsNoEnvelope() throws {
        let office = try AgeIdentity.generate(postQuantum: false)
        let vault = try VaultStore(root: dir.file("station")).create(
            password: TestKeys.password(), kdf: .minimum, capture: [office.recipient])
        let path = vault.store.configPath
        let genuine = try Data(contentsOf: URL(fileURLWithPath: path))
        var edited = try #require(try JSONSerialization.jsonObject(with: genuine) as? [String: Any])
        edited["capture"] = nil
        try JSONSerialization.data(withJSONObject: edited).write(to: URL(fileURLWithPath: path))
        // The session's vault is the one the genuine file unlocked.
        let session = try AddSession(vault: vault)
        let secret = Array("the plaintext only the office may read".utf8)
        let error = try #require(throws: VaultError.self) {
            try session.add(from: BytesSource(secret), name: "secret.txt")
        }
        #expect(error.code == .vaultDamaged && error.message.contains("vault.json changed while the add ran"))
        try genuine.write(to: URL(fileURLWithPath: path))
        #expect(try vault.records().records.isEmpty)
        let walker = FileManager.default.enumerator(atPath: dir.file("station"))
        var files = 0
        while let f = walker?.nextObject() as? String {
            guard let bytes = FileManager.default.contents(atPath: dir.file("station/" + f)) else { continue }
            files += 1
            #expect(!bytes.starts(with: Array("VAULTENV".utf8)), "\(f) is an envelope")
        }
        #expect(files > 3)

        // And the other way: recipients put into an ordinary vault's vault.json for the first read.
        let ordinary = try VaultStore(root: dir.file("ordinary")).create(password: TestKeys.password(), kdf: .minimum)
        let plain = try Data(contentsOf: URL(fileURLWithPath: ordinary.store.configPath))
        var added = try #require(try JSONSerialization.jsonObject(with: plain) as? [String: Any])
        added["capture"] = [office.recipient.description]
        try JSONSerialization.data(withJSONObject: added).write(to: URL(fileURLWithPath: ordinary.store.configPath))
        let second = try AddSession(vault: ordinary)
        #expect(throws: VaultError.self) { try second.add(from: BytesSource(secret), name: "secret.txt") }
        try plain.write(to: URL(fileURLWithPath: ordinary.store.configPath))
        #expect(try ordinary.records().records.isEmpty)
    }

    /// A source that yields `count` bytes, then fails (a file that became unreadable mid-add).
    final class Failing: ByteSource {
        var left: Int
        init(after count: Int) { left = count }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard left > 0 else { throw VaultError(.io, "the disk went away") }
            let n = min(left, buffer.count)
            for i in 0..<n { buffer[i] = 0x41 }
            left -= n
            return n
        }
    }

    /// Each document's keyings and staged files are made ahead on another thread, and one set of
    /// buffers serves every document: each document must still be its own (its bytes, its name,
    /// fresh keys), a document that fails must leave nothing, and no staged file may outlive the add.
    @Test func documentsSealedWithWhatWasMadeAheadAreEachTheirOwnAndNothingStagedIsLeft() throws {
        let office = try AgeIdentity.generate(postQuantum: false)
        let vault = try VaultStore(root: dir.file("station")).create(
            password: TestKeys.password(), kdf: .minimum, capture: [office.recipient])
        let session = try AddSession(vault: vault)
        // Sizes around the batch (1 MiB): a large document's plaintext must not reach a small one after it.
        let sizes = [5, (1 << 20) + 7, 3, 0, 70_000] + (0..<25).map { 100 + $0 }
        var originals: [DocumentID: (name: String, bytes: [UInt8])] = [:]
        for (i, size) in sizes.enumerated() {
            if i == 7 {
                #expect(throws: VaultError.self) { try session.add(from: Failing(after: 300_000), name: "broken.bin") }
            }
            let bytes = SystemRandom().bytes(size)
            let record = try session.add(from: BytesSource(bytes), name: "doc-\(i).bin")
            originals[record.id] = ("doc-\(i).bin", bytes)
        }
        try session.finish()
        #expect(originals.count == sizes.count)
        let staged = try FileManager.default.contentsOfDirectory(atPath: vault.store.stagingPath)
        #expect(staged.filter { $0.hasPrefix(AtomicFile.temporaryPrefix) } == [])
        let objects = try FileManager.default.contentsOfDirectory(atPath: vault.store.objectsPath)
        #expect(objects.filter { $0.hasSuffix(".meta.vlt") }.count == sizes.count)
        #expect(objects.filter { !$0.hasSuffix(".meta.vlt") }.count == sizes.count)
        var headers = Set<[UInt8]>()
        for (id, original) in originals {
            let opening = try vault.openCaptured(id, identities: [office])
            #expect(opening.metadata.name == original.name)
            var bytes: [UInt8] = []
            while let piece = try opening.next() { bytes += piece }
            #expect(bytes == original.bytes, "\(original.name)")
            let file = try #require(FileManager.default.contents(atPath: vault.store.objectPath(id)))
            headers.insert(Array(file.prefix(AgeFormat.headerLength(for: [office.recipient]))))
        }
        #expect(headers.count == sizes.count)  // every data file has its own file key and share
    }
}
