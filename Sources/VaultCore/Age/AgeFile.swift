import Crypto
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CSodium

/// The age v1 file format's constants and sizes (c2sp.org/age).
package enum AgeFormat {
    /// Plaintext bytes per STREAM chunk.
    package static let chunkSize = 65536
    /// Poly1305's tag, after every chunk.
    package static let tagSize = 16
    /// The payload nonce before the first chunk.
    package static let nonceSize = 16
    static let fileKeySize = 16
    static let x25519Info = Array("age-encryption.org/v1/X25519".utf8)
    static let hybridInfo = Data("age-encryption.org/mlkem768x25519".utf8)
    static let hybridSuite = HPKE.Ciphersuite(kem: .XWingMLKEM768X25519, kdf: .HKDF_SHA256, aead: .chaChaPoly)
    /// X-Wing's encapsulated key: ML-KEM-768's ciphertext (1,088) and an X25519 share (32).
    static let hybridEncSize = 1120

    /// The STREAM chunks of `size` plaintext bytes: at least one (an empty file has one empty chunk).
    package static func chunks(_ size: UInt64) -> UInt64 { max(1, (size + UInt64(chunkSize) - 1) / UInt64(chunkSize)) }

    /// The whole file's length for `size` plaintext bytes under a header of `headerLength` bytes:
    /// known before the first byte, as a payload's length must be.
    package static func fileLength(plaintext size: UInt64, headerLength: Int) -> UInt64 {
        UInt64(headerLength + nonceSize) + size + chunks(size) * UInt64(tagSize)
    }

    /// The header's length for `recipients` (the same for every file sealed to them).
    package static func headerLength(for recipients: [AgeRecipient]) -> Int {
        let stanzas = recipients.map { r -> AgeStanza in
            switch r {
            case .x25519:
                AgeStanza(
                    type: "X25519", args: [String(repeating: "A", count: 43)], body: .init(repeating: 0, count: 32))
            case .hybrid:
                AgeStanza(
                    type: "mlkem768x25519", args: [String(repeating: "A", count: 1494)],
                    body: .init(repeating: 0, count: 32))
            }
        }
        return AgeHeader.encodeWithoutMAC(stanzas).count + 1 + 43 + 1
    }
}

/// What seals one age file: its file key, payload nonce and header (the file key wrapped to
/// every recipient, and the MAC). Made once per file from fresh randomness.
package struct AgeFileKeying: Sendable {
    let fileKey: SecretBytes
    package let nonce: [UInt8]
    /// The header's bytes, through the MAC line.
    package let header: [UInt8]

    /// A new file key and nonce, wrapped to `recipients`.
    package init(recipients: [AgeRecipient], random: any RandomSource = SystemRandom()) throws {
        precondition(!recipients.isEmpty, "internal error: sealing to no recipient")
        let fileKey = try SecretBytes.random(count: AgeFormat.fileKeySize, using: random)
        let stanzas = try recipients.map { try Self.wrap(fileKey, to: $0, random: random) }
        self.fileKey = fileKey
        nonce = random.bytes(AgeFormat.nonceSize)
        header = AgeHeader.encode(stanzas, fileKey: fileKey)
    }

    /// Given parts (the test vectors' file key and nonce).
    init(fileKey: SecretBytes, nonce: [UInt8], header: [UInt8]) {
        (self.fileKey, self.nonce, self.header) = (fileKey, nonce, header)
    }

    /// The prefix of the file: header, then nonce.
    package var prefix: [UInt8] { header + nonce }

    /// A stanza wrapping `fileKey` to `recipient`.
    static func wrap(_ fileKey: SecretBytes, to recipient: AgeRecipient, random: any RandomSource) throws -> AgeStanza {
        switch recipient {
        case .x25519(let pk):
            let ephemeral = try SecretBytes.random(count: 32, using: random)
            var share = [UInt8](repeating: 0, count: 32), shared = [UInt8](repeating: 0, count: 32)
            let ok = ephemeral.withUnsafeBytes { e in
                let ep = e.bindMemory(to: UInt8.self).baseAddress!
                return crypto_scalarmult_base(&share, ep) == 0 && crypto_scalarmult(&shared, ep, pk) == 0
            }
            defer { Sodium.wipe(&shared) }
            guard ok else { throw VaultError(.usage, "the age recipient \(recipient) is not a usable X25519 key") }
            let body = try seal(fileKey, with: wrapKey(shared: shared, salt: share + pk))
            return AgeStanza(
                type: "X25519", args: [String(decoding: AgeBase64.encode(share), as: UTF8.self)], body: body)
        case .hybrid(let pk):
            let key = try XWingMLKEM768X25519.PublicKey(rawRepresentation: pk)
            var sender = try HPKE.Sender(
                recipientKey: key, ciphersuite: AgeFormat.hybridSuite, info: AgeFormat.hybridInfo)
            let body = try fileKey.withUnsafeBytes { try sender.seal(Data($0)) }
            return AgeStanza(
                type: "mlkem768x25519",
                args: [String(decoding: AgeBase64.encode(Array(sender.encapsulatedKey)), as: UTF8.self)],
                body: Array(body))
        }
    }

    static func wrapKey(shared: [UInt8], salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: shared), salt: salt, info: AgeFormat.x25519Info, outputByteCount: 32)
    }

    static let zeroNonce = try! ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12))

    static func seal(_ fileKey: SecretBytes, with key: SymmetricKey) throws -> [UInt8] {
        let box = try fileKey.withUnsafeBytes { try ChaChaPoly.seal(Data($0), using: key, nonce: zeroNonce) }
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// The payload key: HKDF(file key, salt nonce, info "payload").
    static func payloadKey(fileKey: SecretBytes, nonce: [UInt8]) throws -> SecretBytes {
        let key = fileKey.withUnsafeBytes {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: $0), salt: nonce, info: Array("payload".utf8), outputByteCount: 32)
        }
        return try key.withUnsafeBytes { try SecretBytes(copying: $0) }
    }
}

/// Seals age STREAM chunks (ChaCha20-Poly1305, nonce = 11-byte big-endian counter ‖ final flag)
/// under one payload key, a batch of chunks at a time on several threads (each chunk is
/// independent, as in the envelope's ``ChunkCipher``).
///
/// Sealing goes through swift-crypto (BoringSSL's assembly, AVX2/AVX-512 here) rather than
/// libsodium's portable ChaCha20-Poly1305: measured on this machine, the same 20 x 50 MiB sealed
/// export to a pipe took 2.23 CPU s/GB with libsodium's and the plain one 1.35; OpenSSL's
/// assembly does 3.7 GB/s where libsodium does 1.2 (research/perf-anchors.md). Opening (the
/// receiver, import) stays on libsodium, which writes into the caller's buffer.
final class AgeChunkCipher: Sendable {
    private let key: SecretBytes
    let threads: Int

    init(payloadKey: SecretBytes, threads: Int) {
        key = payloadKey
        self.threads = max(1, threads)
    }

    private static func withNonce<R>(_ index: UInt64, last: Bool, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { n in
            n.initialize(repeating: 0)
            for i in 0..<8 { n[10 - i] = UInt8(truncatingIfNeeded: index >> (8 * UInt64(i))) }
            n[11] = last ? 1 : 0
            return body(UnsafePointer(n.baseAddress!))
        }
    }

    /// Seals one chunk into `out` (its ciphertext, then its tag), in place: libsodium's
    /// ChaCha20-Poly1305 (IETF), as the envelope's chunks are sealed. (swift-crypto's seal
    /// returned each chunk in a new allocation, copied here: a capture-only station's add spent
    /// a fifth of its system time on the page faults and TLB shootdowns of those buffers.)
    func seal(_ plain: UnsafeRawBufferPointer, index: UInt64, last: Bool, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == plain.count + AgeFormat.tagSize, "internal error: age chunk size")
        // An empty chunk has no address: any valid one will do, as none of its bytes is read.
        let message = (plain.baseAddress ?? UnsafeRawPointer(out.baseAddress!)).assumingMemoryBound(to: UInt8.self)
        Self.withNonce(index, last: last) { nonce in
            key.withUnsafeBytes { k in
                var written: UInt64 = 0
                let rc = crypto_aead_chacha20poly1305_ietf_encrypt(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, message, UInt64(plain.count), nil,
                    0, nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                precondition(rc == 0 && written == UInt64(out.count), "internal error: age chunk encryption failed")
            }
        }
    }

    func open(
        _ sealed: UnsafeRawBufferPointer, index: UInt64, last: Bool, into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard sealed.count >= AgeFormat.tagSize else { return false }
        return Self.withNonce(index, last: last) { nonce in
            key.withUnsafeBytes { k in
                var written: UInt64 = 0
                return crypto_aead_chacha20poly1305_ietf_decrypt(
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
                    sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count), nil, 0, nonce,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
    }

    /// Seals `plain` as chunks `first…` (all full but perhaps the last, which is final when
    /// `final`) into `out`; returns the bytes written.
    func sealBatch(
        _ plain: UnsafeRawBufferPointer, first: UInt64, final: Bool, into out: UnsafeMutableRawBufferPointer
    ) -> Int {
        let cs = AgeFormat.chunkSize, ss = cs + AgeFormat.tagSize
        let count = max(1, (plain.count + cs - 1) / cs)
        let one = { (i: Int) in
            let start = i * cs, end = min(start + cs, plain.count)
            let p = UnsafeRawBufferPointer(rebasing: plain[start..<end])
            self.seal(
                p, index: first + UInt64(i), last: final && i == count - 1,
                into: UnsafeMutableRawBufferPointer(rebasing: out[i * ss..<(i * ss + p.count + AgeFormat.tagSize)]))
        }
        let shares = min(threads, count)
        if shares <= 1 {
            for i in 0..<count { one(i) }
        } else {
            withoutActuallyEscaping(one) { one in
                let work = UncheckedSendable(one)
                DispatchQueue.concurrentPerform(iterations: shares) { s in
                    for i in (s * count / shares)..<((s + 1) * count / shares) { work.value(i) }
                }
            }
        }
        return plain.count + count * AgeFormat.tagSize
    }
}

/// Seals one document's plaintext into an age file as it arrives, batch by batch: the prefix
/// (header and nonce) first, then each batch's chunks, the last one flagged final. The
/// plaintext's size is known in advance, so the final chunk is known without looking ahead.
final class AgeFileSealer {
    private let cipher: AgeChunkCipher
    private let size: UInt64
    private var sealed: UInt64 = 0
    private var index: UInt64 = 0
    let prefix: [UInt8]

    init(keying: AgeFileKeying, plaintextSize: UInt64, threads: Int) throws {
        cipher = AgeChunkCipher(
            payloadKey: try AgeFileKeying.payloadKey(fileKey: keying.fileKey, nonce: keying.nonce), threads: threads)
        size = plaintextSize
        prefix = keying.prefix
    }

    /// Room `output` needs for a batch of `plaintext` bytes.
    static func maxOutput(for plaintext: Int) -> Int {
        plaintext + max(1, (plaintext + AgeFormat.chunkSize - 1) / AgeFormat.chunkSize) * AgeFormat.tagSize
    }

    /// Seals the next `plain` bytes (whole chunks, unless they end the document).
    func seal(_ plain: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        guard plain.count > 0 else { return 0 }
        let end = sealed + UInt64(plain.count)
        precondition(end <= size, "internal error: more plaintext than the document's size")
        precondition(end == size || plain.count % AgeFormat.chunkSize == 0, "internal error: a partial age chunk")
        let n = cipher.sealBatch(plain, first: index, final: end == size, into: out)
        index += UInt64((plain.count + AgeFormat.chunkSize - 1) / AgeFormat.chunkSize)
        sealed = end
        return n
    }

    /// A job that seals chunk `i` of the next batch into `out` at `i` whole sealed chunks, for
    /// the reader to run on its threads as each chunk verifies (``StreamReader/onChunk``): the
    /// plaintext is sealed again while it is in that core's cache, without a second pass over
    /// the batch. Then ``sealedByJob(_:)`` counts the batch. (The empty final chunk of an empty
    /// document is left to ``finish(into:)``.)
    func job(into out: UnsafeMutableRawBufferPointer) -> (Int, UnsafeRawBufferPointer) -> Void {
        let cipher = cipher, first = index, before = sealed, size = size
        return { i, plain in
            guard plain.count > 0 else { return }
            let cs = AgeFormat.chunkSize, ss = cs + AgeFormat.tagSize
            let end = before + UInt64(i * cs + plain.count)
            precondition(end <= size, "internal error: more plaintext than the document's size")
            precondition(end == size || plain.count == cs, "internal error: a partial age chunk")
            cipher.seal(
                plain, index: first + UInt64(i), last: end == size,
                into: UnsafeMutableRawBufferPointer(rebasing: out[i * ss..<(i * ss + plain.count + AgeFormat.tagSize)]))
        }
    }

    /// After ``job(into:)`` sealed a batch of `plainCount` bytes: moves past it; returns the bytes
    /// it sealed.
    func sealedByJob(_ plainCount: Int) -> Int {
        guard plainCount > 0 else { return 0 }
        let chunks = (plainCount + AgeFormat.chunkSize - 1) / AgeFormat.chunkSize
        index += UInt64(chunks)
        sealed += UInt64(plainCount)
        precondition(sealed <= size, "internal error: more plaintext than the document's size")
        return plainCount + chunks * AgeFormat.tagSize
    }

    /// After the last batch: the empty final chunk of an empty document, else nothing.
    func finish(into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(sealed == size, "internal error: the document ended early")
        guard size == 0 else { return 0 }
        cipher.seal(
            UnsafeRawBufferPointer(start: nil, count: 0), index: 0, last: true,
            into: UnsafeMutableRawBufferPointer(rebasing: out[0..<AgeFormat.tagSize]))
        return AgeFormat.tagSize
    }
}

/// Reads an age file and releases its plaintext chunk by chunk as each authenticates: the
/// header is parsed (at most ``AgeHeader/maxLength`` bytes), the file key unwrapped with the
/// first identity a stanza matches, the header MAC checked, then the STREAM opened. A failure
/// throws ``AgeFailure``; plaintext released before it came from authenticated chunks only.
package final class AgeReader: ByteSource {
    private let input: any ByteSource
    private var cipher: AgeChunkCipher?
    private var buffer: [UInt8]  // read, not yet a whole chunk
    private var plain: [UInt8] = []
    private var plainAt = 0
    private var index: UInt64 = 0
    private var done = false
    /// Plaintext bytes released so far.
    package private(set) var released: UInt64 = 0
    /// The header's length (what preceded the nonce).
    package let headerLength: Int

    /// Opens the header of `input` with `identities`.
    /// - Throws: ``AgeFailure`` (header, no match, HMAC), or the input's error.
    package init(input: any ByteSource, identities: [AgeIdentity]) throws {
        self.input = input
        var head: [UInt8] = []
        var header: AgeHeader?
        var ended = false
        var parser = AgeHeaderParser()
        while header == nil {
            var more = [UInt8](repeating: 0, count: 16 << 10)
            let n = try more.withUnsafeMutableBytes { try input.readFully(into: $0) }
            head += more[..<n]
            ended = n < more.count
            header = try head.withUnsafeBytes { try parser.parse($0, complete: ended) }
        }
        let h = header!
        headerLength = h.length
        let fileKey = try Self.unwrap(h, identities)
        guard AgeHeader.macMatches(h, fileKey: fileKey) else {
            throw AgeFailure(.hmac, "the header's MAC does not match")
        }
        buffer = Array(head[h.length...])
        if buffer.count < AgeFormat.nonceSize && !ended {
            var more = [UInt8](repeating: 0, count: AgeFormat.nonceSize - buffer.count)
            let n = try more.withUnsafeMutableBytes { try input.readFully(into: $0) }
            buffer += more[..<n]
        }
        guard buffer.count >= AgeFormat.nonceSize else { throw AgeFailure(.header, "the payload nonce is missing") }
        let nonce = Array(buffer[..<AgeFormat.nonceSize])
        buffer.removeFirst(AgeFormat.nonceSize)
        cipher = AgeChunkCipher(payloadKey: try AgeFileKeying.payloadKey(fileKey: fileKey, nonce: nonce), threads: 1)
    }

    deinit {
        Sodium.wipe(&plain)
    }

    /// The file key, from the first identity that a stanza is addressed to (age's rules: a
    /// malformed stanza of a known type fails the header; a tag that does not verify is no match).
    static func unwrap(_ header: AgeHeader, _ identities: [AgeIdentity]) throws -> SecretBytes {
        if header.stanzas.contains(where: { $0.type == "scrypt" }) && header.stanzas.count > 1 {
            throw AgeFailure(.header, "an scrypt stanza must be the only one")
        }
        for identity in identities {
            for s in header.stanzas {
                if let key = try unwrap(s, identity) { return key }
            }
        }
        throw AgeFailure(.noMatch, "no stanza is addressed to the identities given")
    }

    private static func unwrap(_ s: AgeStanza, _ identity: AgeIdentity) throws -> SecretBytes? {
        let sealedSize = AgeFormat.fileKeySize + 16
        switch identity.kind {
        case .x25519:
            guard s.type == "X25519" else { return nil }
            guard s.args.count == 1, let share = AgeBase64.decode(Array(s.args[0].utf8)), share.count == 32 else {
                throw AgeFailure(.header, "a malformed X25519 stanza")
            }
            guard s.body.count == sealedSize else {
                throw AgeFailure(.header, "an X25519 stanza's body is not 32 bytes")
            }
            var shared = [UInt8](repeating: 0, count: 32)
            defer { Sodium.wipe(&shared) }
            let ok = identity.secret.withUnsafeBytes {
                crypto_scalarmult(&shared, $0.bindMemory(to: UInt8.self).baseAddress!, share) == 0
            }
            guard ok else { throw AgeFailure(.header, "an X25519 stanza's share is a low-order point") }
            guard case .x25519(let pk) = identity.recipient else { return nil }
            return open(s.body, with: AgeFileKeying.wrapKey(shared: shared, salt: share + pk))
        case .hybrid:
            guard s.type == "mlkem768x25519" else { return nil }
            guard s.args.count == 1, let enc = AgeBase64.decode(Array(s.args[0].utf8)),
                enc.count == AgeFormat.hybridEncSize
            else {
                throw AgeFailure(.header, "a malformed mlkem768x25519 stanza")
            }
            guard s.body.count == sealedSize else {
                throw AgeFailure(.header, "an mlkem768x25519 stanza's body is not 32 bytes")
            }
            // X-Wing's X25519 share of a small order makes every key the same: refused, as age does.
            var probe = [UInt8](repeating: 0, count: 32)
            let scalar = [UInt8](repeating: 0x5A, count: 32)
            guard crypto_scalarmult(&probe, scalar, Array(enc[1088...])) == 0 else {
                throw AgeFailure(.header, "an mlkem768x25519 stanza's X25519 share is a low-order point")
            }
            guard let key = identity.hybridKey,
                var r = try? HPKE.Recipient(
                    privateKey: key, ciphersuite: AgeFormat.hybridSuite, info: AgeFormat.hybridInfo,
                    encapsulatedKey: Data(enc)),
                let fileKey = try? r.open(Data(s.body))
            else { return nil }
            return try fileKey.withUnsafeBytes { try SecretBytes(copying: $0) }
        }
    }

    private static func open(_ body: [UInt8], with key: SymmetricKey) -> SecretBytes? {
        guard
            let box = try? ChaChaPoly.SealedBox(
                nonce: AgeFileKeying.zeroNonce, ciphertext: body[..<16], tag: body[16...]),
            let fileKey = try? ChaChaPoly.open(box, using: key)
        else { return nil }
        return try? fileKey.withUnsafeBytes { try SecretBytes(copying: $0) }
    }

    package func read(into out: UnsafeMutableRawBufferPointer) throws -> Int {
        while plainAt == plain.count {
            if done {
                // Data after the final chunk: reported once the final chunk's plaintext is out.
                guard buffer.isEmpty else { throw AgeFailure(.payload, "data follows the final chunk") }
                return 0
            }
            try nextChunk()
        }
        let n = min(out.count, plain.count - plainAt)
        plain.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[plainAt..<plainAt + n])) }
        plainAt += n
        return n
    }

    /// Reads and opens the next chunk. A short one is the final one; a full one that does not
    /// open as a middle chunk is tried as the final one (a file whose size is a multiple of
    /// 64 KiB), as age's reader does, so what is released before a failure is what age releases.
    private func nextChunk() throws {
        let full = AgeFormat.chunkSize + AgeFormat.tagSize
        if buffer.count < full {
            var more = [UInt8](repeating: 0, count: full - buffer.count)
            let n = try more.withUnsafeMutableBytes { try input.readFully(into: $0) }
            buffer += more[..<n]
        }
        guard !buffer.isEmpty else { throw AgeFailure(.payload, "the payload ends without a final chunk") }
        let chunk = Array(buffer[..<min(full, buffer.count)])
        var last = chunk.count < full
        if last && index > 0 && chunk.count == AgeFormat.tagSize {
            throw AgeFailure(.payload, "the final chunk is empty")
        }
        Sodium.wipe(&plain)
        plain = [UInt8](repeating: 0, count: max(0, chunk.count - AgeFormat.tagSize))
        plainAt = 0
        func open(_ final: Bool) -> Bool {
            chunk.withUnsafeBytes { c in
                plain.withUnsafeMutableBytes { cipher!.open(c, index: index, last: final, into: $0) }
            }
        }
        var ok = open(last)
        if !ok && !last {
            last = true
            ok = open(true)
        }
        guard ok else {
            plain = []
            throw AgeFailure(.payload, "payload chunk \(index) fails authentication")
        }
        buffer.removeFirst(chunk.count)
        index += 1
        released += UInt64(plain.count)
        if last {
            done = true
            if !buffer.isEmpty { return }
            // Look for trailing data now, so the error follows the final chunk's plaintext.
            var probe = [UInt8](repeating: 0, count: 1)
            let n = try probe.withUnsafeMutableBytes { try input.readFully(into: $0) }
            buffer += probe[..<n]
        }
    }
}

/// An age file opened as its bytes arrive (a receiver reading a body): the push-driven twin of
/// ``AgeReader``, in bounded memory (the header, at most ``AgeHeader/maxLength`` bytes, then
/// one chunk). Plaintext is handed out chunk by chunk as each authenticates; ``finish(_:)``
/// opens the final chunk, so nothing counts as whole before the end is checked.
package struct AgeOpener {
    private enum State {
        case header
        case nonce(fileKey: SecretBytes)
        case chunks(AgeChunkCipher)
    }
    private let identities: [AgeIdentity]
    private var state = State.header
    private var parser = AgeHeaderParser()
    private var buffer: [UInt8] = []
    private var index: UInt64 = 0
    private var plain = [UInt8](repeating: 0, count: AgeFormat.chunkSize)
    /// The file key, once the header opened (what a receiver's sealed answer is keyed from).
    package private(set) var fileKey: SecretBytes?

    private let header: [UInt8]?

    /// An opener for `identities` (the first whose stanza matches opens the file).
    /// - Parameter header: the SHA-256 the file's header must have (what a sealed batch's
    ///   metadata names of its data file), checked before any key is tried; nil for any.
    package init(identities: [AgeIdentity], header: [UInt8]? = nil) {
        self.identities = identities
        self.header = header
    }

    /// Takes the next bytes of the file; `out` gets plaintext of chunks that authenticated.
    /// - Throws: ``AgeFailure``, or what `out` throws.
    package mutating func feed(_ bytes: UnsafeRawBufferPointer, _ out: (UnsafeRawBufferPointer) throws -> Void) throws {
        buffer += bytes
        if case .header = state {
            guard let h = try buffer.withUnsafeBytes({ try parser.parse($0, complete: false) }) else { return }
            if let header, Array(SHA256.hash(data: buffer[..<h.length])) != header {
                throw AgeFailure(.otherFile, "its data is not the sealed file its metadata names")
            }
            let fileKey = try AgeReader.unwrap(h, identities)
            guard AgeHeader.macMatches(h, fileKey: fileKey) else {
                throw AgeFailure(.hmac, "the header's MAC does not match")
            }
            buffer.removeFirst(h.length)
            state = .nonce(fileKey: fileKey)
            self.fileKey = fileKey
        }
        if case .nonce(let fileKey) = state {
            guard buffer.count >= AgeFormat.nonceSize else { return }
            let nonce = Array(buffer[..<AgeFormat.nonceSize])
            buffer.removeFirst(AgeFormat.nonceSize)
            state = .chunks(
                AgeChunkCipher(payloadKey: try AgeFileKeying.payloadKey(fileKey: fileKey, nonce: nonce), threads: 1))
        }
        // A chunk followed by more bytes is a middle chunk (or a final one with data after it).
        let full = AgeFormat.chunkSize + AgeFormat.tagSize
        while buffer.count > full {
            try open(count: full, final: false, out)
            buffer.removeFirst(full)
        }
    }

    /// The end of the file: its final chunk is opened.
    /// - Throws: ``AgeFailure`` for a file that is cut short or whose final chunk fails.
    package mutating func finish(_ out: (UnsafeRawBufferPointer) throws -> Void) throws {
        switch state {
        case .header: throw AgeFailure(.header, "the header is cut short")
        case .nonce: throw AgeFailure(.header, "the payload nonce is missing")
        case .chunks: break
        }
        guard !buffer.isEmpty else { throw AgeFailure(.payload, "the payload ends without a final chunk") }
        if index > 0 && buffer.count == AgeFormat.tagSize { throw AgeFailure(.payload, "the final chunk is empty") }
        try open(count: buffer.count, final: true, out)
        buffer.removeAll()
    }

    /// Opens the first `count` buffered bytes as chunk `index` and hands out its plaintext. A
    /// middle chunk that opens only as a final one is refused: more bytes follow it.
    private mutating func open(count: Int, final: Bool, _ out: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard case .chunks(let cipher) = state else { preconditionFailure("internal error: no payload key yet") }
        guard count >= AgeFormat.tagSize else { throw AgeFailure(.payload, "payload chunk \(index) is too short") }
        let n = count - AgeFormat.tagSize
        let at = index
        func attempt(_ last: Bool) -> Bool {
            buffer.withUnsafeBytes { b in
                plain.withUnsafeMutableBytes { p in
                    cipher.open(
                        UnsafeRawBufferPointer(rebasing: b[0..<count]), index: at, last: last,
                        into: UnsafeMutableRawBufferPointer(rebasing: p[0..<n]))
                }
            }
        }
        guard attempt(final) else {
            if !final && attempt(true) { throw AgeFailure(.payload, "data follows the final chunk") }
            throw AgeFailure(.payload, "payload chunk \(index) fails authentication")
        }
        index += 1
        try plain.withUnsafeBytes { try out(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
}
