import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A receiver's signed statement that it received a batch: which receiver, from which station,
/// which batch (its `Idempotency-Key`), the payload's SHA-256, and each document's id, SHA-256
/// and size, with the time. docs/FORMAT.md ("Receipts") specifies it byte for byte, so a back
/// office written in another language can make one and a station can check one offline.
///
/// The statement is canonical JSON: the keys in this order (sorted), no whitespace, strings
/// escaped as the payload's are, digests in lower-case hex, the time in UTC to the millisecond.
/// The signature is Ed25519 (libsodium `crypto_sign_detached`) of the domain tag
/// `vault-receipt/1` and a line feed, followed by the statement.
package struct Receipt: Sendable, Equatable {
    /// One document the receiver took.
    package struct Document: Sendable, Equatable {
        /// Its id.
        package var id: DocumentID
        /// The SHA-256 of its bytes.
        package var sha256: [UInt8]
        /// Its size in bytes.
        package var size: UInt64

        /// A document `id` of `size` bytes with `sha256`.
        package init(id: DocumentID, sha256: [UInt8], size: UInt64) {
            self.id = id
            self.sha256 = sha256
            self.size = size
        }
    }

    /// The format's version.
    package static let version = 1
    /// What the signature covers before the statement.
    package static let domain = Array("vault-receipt/1\n".utf8)

    /// The batch's `Idempotency-Key`.
    package var batch: String
    /// The documents, in the payload's order.
    package var documents: [Document]
    /// The SHA-256 of the whole payload as received.
    package var payloadSHA256: [UInt8]
    /// The receiver's id (its vault's id).
    package var receiver: String
    /// The station's name, as the receiver knows it.
    package var station: String
    /// When the batch was committed, in milliseconds since 1970 (UTC).
    package var timeMillis: Int64

    /// A receipt of its parts.
    package init(
        batch: String, documents: [Document], payloadSHA256: [UInt8], receiver: String, station: String,
        timeMillis: Int64
    ) {
        self.batch = batch
        self.documents = documents
        self.payloadSHA256 = payloadSHA256
        self.receiver = receiver
        self.station = station
        self.timeMillis = timeMillis
    }

    /// The canonical statement (docs/FORMAT.md).
    package func statement() -> [UInt8] {
        var o = Array(#"{"batch":"#.utf8) + JSONString.quoted(batch)
        o += Array(#","documents":["#.utf8)
        for (i, d) in documents.enumerated() {
            if i > 0 { o.append(0x2C) }
            o += Array(#"{"id":"\#(d.id.hex)","sha256":"\#(Hex.encode(d.sha256))","size":\#(d.size)}"#.utf8)
        }
        o += Array(#"],"payloadSHA256":"\#(Hex.encode(payloadSHA256))","receiver":"#.utf8) + JSONString.quoted(receiver)
        o += Array(#","station":"#.utf8) + JSONString.quoted(station)
        o += Array(#","time":"\#(Self.time(timeMillis))","version":\#(Self.version)}"#.utf8)
        return o
    }

    /// What is signed: the domain tag, then the statement.
    package func signedMessage() -> [UInt8] { Self.domain + statement() }

    /// The receipt as the receiver answers with it: `{"receipt":<statement>,"signature":"<base64>"}`.
    package func signed(with key: SigningKey) -> [UInt8] {
        let signature = key.sign(signedMessage())
        return Array(#"{"receipt":"#.utf8) + statement()
            + Array(#","signature":"\#(Data(signature).base64EncodedString())"}"#.utf8)
    }

    /// True when `signature` is `publicKey`'s signature of this receipt.
    package func isSigned(_ signature: [UInt8], by publicKey: [UInt8]) -> Bool {
        SigningKey.verify(signature, of: signedMessage(), publicKey: publicKey)
    }

    /// The most bytes a receipt answer may take (20 documents take about 3 KiB).
    package static let maxAnswerBytes = 256 << 10

    /// A receiver's answer, read: the receipt, its signature, and the statement as sent.
    package struct Answer: Sendable, Equatable {
        /// The receipt the statement states.
        package var receipt: Receipt
        /// The statement's bytes, as the answer held them.
        package var statement: [UInt8]
        /// The 64-byte Ed25519 signature.
        package var signature: [UInt8]

        /// True when the signature is `publicKey`'s, of exactly these statement bytes.
        package func isSigned(by publicKey: [UInt8]) -> Bool {
            SigningKey.verify(signature, of: Receipt.domain + statement, publicKey: publicKey)
        }
    }

    /// Reads a receiver's answer `{"receipt":<statement>,"signature":"<base64>"}` (docs/FORMAT.md):
    /// the statement is taken as the bytes between `{"receipt":` and the last `,"signature":`,
    /// and must be the canonical statement of the receipt it states, byte for byte.
    /// The signature is not checked here (``Answer/isSigned(by:)``).
    /// - Throws: ``VaultError/Code/headerMalformed`` for anything else.
    package static func answer(_ bytes: [UInt8]) throws -> Answer {
        let head = Array(#"{"receipt":"#.utf8)
        let mark = Array(#","signature":""#.utf8)
        func malformed(_ why: String) -> VaultError {
            VaultError(.headerMalformed, "the receiver's receipt is not what docs/FORMAT.md describes: \(why)")
        }
        guard bytes.count <= maxAnswerBytes else { throw malformed("longer than \(maxAnswerBytes) bytes") }
        guard bytes.starts(with: head),
              bytes.suffix(2).elementsEqual([0x22, 0x7D]) else {
            throw malformed("it is not {\"receipt\":…,\"signature\":\"…\"}")
        }
        var at: Int?
        var k = bytes.count - 2 - mark.count
        while k >= head.count {
            if bytes[k..<k + mark.count].elementsEqual(mark) {
                at = k
                break
            }
            k -= 1
        }
        guard let at else { throw malformed("it has no signature") }
        let statement = Array(bytes[head.count..<at])
        let encoded = String(decoding: bytes[(at + mark.count)..<(bytes.count - 2)], as: UTF8.self)
        guard let signature = Data(base64Encoded: encoded).map(Array.init),
            signature.count == SigningKey.signatureSize,
            Data(signature).base64EncodedString() == encoded
        else { throw malformed("its signature is not 64 bytes in standard base64") }
        guard let receipt = statementReceipt(statement),
              receipt.statement() == statement else {
            throw malformed("its statement is not the canonical statement of a receipt")
        }
        return Answer(receipt: receipt, statement: statement, signature: signature)
    }

    /// The receipt a statement states (nil when it is not one). Keys beyond these are ignored
    /// here; the caller accepts only a statement that is the canonical one of its receipt.
    private static func statementReceipt(_ statement: [UInt8]) -> Receipt? {
        struct Statement: Decodable {
            struct Document: Decodable {
                let id: String
                let sha256: String
                let size: UInt64
            }
            let version: Int
            let batch: String
            let receiver: String
            let station: String
            let time: String
            let payloadSHA256: String
            let documents: [Document]
        }
        guard let o = try? JSONDecoder().decode(Statement.self, from: Data(statement)),
            o.version == version,
            let millis = timeMillis(o.time),
            let payload = Hex.decode(o.payloadSHA256),
            payload.count == 32
        else { return nil }
        var documents: [Document] = []
        for d in o.documents {
            guard let id = DocumentID(hex: d.id),
                let sha = Hex.decode(d.sha256),
                sha.count == 32
            else { return nil }
            documents.append(Document(id: id, sha256: sha, size: d.size))
        }
        return Receipt(
            batch: o.batch, documents: documents, payloadSHA256: payload, receiver: o.receiver, station: o.station,
            timeMillis: millis)
    }

    /// The milliseconds of a statement's time (`YYYY-MM-DDTHH:MM:SS.mmmZ`), nil for another form.
    static func timeMillis(_ text: String) -> Int64? {
        guard text.utf8.count == 24, let millis = UTCTime.millis(iso8601: text, fraction: true) else { return nil }
        // Only a time the statement writes so: no 2026-02-31, no 24:00.
        return time(millis) == text ? millis : nil
    }

    /// `2026-11-26T00:00:00.000Z`: UTC, to the millisecond, as the statement writes time.
    package static func time(_ millis: Int64) -> String { UTCTime(millis: millis).iso8601Millis }
}

/// A receiver's answer to a sealed batch, encrypted for the station (docs/FORMAT.md, "Receipts"):
/// `{"sealedReceipt":"<base64 of nonce ‖ ChaCha20-Poly1305 ciphertext ‖ tag>"}`, the plain answer
/// inside. A receipt names each document's plaintext SHA-256 and size; in the clear, any hop that
/// sees answers (a TLS-terminating proxy, a log of response bodies or headers) could confirm a
/// document it already has. The key is derived from the file keys of the batch's documents, which
/// only the station that sealed them and a receiver that opened them hold:
/// `HKDF-SHA-256(ikm = file key 1 ‖ … ‖ file key n, salt = the batch's Idempotency-Key,
/// info = "vault-sealed-receipt/1")`.
package enum SealedAnswer {
    static let head = Array(#"{"sealedReceipt":""#.utf8)
    static let tail = Array(#""}"#.utf8)
    static let info = Array("vault-sealed-receipt/1".utf8)

    /// The key for a batch whose documents' data files had `fileKeys`, in payload order.
    package static func key(fileKeys: [SecretBytes], batch: String) -> SymmetricKey {
        var ikm = [UInt8]()
        for k in fileKeys { k.withUnsafeBytes { ikm += $0 } }
        defer { Sodium.wipe(&ikm) }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: ikm), salt: Array(batch.utf8), info: info, outputByteCount: 32)
    }

    /// `answer` sealed under `key`, as the receiver sends it.
    package static func seal(_ answer: [UInt8], key: SymmetricKey) throws -> [UInt8] {
        let box = try ChaChaPoly.seal(answer, using: key)
        return head + Array(box.combined.base64EncodedString().utf8) + tail
    }

    /// The plain answer inside `answer` when it is a sealed answer; nil when it is not one.
    /// - Throws: ``VaultError/Code/headerMalformed`` when it is one that does not open under `key`.
    package static func open(_ answer: [UInt8], key: SymmetricKey) throws -> [UInt8]? {
        let bytes = answer
        guard bytes.starts(with: head), bytes.count <= 2 * Receipt.maxAnswerBytes, bytes.suffix(2).elementsEqual(tail)
        else { return nil }
        guard let sealed = Data(base64Encoded: Data(bytes[head.count..<(bytes.count - tail.count)])),
              let box = try? ChaChaPoly.SealedBox(combined: sealed),
              let plain = try? ChaChaPoly.open(box, using: key)
        else {
            throw VaultError(.headerMalformed, "the receiver's sealed receipt does not open with this batch's keys")
        }
        return Array(plain)
    }
}
