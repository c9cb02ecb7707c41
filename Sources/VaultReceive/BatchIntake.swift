import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import VaultCore

/// One batch being received: fed the body as it arrives (``read(_:)``), then ``finish()``
/// commits it whole and signs its receipt. Any error, or going away unfinished, keeps nothing.
package final class BatchIntake {
    private let receiver: Receiver
    private let station: String
    private let key: String
    private let head: HistoryHead?
    private var reader: BatchReader
    private let intake: IntakeBatch?
    private let taken: Receiver.Taken?
    private let started: Date
    private let paced: Bool
    private let done: () -> Void
    private var hasher = SHA256()
    private var received: UInt64 = 0
    private var documents: [Receipt.Document] = []
    private var begun = 0
    private var closed = false

    init(
        receiver: Receiver, station: String, key: String, head: HistoryHead?, contentType: String?,
        taken: Receiver.Taken?, paced: Bool, wire: String?, now: Date, done: @escaping () -> Void
    ) throws {
        self.paced = paced
        self.wireOverride = wire
        // A batch stored here is hashed once, by its envelopes' writer (the readers do not): each
        // document's SHA-256 is the one of the bytes stored, checked against what the batch declared.
        reader = try BatchReader(
            contentType: contentType, maxDocuments: receiver.limits.documents, identities: receiver.identities,
            requireSealed: receiver.requireSealed, digests: taken != nil)
        self.receiver = receiver
        self.station = station
        self.key = key
        self.head = head
        self.taken = taken
        self.started = now
        self.done = done
        intake = taken == nil ? IntakeBatch(vault: receiver.vault) : nil
    }

    deinit { close() }

    private func close() {
        guard !closed else { return }
        closed = true
        intake?.discard()
        done()
    }

    /// How the batch came when not by its body's shape (`tus`).
    private let wireOverride: String?

    /// How the batch came (`json`, `form`, `tus`).
    package var wire: String { wireOverride ?? reader.wire.rawValue }

    /// Whether the documents read so far came sealed (a sealed batch's every document is).
    package var sealed: Bool { !reader.sealedFileKeys.isEmpty || reader.captured }

    /// The document being read (from 1), for a refusal.
    private var document: Int? { begun == 0 ? nil : begun }

    /// Reads the next piece of the body.
    /// - Throws: a ``Refusal`` (the batch is then dropped).
    package func read(_ piece: UnsafeRawBufferPointer, now: Date = Date()) throws(Refusal) {
        do {
            received += UInt64(piece.count)
            if received > receiver.limits.bytes {
                throw Refusal(
                    413, "too-large", "the batch is over \(receiver.limits.bytes) bytes, the most this receiver takes")
            }
            let seconds = now.timeIntervalSince(started)
            if paced, seconds > receiver.limits.graceSeconds,
                Double(received) / seconds < Double(receiver.limits.minimumBytesPerSecond)
            {
                throw Refusal(
                    408, "too-slow", "the body arrives at under \(receiver.limits.minimumBytesPerSecond) bytes/s")
            }
            hasher.update(bufferPointer: piece)
            // A batch taken before is read all the same (not stored): a resend must hold the
            // same documents.
            try reader.read(piece) { event in
                switch event {
                case .begin(let index, let header):
                    begun = index + 1
                    try checkProof(header, index: index)
                    // Names cross as relative paths (DocumentName): a back office writes them out as
                    // files, under a folder a name must never leave.
                    if let name = header.name, let why = DocumentName.problem(name) {
                        throw VaultError(.headerMalformed, "document \(index + 1): its name \(why)")
                    }
                    if let metadata = header.captured {
                        try intake?.beginCaptured(metadata: metadata)
                    } else {
                        try intake?.begin(
                            name: DocumentName.normalized(header.name ?? "document-\(index + 1)"),
                            contentType: header.contentType ?? "application/octet-stream", tags: header.tags)
                    }
                    pendingID = header.id
                case .data(let bytes):
                    try intake?.write(bytes)
                case .end(let index, let size, let sha):
                    guard let intake else {
                        documents.append(
                            Receipt.Document(
                                id: pendingID ?? DocumentID(bytes: [UInt8](repeating: 0, count: 16)), sha256: sha,
                                size: size))
                        return
                    }
                    let record = try intake.end()
                    guard record.metadata.size == size else {
                        throw VaultError(.internal, "the stored document differs from what was read")
                    }
                    // `sha`: what the batch declared for it (empty: nothing), the readers not hashing.
                    if !sha.isEmpty, sha != record.metadata.sha256 {
                        throw VaultError(
                            .digestMismatch, "document \(index + 1): its data does not have the SHA-256 its entry says")
                    }
                    documents.append(
                        Receipt.Document(id: pendingID ?? record.id, sha256: record.metadata.sha256, size: size))
                }
            }
        } catch {
            close()
            throw Refusal.of(error, document: document)
        }
    }

    private var pendingID: DocumentID?
    /// The proof the body's sealed documents carry (the same in each).
    private var proof: [UInt8]?

    /// The refusal of a resend that is not the batch taken under its key: the same for every
    /// kind of difference, so that what differs is not told.
    private static let reused = Refusal(
        422, "idempotency-key-reused",
        "this Idempotency-Key was used for another payload; a resend must be the same bytes")

    /// A sealed batch's proof is the same in every document. A resend of a batch that came
    /// sealed must come sealed, and with the proof it came with, and a resend with a proof must
    /// be of a batch that came with the same (batches of stations from before the proof, with
    /// none, are still compared by documents): else it is refused here, at
    /// its first document, before any of its data is read, so that a hop's guess of a sealed
    /// batch's documents is refused the same way whether it is right or wrong (docs/SECURITY.md,
    /// "A resend is the station's").
    private func checkProof(_ header: PayloadReader.Header, index: Int) throws {
        if index == 0 {
            proof = header.proof
        } else if header.proof != proof {
            throw VaultError(.headerMalformed, "document \(index + 1) carries another batch proof than the first")
        }
        guard let taken else { return }
        // Whichever came first: a hop that holds the station's batch back and posts its own guess
        // under the key stores a batch without the proof, and the station's batch, come later,
        // must not be compared with it by documents (that answered right and wrong guesses apart).
        if taken.sealed && !header.sealed { throw Self.reused }
        if header.proof != taken.proof { throw Self.reused }
    }

    /// Whether the body read holds the documents (SHA-256 and size, in order) of the receipt
    /// `answer`; for a sealed batch taken without the identity, whose files are sealed anew for
    /// each attempt, the same ids in order (they are in the clear: nothing is learnt by a match).
    private func sameDocuments(as answer: [UInt8]) -> Bool {
        guard (try? reader.finish()) != nil, let before = try? Receipt.answer(answer).receipt.documents,
            before.count == documents.count
        else { return false }
        if reader.blindSealed { return zip(before, documents).allSatisfy { $0.id == $1.id } }
        return zip(before, documents).allSatisfy { $0.sha256 == $1.sha256 && $0.size == $1.size }
    }

    /// The answer to a batch taken before: its receipt again, when this body holds the same
    /// bytes or (a form's boundary differs from one send to the next) the same documents in the
    /// same order.
    private func resent(_ taken: Receiver.Taken, sha: [UInt8]) throws(Refusal) -> Receiver.Answer {
        guard taken.payloadSHA256 == sha || sameDocuments(as: taken.answer), !taken.sealed || sealed,
            taken.proof == nil || taken.proof == proof
        else { throw Self.reused }
        return Receiver.Answer(status: 200, body: try sealedForStation(taken.answer), duplicate: true, sealed: sealed)
    }

    /// Ends the body: checks its end, commits the batch and signs the receipt.
    package func finish(now: Date = Date()) async throws(Refusal) -> Receiver.Answer {
        defer { close() }
        let sha = Array(hasher.finalize())
        if let taken {
            let answer = try resent(taken, sha: sha)
            await receiver.home.settled(station: station, batch: key)
            return answer
        }
        guard let intake else { throw Refusal(500, "internal", "no intake") }
        do {
            try reader.finish()
            guard !documents.isEmpty else { throw Refusal(400, "empty-batch", "the batch has no documents") }
            let receipt = Receipt(
                batch: key, documents: documents, payloadSHA256: sha, receiver: receiver.vault.id, station: station,
                timeMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))
            let answer = receipt.signed(with: receiver.identity.signingKey)
            let detail = ReceivedBatch(
                station: station, batch: key, head: head?.description, wire: wire,
                payloadSHA256: Hex.encode(sha), answer: String(decoding: answer, as: UTF8.self),
                sealed: sealed ? true : nil, proof: proof.map(Hex.encode), captured: reader.captured ? true : nil)
            var earlier: Receiver.Taken?
            let recorded = try await receiver.home.commit(intake, batch: detail, now: now) {
                earlier = try await takenBefore()
                return earlier != nil
            }
            if !recorded, let earlier { return try resent(earlier, sha: sha) }
            receiver.taken(
                station: station, key: key, head: head,
                batch: .init(payloadSHA256: sha, answer: answer, sealed: sealed, proof: proof),
                documents: documents.count, bytes: received, now: now)
            return Receiver.Answer(
                status: 200, body: try sealedForStation(answer), documents: documents.count, bytes: received,
                sealed: sealed)
        } catch {
            throw Refusal.of(error, document: document)
        }
    }

    /// What the records, read again, say before this batch is recorded as taken: the batch as
    /// another receiver took it meanwhile (of a store's receivers), or nil; a 409 when the
    /// station's head moved where this batch's cannot follow.
    private func takenBefore() async throws -> Receiver.Taken? {
        let current = try await receiver.settled(station: station, key: key)
        if let taken = current.taken { return taken }
        if let head, let known = current.head, let reason = Receiver.headProblem(head, known: known) {
            throw Refusal(
                409, "station-\(reason)",
                "the station's history \(head) cannot follow \(known), which another receiver took meanwhile")
        }
        return nil
    }

    /// The answer as the station gets it: for a sealed batch, sealed under a key from its
    /// documents' file keys (``SealedAnswer``), so no hop that sees the answer reads the
    /// receipt's digests; a plaintext batch's answer as it is.
    private func sealedForStation(_ answer: [UInt8]) throws(Refusal) -> [UInt8] {
        let keys = reader.sealedFileKeys
        guard !keys.isEmpty else { return answer }
        do {
            return try SealedAnswer.seal(answer, key: SealedAnswer.key(fileKeys: keys, batch: key))
        } catch {
            throw Refusal(500, "internal", "the receipt could not be sealed")
        }
    }
}
