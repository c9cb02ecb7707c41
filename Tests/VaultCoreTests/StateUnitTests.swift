import Foundation
import Testing
@testable import VaultCore

/// The history, a password change and a replica, each through VaultCore alone: a vault in a
/// temp folder, its files changed as an attacker with write access (but no password) would.
@Suite struct HistoryUnitTests {
    static let logPath = "/log.vlt"

    /// Records' frames as the log holds them: the file header, then `u32 length ‖ body` each.
    static func frames(_ bytes: [UInt8]) -> (header: [UInt8], frames: [[UInt8]]) {
        var at = HistoryFormat.fileHeader.count
        var out: [[UInt8]] = []
        while at + 4 <= bytes.count {
            let length = Int(UInt32(bigEndianBytes: bytes[at..<at + 4]))
            out.append(Array(bytes[at..<at + 4 + length]))
            at += 4 + length
        }
        return (Array(bytes[..<HistoryFormat.fileHeader.count]), out)
    }

    static func fixture(documents: Int = 3) throws -> ExportTests.Fixture {
        try ExportTests.Fixture(sizes: Array(repeating: 100, count: documents))
    }

    @Test func aCleanHistoryHasOneRecordPerOperationAndNoFinding() throws {
        let f = try Self.fixture()
        let scan = try f.vault.history()
        #expect(scan.findings.isEmpty && scan.noted.isEmpty, "\(scan.findings)")
        #expect(scan.entries.count == 4, "init and three adds")
        #expect(scan.entries.map(\.record?.operation) == [.`init`, .add, .add, .add])
    }

    @Test func swappedRecordsAreFoundMovedAndACutLogTruncated() throws {
        let f = try Self.fixture()
        let path = f.vault.store.root + Self.logPath
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let (header, frames) = Self.frames(original)
        #expect(frames.count == 4)
        // Records 2 and 3 swapped: each is authentic at the position it names.
        try Data(header + frames[0] + frames[2] + frames[1] + frames[3]).write(to: URL(fileURLWithPath: path))
        let swapped = try f.vault.history().findings.map(\.code)
        #expect(swapped.contains(.logRecordMoved), "\(swapped)")
        // The last record cut off at a record boundary: the sealed head still names it.
        try Data(header + frames[0] + frames[1] + frames[2]).write(to: URL(fileURLWithPath: path))
        let cut = try f.vault.history().findings.map(\.code)
        #expect(cut.contains(.logTruncated), "\(cut)")
        // A byte changed inside record 2: it fails, and the record after it no longer follows.
        var flipped = original
        flipped[header.count + frames[0].count + 20] ^= 1
        try Data(flipped).write(to: URL(fileURLWithPath: path))
        let damaged = try f.vault.history().findings
        #expect(damaged.first?.code == .logRecordDamaged && damaged.first?.record == 2, "\(damaged)")
    }

    @Test func findingCodesAreWrittenAsTheirStableStrings() throws {
        let finding = AuditFinding(.logRecordMoved, "record 2 belongs at position 3", record: 2)
        let json = String(decoding: try JSONEncoder().encode(finding), as: UTF8.self)
        #expect(json.contains("\"code\":\"log-record-moved\""), "\(json)")
        #expect(try JSONDecoder().decode(AuditFinding.self, from: Data(json.utf8)) == finding)
        // A code a record noted, unknown to this build, is kept as it was written.
        #expect(AuditFinding.Code(rawValue: "tombstone-refused").description == "tombstone-refused")
    }
}

@Suite struct PasswordChangeUnitTests {
    @Test func theNewPasswordOpensTheOldDoesNotAndEveryDocumentReadsBack() throws {
        let f = try ExportTests.Fixture(sizes: [10, 70_000, 0])
        let summary = try f.vault.changePassword(to: TestKeys.password("a new one"), kdf: .minimum)
        #expect(summary.documents == 3)
        expectError(.wrongPassword) { _ = try f.vault.store.unlock(password: TestKeys.password()) }
        let reopened = try f.vault.store.unlock(password: TestKeys.password("a new one"))
        for r in f.records {
            let reader = try reopened.open(r.id, verifyDigest: true)
            var bytes: [UInt8] = []
            while let piece = try reader.next() { bytes += piece }
            #expect(bytes == f.originals[r.id])
        }
        #expect(try reopened.history().entries.last?.record?.operation == .passwd)
    }

    @Test func aDamagedEnvelopeStopsTheChangeBeforeAnythingIsWritten() throws {
        let f = try ExportTests.Fixture(sizes: [10, 10])
        let config = try Data(contentsOf: URL(fileURLWithPath: f.vault.store.configPath))
        let path = f.vault.store.objectPath(f.records[1].id)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[60] ^= 1  // inside the header's sealed part
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let e = #expect(throws: VaultError.self) {
            _ = try f.vault.changePassword(to: TestKeys.password("next"), kdf: .minimum)
        }
        #expect(e?.code.isDamage == true && e?.remedy == .verifyThenRemoveOrRestore, "\(String(describing: e))")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: f.vault.store.configPath)) == config, "vault.json is unchanged")
        _ = try f.vault.store.unlock(password: TestKeys.password())
    }

    @Test func theJournalRoundTripsAndAnyChangeToItIsDamage() throws {
        let id = DocumentID(bytes: Array(repeating: 7, count: EnvelopeFormat.documentIDSize))
        let journal = PasswordJournal(
            oldConfig: Array("old".utf8), newConfig: Array("new!".utf8),
            entries: [.init(id: id, old: [1, 2, 3], new: [4, 5, 6])],
            resealed: [.init(name: "remotes.vlt", bytes: [9, 9]), .init(name: "uploads/ab12.journal", bytes: [7])])
        let bytes = journal.encoded()
        let back = try PasswordJournal.decode(bytes)
        #expect(
            back.oldConfig == journal.oldConfig && back.newConfig == journal.newConfig
                && back.resealed == journal.resealed)
        #expect(back.entries.map(\.id) == [id] && back.entries[0].old == [1, 2, 3] && back.entries[0].new == [4, 5, 6])
        for i in [0, 9, bytes.count / 2, bytes.count - 1] {
            var bad = bytes
            bad[i] ^= 1
            expectError(.vaultDamaged, "byte \(i)") { _ = try PasswordJournal.decode(bad) }
        }
        expectError(.vaultDamaged) { _ = try PasswordJournal.decode(Array(bytes.dropLast(40))) }
    }

    /// A journal needs no password, so it names only files a password change seals again: never
    /// an object, vault.json or a path out of the folder.
    @Test(arguments: [
        "objects/0123456789abcdef0123456789abcdef.vlt", "vault.json", "../outside", "uploads/../vault.json",
        "uploads/ABC.journal", "uploads/.journal", "/etc/passwd"
    ])
    func aJournalNamingAnyOtherFileIsDamage(name: String) throws {
        let journal = PasswordJournal(
            oldConfig: [1], newConfig: [2], entries: [], resealed: [.init(name: name, bytes: [9])])
        expectError(.vaultDamaged, "\(name)") { _ = try PasswordJournal.decode(journal.encoded()) }
    }
}

@Suite struct ReplicaUnitTests {
    @Test func aReplicaOpensWithTheSourcesPasswordOnlyAndIsMadeOnlyInAnEmptyFolder() throws {
        let f = try ExportTests.Fixture(sizes: [10])
        let config = Array(try Data(contentsOf: URL(fileURLWithPath: f.vault.store.configPath)))
        // A wrong password: refused before anything is created.
        let wrong = VaultStore(root: f.dir.file("wrong"))
        expectError(.wrongPassword) {
            _ = try wrong.createReplica(configBytes: config, password: TestKeys.password("no"), source: "s3://b/p")
        }
        #expect(!FileManager.default.fileExists(atPath: f.dir.file("wrong")))
        // A folder that holds something: refused.
        try FileManager.default.createDirectory(atPath: f.dir.file("busy"), withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: f.dir.file("busy/x"), contents: Data())
        expectError(.alreadyExists) {
            _ = try VaultStore(root: f.dir.file("busy")).createReplica(
                configBytes: config, password: TestKeys.password(), source: "s3://b/p")
        }
        // The same vault, empty, its history starting with the clone.
        let replica = try VaultStore(root: f.dir.file("replica")).createReplica(
            configBytes: config, password: TestKeys.password(), source: "s3://b/p")
        #expect(replica.id == f.vault.id)
        #expect(try replica.records().records.isEmpty)
        let scan = try replica.history()
        #expect(scan.entries.map(\.record?.operation) == [.clone] && scan.findings.isEmpty)
        #expect(scan.entries.first?.record?.destinations == ["s3://b/p"])
        // A new vault is made by the same path: the same files, the same modes.
        let made = Set(try FileManager.default.contentsOfDirectory(atPath: f.dir.file("replica")))
        let original = Set(try FileManager.default.contentsOfDirectory(atPath: f.vault.store.root))
        #expect(made.isSubset(of: original), "\(made.subtracting(original))")
        let mode = try FileManager.default.attributesOfItem(atPath: f.dir.file("replica"))[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }
}
