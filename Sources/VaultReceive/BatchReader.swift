#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The reader of one batch body, picked by its `Content-Type`: the JSON payload (its shape
/// told by the byte after `{"Files":[`) or a `multipart/form-data` form.
package struct BatchReader: PieceReader {
    /// How the batch came.
    package enum Wire: String, Sendable { case json, form }

    private enum State {
        /// JSON whose shape is not known yet: the first bytes, kept.
        case sniffing([UInt8])
        case json(PayloadReader)
        case sealed(SealedPayloadReader)
        case captured(CapturedPayloadReader)
        case form(FormReader)
    }

    private var state: State
    private let maxDocuments: Int
    private let identities: [AgeIdentity]
    private let requireSealed: Bool
    /// Whether the readers hash each document (``PayloadReader``'s `digests`).
    private let digests: Bool
    /// How the batch came.
    package let wire: Wire

    /// `{"Files":[`: what both shapes of the payload start with.
    private static let prefix = Array(#"{"Files":["#.utf8)
    /// What a sealed payload starts with (docs/EXPORT.md, "Sealed payloads").
    private static let sealedPrefix = Array(#"{"Sealed":"#.utf8)
    /// What a capture-only station's payload starts with (docs/EXPORT.md, "Captured payloads").
    private static let capturedPrefix = Array(#"{"Captured""#.utf8)

    /// A reader for a body of `contentType`.
    /// - Throws: ``VaultError/Code/usage`` for a content type that is neither (the receiver
    ///   answers 415).
    /// - Parameter digests: whether the readers hash each document; off for a consumer that
    ///   hashes what it is given and checks the SHA-256 each `.end` declares (empty: none).
    package init(
        contentType: String?, maxDocuments: Int, identities: [AgeIdentity] = [], requireSealed: Bool = false,
        digests: Bool = true
    ) throws {
        self.digests = digests
        self.maxDocuments = maxDocuments
        self.identities = identities
        self.requireSealed = requireSealed
        let type = (contentType ?? "").split(separator: ";").first.map {
            $0.trimmingSpaces().lowercased()
        }
        switch type {
        case "application/json":
            state = .sniffing([])
            wire = .json
        case "multipart/form-data":
            guard let boundary = MultipartReader.boundary(ofContentType: contentType ?? "") else {
                throw VaultError(.headerMalformed, "multipart/form-data without a boundary")
            }
            let reader = FormReader(
                boundary: boundary, maxDocuments: maxDocuments, identities: identities, requireSealed: requireSealed,
                digests: digests)
            state = .form(reader)
            wire = .form
        default:
            throw VaultError(
                .usage, "a batch is application/json or multipart/form-data, not '\((contentType ?? "").prefix(80))'")
        }
    }

    /// Reads the next piece.
    package mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (PayloadReader.Event) throws -> Void) throws {
        switch state {
        case .json(var reader):
            state = .sniffing([])
            defer { state = .json(reader) }
            try reader.read(piece, handle)
        case .form(var reader):
            state = .sniffing([])
            defer { state = .form(reader) }
            try reader.read(piece, handle)
        case .sealed(var reader):
            state = .sniffing([])
            defer { state = .sealed(reader) }
            try reader.read(piece, handle)
        case .captured(var reader):
            state = .sniffing([])
            defer { state = .captured(reader) }
            try reader.read(piece, handle)
        case .sniffing(var first):
            let take = min(piece.count, Self.prefix.count + 1 - first.count)
            first += piece[0..<take]
            guard first.count == Self.prefix.count + 1 else {
                state = .sniffing(first)
                return
            }
            if first == Self.capturedPrefix || (first.starts(with: Self.sealedPrefix) && identities.isEmpty) {
                // Kept as it came, nothing opened: a capture-only station's batch (by any
                // receiver), or a sealed one taken by a receiver that holds no identity.
                var reader = CapturedPayloadReader(
                    maxDocuments: maxDocuments, sealedLayout: first != Self.capturedPrefix)
                state = .captured(reader)
                try first.withUnsafeBytes { try reader.read($0, handle) }
                state = .captured(reader)
                try reader.read(UnsafeRawBufferPointer(rebasing: piece[take...]), handle)
                state = .captured(reader)
                return
            }
            if first.starts(with: Self.sealedPrefix) {
                var reader = SealedPayloadReader(identities: identities, maxDocuments: maxDocuments, digests: digests)
                state = .sealed(reader)
                try first.withUnsafeBytes { try reader.read($0, handle) }
                state = .sealed(reader)
                try reader.read(UnsafeRawBufferPointer(rebasing: piece[take...]), handle)
                state = .sealed(reader)
                return
            }
            guard !requireSealed else { throw Self.notSealed }
            let shape: PayloadShape = first.last == 0x22 ? .strings : .objects
            var reader = PayloadReader(shape: shape, maxDocuments: maxDocuments, digests: digests)
            state = .json(reader)
            try first.withUnsafeBytes { try reader.read($0, handle) }
            state = .json(reader)
            try reader.read(UnsafeRawBufferPointer(rebasing: piece[take...]), handle)
            state = .json(reader)
        }
    }

    /// The refusal of a plaintext batch by a receiver that takes sealed ones only (415).
    static let notSealed = VaultError(
        .usage,
        "this receiver takes sealed batches only (age files to the office's recipients): a plaintext batch is refused")

    /// The file keys of a sealed batch's documents, in order (empty for a plaintext batch).
    package var sealedFileKeys: [SecretBytes] {
        switch state {
        case .sealed(let r): r.fileKeys
        case .form(let r): r.fileKeys
        default: []
        }
    }

    /// Whether the documents are kept sealed as they came, by the ids their entries name (a
    /// sealed batch taken without the identity): a batch sent again is the same when it names the
    /// same ids, since its files, sealed anew for each attempt, differ.
    package var blindSealed: Bool {
        if case .captured(let r) = state { return r.sealedLayout }
        return false
    }

    /// Whether the batch's documents are kept as they came (a capture-only station's, or a
    /// sealed one taken without the identity).
    package var captured: Bool {
        switch state {
        case .captured: true
        case .form(let r): r.captured
        default: false
        }
    }

    /// Checks that the body ended where it should.
    package func finish() throws {
        switch state {
        case .sniffing:
            throw VaultError(.truncated, "the payload ends before its first document")
        case .json(let reader): try reader.finish()
        case .sealed(let reader): try reader.finish()
        case .captured(let reader): try reader.finish()
        case .form(let reader): try reader.finish()
        }
    }
}
