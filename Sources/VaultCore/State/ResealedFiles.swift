#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The names and roles of an upload journal's two files under `uploads/` (VaultUpload writes
/// them; a password change seals them again, so both read them through this one place).
package enum UploadJournalFiles {
    /// `uploads/<job>.journal`: the journal, sealed whole.
    package static func name(job: String) -> String { "\(VaultFile.uploads.name)/\(job).journal" }
    /// `uploads/<job>.journal-log`: `u32 length ‖ sealed state` records, each the batches a save changed.
    package static func logName(job: String) -> String { "\(VaultFile.uploads.name)/\(job).journal-log" }
    /// The role the journal is sealed in.
    package static func role(job: String) -> String { "uploads/\(job)" }
    /// The role of record `n` (from 1) of the change log of journal generation `generation`.
    package static func logRole(job: String, generation: String, n: Int) -> String {
        "uploads/\(job)/\(generation)/\(n)"
    }

    /// Whether `job` can name a journal: a job id is lower-case hex.
    static func isJob(_ job: Substring) -> Bool {
        !job.isEmpty && job.count <= 128 && job.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    /// The job of a journal's (or its change log's) name in the vault folder; nil for any other.
    static func job(ofName name: String) -> (job: String, log: Bool)? {
        let prefix = VaultFile.uploads.name + "/"
        guard name.hasPrefix(prefix) else { return nil }
        let rest = name.dropFirst(prefix.count)
        for (suffix, log) in [(".journal", false), (".journal-log", true)] where rest.hasSuffix(suffix) {
            let job = rest.dropLast(suffix.count)
            if isJob(job) { return (String(job), log) }
        }
        return nil
    }
}

/// The sealed state files a password change seals again under the new key, so that nothing
/// reads as "written with an old password" afterwards: the remote list, the destination list,
/// a receiver's key, and every upload journal with its change log. (The index's rows are sealed again by its
/// own rebuild; `log.head` and `log.anchor` by the change's own history record.)
struct ResealedFiles {
    let vault: Vault

    /// Whether a journal may name `name` as a file to write when the change commits: only these
    /// state files, never a path elsewhere (a planted journal names nothing else).
    static func isResealable(_ name: String) -> Bool {
        name == VaultFile.remotes.name || name == VaultFile.destinations.name || name == VaultFile.receiver.name
            || UploadJournalFiles.job(ofName: name) != nil
    }

    /// Each state file that opens under the current key, sealed under `keys` (one that does not
    /// open is left as it is: refused as before, by the same check).
    func resealed(to keys: EpochKeys) throws -> [PasswordJournal.Resealed] {
        var out: [PasswordJournal.Resealed] = []
        for file in [VaultFile.remotes, .destinations, .receiver] {
            guard let purpose = file.sealedPurpose,
                  let body = opened(file.name, purpose: purpose, role: file.name) else { continue }
            out.append(.init(name: file.name, bytes: try seal(body, purpose: purpose, role: file.name, keys: keys)))
        }
        let uploads = vault.store.path(.uploads)
        guard FileSystem.kind(of: uploads) == .directory else { return out }
        for entry in try FileSystem.list(uploads).sorted() {
            guard let (job, isLog) = UploadJournalFiles.job(ofName: VaultFile.uploads.name + "/" + entry),
                !isLog,
                let body = opened(
                    UploadJournalFiles.name(job: job), purpose: .uploadJournal, role: UploadJournalFiles.role(job: job))
            else { continue }
            out.append(
                .init(
                    name: UploadJournalFiles.name(job: job),
                    bytes: try seal(body, purpose: .uploadJournal, role: UploadJournalFiles.role(job: job), keys: keys))
            )
            if let log = try resealedLog(job: job, journal: body, keys: keys) { out.append(log) }
        }
        return out
    }

    /// The change log of `job`'s journal (whose opened body is `journal`), each record sealed
    /// under `keys` in its role; the records up to the first that does not open (what a reader
    /// of the journal applies), nil when there is none.
    private func resealedLog(job: String, journal: [UInt8], keys: EpochKeys) throws -> PasswordJournal.Resealed? {
        struct Generation: Decodable { var generation: String? }
        let name = UploadJournalFiles.logName(job: job)
        guard FileSystem.kind(of: vault.store.root + "/" + name) == .file,
              let generation = (try? JSONDecoder().decode(Generation.self, from: Data(journal)))?.generation,
              let bytes = try? FileSystem.readFile(vault.store.root + "/" + name, limit: 16 << 20) else { return nil }
        var out: [UInt8] = []
        var offset = 0, n = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(bigEndianBytes: bytes[offset..<offset + 4]))
            guard offset + 4 + length <= bytes.count else { break }
            let role = UploadJournalFiles.logRole(job: job, generation: generation, n: n + 1)
            guard
                let body = try? vault.openState(
                    Array(bytes[offset + 4..<offset + 4 + length]), purpose: .uploadJournal, role: role,
                    what: name)
            else { break }
            let sealed = try seal(body, purpose: .uploadJournal, role: role, keys: keys)
            out.appendBigEndian(UInt32(sealed.count))
            out += sealed
            n += 1
            offset += 4 + length
        }
        return PasswordJournal.Resealed(name: name, bytes: out)
    }

    private func opened(_ name: String, purpose: SealedState.Purpose, role: String) -> [UInt8]? {
        let path = vault.store.root + "/" + name
        guard FileSystem.kind(of: path) == .file,
              let bytes = try? FileSystem.readFile(path, limit: 16 << 20) else {
            return nil
        }
        return try? vault.openState(bytes, purpose: purpose, role: role, what: path)
    }

    private func seal(_ body: [UInt8], purpose: SealedState.Purpose, role: String, keys: EpochKeys) throws -> [UInt8] {
        try SealedState.seal(
            body, purpose: purpose, role: role, keys: keys, vaultID: vault.config.id, random: vault.random)
    }
}
