#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Imports RNCryptor v3 files as documents, one at a time, in constant memory: each file is
/// read once, its HMAC computed and its AES-256-CBC decrypted as it streams into a new sealed
/// envelope, and the document is committed only when the HMAC (constant-time) and the padding
/// check out. A file whose contents are already in the vault is skipped (so an interrupted
/// import can be run again); a file that fails stops the import, or, with ``Options/skipBad``,
/// is named and left out. The history records the import once, as ok, partial or failed.
package final class Importer {
    /// One file to import, and the document's name.
    package struct File: Sendable {
        package var path: String
        package var name: String
        package init(path: String, name: String) {
            self.path = path
            self.name = name
        }
    }

    /// How documents are made.
    package struct Options: Sendable {
        /// The MIME type (nil: detected from the decrypted content).
        package var contentType: String?
        package var tags: [String] = []
        /// Import a file even when its contents are already in the vault.
        package var allowDuplicate = false
        /// Delete each source file once its document is committed and synced.
        package var removeSource = false
        /// Go on after a file that fails.
        package var skipBad = false
        package init() {}
    }

    /// What the importer reports as it works.
    package enum Event: Sendable {
        case started(files: Int, bytes: UInt64)
        case fileStarted(position: Int, of: Int, name: String)
        /// RNCryptor bytes read so far, of the total of every file.
        case progress(done: UInt64, total: UInt64)
        case imported(path: String, record: DocumentRecord)
        /// Already in the vault (`duplicate`).
        case fileSkipped(path: String, error: VaultError)
        /// Failed, and left out (with skipping asked for).
        case fileFailed(path: String, error: VaultError)
        case finished(imported: Int, failed: Int, skipped: Int)
    }

    /// What became of each file so far (readable after ``run(_:)`` threw, too).
    package struct Outcome: Sendable {
        package var imported: [(path: String, record: DocumentRecord)] = []
        package var failed: [(path: String, error: VaultError)] = []
        package var skipped: [(path: String, error: VaultError)] = []
    }

    /// What opens the files: RNCryptor v3 keys, or age identities (an age v1 file each).
    package enum Decryption: Sendable {
        case rncryptor(RNCryptorKeys)
        case age([AgeIdentity])
    }

    private let vault: Vault
    private let decryption: Decryption
    private let options: Options
    private let onEvent: (Event) -> Void
    package private(set) var outcome = Outcome()

    /// An importer of files encrypted under `keys` into `vault`.
    /// - Parameter failedBefore: files that failed before the import (a name the front end
    ///   could not read), counted as failed.
    package convenience init(
        vault: Vault, keys: RNCryptorKeys, options: Options, failedBefore: [(path: String, error: VaultError)] = [],
        onEvent: @escaping (Event) -> Void = { _ in }
    ) {
        self.init(
            vault: vault, decryption: .rncryptor(keys), options: options, failedBefore: failedBefore, onEvent: onEvent)
    }

    /// An importer of files `decryption` opens into `vault`.
    package init(
        vault: Vault, decryption: Decryption, options: Options, failedBefore: [(path: String, error: VaultError)] = [],
        onEvent: @escaping (Event) -> Void = { _ in }
    ) {
        self.vault = vault
        self.decryption = decryption
        self.options = options
        self.onEvent = onEvent
        outcome.failed = failedBefore
    }

    /// Imports `files` in order.
    /// - Throws: the first failure, as `cannot import PATH: …`, unless ``Options/skipBad``; what
    ///   was committed before it stays, durably, and the history records the import as failed.
    package func run(_ files: [File]) throws {
        let sizes = files.map { (try? OpenFile.openForReading($0.path).size()) ?? 0 }
        let total = sizes.reduce(0, +)
        onEvent(.started(files: files.count, bytes: total))
        let session = try AddSession(vault: vault, operation: .import)
        var done: UInt64 = 0
        do {
            for (i, file) in files.enumerated() {
                onEvent(.fileStarted(position: i + 1, of: files.count, name: file.name))
                try importing(file, session: session, done: done, total: total)
                done += sizes[i]
                onEvent(.progress(done: done, total: total))
            }
        } catch {
            try? session.finish(outcome: .failed, detail: VaultError.from(error).message)
            throw error
        }
        try session.finish(outcome: outcome.failed.isEmpty && outcome.skipped.isEmpty ? .ok : .partial)
        onEvent(
            .finished(imported: outcome.imported.count, failed: outcome.failed.count, skipped: outcome.skipped.count))
    }

    /// One file: imported, skipped as a duplicate, or failed (thrown unless skipping).
    private func importing(_ file: File, session: AddSession, done: UInt64, total: UInt64) throws {
        do {
            let input = try OpenFile.openForReading(file.path)
            let reader: any ByteSource, consumed: () -> UInt64
            switch decryption {
            case .rncryptor(let keys):
                let r = try RNCryptorReader(input: input, keys: keys)
                (reader, consumed) = (r, { r.consumed })
            case .age(let identities):
                let counted = CountingSource(input)
                (reader, consumed) = (try AgeReader(input: counted, identities: identities), { counted.count })
            }
            let record = try session.add(
                from: reader, name: file.name, contentType: options.contentType, tags: options.tags,
                allowDuplicate: options.allowDuplicate
            ) { [onEvent] _ in
                onEvent(.progress(done: done + consumed(), total: total))
            }
            if options.removeSource {
                // The document must be durable before its source goes: sync now, not at the end.
                try session.syncCommits()
                try FileSystem.remove(file.path)
                try FileSystem.syncDirectory(FileSystem.directory(of: file.path))
            }
            outcome.imported.append((file.path, record))
            onEvent(.imported(path: file.path, record: record))
        } catch let e as VaultError where e.code == .duplicate {
            outcome.skipped.append((file.path, e))
            onEvent(.fileSkipped(path: file.path, error: e))
        } catch {
            let e = VaultError.from(error)
            outcome.failed.append((file.path, e))
            guard options.skipBad else {
                throw VaultError(
                    e.code, "cannot import \(file.path): \(e.message)",
                    hint: e.code == .hmacMismatch
                        ? "check the RNCryptor password or keys; nothing was added from this file"
                        : e.code == .wrongPassword
                            ? "check the identity file; nothing was added from this file"
                            : "nothing was added from this file", cause: e.cause)
            }
            onEvent(.fileFailed(path: file.path, error: e))
        }
    }
}

/// A source that counts the bytes read from it (an import's progress in file bytes).
final class CountingSource: ByteSource {
    private let input: any ByteSource
    private(set) var count: UInt64 = 0
    init(_ input: any ByteSource) { self.input = input }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try input.read(into: buffer)
        count += UInt64(n)
        return n
    }
}
