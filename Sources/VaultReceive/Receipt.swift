import Foundation
import VaultCore

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

    /// `2026-11-26T00:00:00.000Z`: UTC, to the millisecond, as the statement writes time.
    package static func time(_ millis: Int64) -> String {
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let ms = millis - seconds * 1000
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ms), 3))Z"
    }
}
