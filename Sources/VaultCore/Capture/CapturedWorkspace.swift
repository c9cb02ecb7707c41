#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CapturedDocument {
    /// A new document's id and its two files, created empty in the vault's staging folder
    /// before its bytes come (``AtomicFile``: unlinked when let go uncommitted).
    package final class Staged: @unchecked Sendable {
        // @unchecked: made on one thread and handed to another once (``MadeAhead``), then used there.
        let id: DocumentID
        let data: AtomicFile
        let metadata: AtomicFile

        init(store: VaultStore, random: any RandomSource) throws {
            id = DocumentID.random(using: random)
            let staging = try store.staging()
            data = try AtomicFile(destination: store.objectPath(id), staging: staging, random: random)
            metadata = try AtomicFile(destination: store.capturedMetadataPath(id), staging: staging, random: random)
        }
    }

    /// What every document of one add to a capture-only station is sealed with: the recipients,
    /// each document's age keyings and staged files made ahead on another core, and one set of
    /// buffers. ``close()`` (or letting it go) removes the staged files not used.
    package final class Workspace {
        let recipients: [AgeRecipient]
        let keyings: MadeAhead<AgeFileKeying>
        let staged: MadeAhead<Staged>
        let buffers = Buffers()

        /// A workspace sealing to `recipients` into `store`. Made only once the unlock has
        /// checked `vault.json`: recipients put there by someone without the password must not
        /// get even a staged file.
        package init(recipients: [AgeRecipient], store: VaultStore, random: any RandomSource) {
            self.recipients = recipients
            keyings = MadeAhead { PayloadSealing.newKeying(recipients) }
            // Few staged ahead: each holds two descriptors and two inodes, and a killed add
            // leaves them for the next writer to sweep (a review found 18 with a depth of 8).
            staged = MadeAhead(depth: 2) { try Staged(store: store, random: random) }
        }

        /// Makes nothing more ahead and removes the staged files not used.
        package func close() {
            keyings.close()
            staged.close()
        }

        deinit { close() }
    }

    /// The buffers a document is sealed through: three for the plaintext (one sealed, one read,
    /// one read ahead), two for the sealed bytes. One set serves every document of an add (a fresh
    /// set for each 4 KiB document cost more than sealing it); the plaintext each held is wiped
    /// when its document is sealed, and only what was read: a small document touches few pages.
    package final class Buffers {
        let batch = 16 * AgeFormat.chunkSize
        let plain: [UnsafeMutableRawBufferPointer]
        let sealed: [UnsafeMutableRawBufferPointer]
        var used = [0, 0, 0]

        package init() {
            let batch = batch
            plain = (0..<3).map { _ in .allocate(byteCount: batch, alignment: 64) }
            sealed = (0..<2).map { _ in .allocate(byteCount: AgeFileSealer.maxOutput(for: batch), alignment: 64) }
        }

        /// Wipes the plaintext read into the buffers since the last wipe.
        func wipe() {
            for (b, n) in zip(plain, used) { Sodium.wipe(UnsafeMutableRawBufferPointer(rebasing: b[0..<n])) }
            used = [0, 0, 0]
        }

        deinit {
            wipe()
            for b in plain + sealed { b.deallocate() }
        }
    }
}
