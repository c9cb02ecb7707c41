// Family `payload`: batch payloads as `vault receive` reads them (`PayloadReader`). The first
// byte picks the shape (even: objects, odd: strings) and the piece size the body is fed in
// (1 + byte / 2); the rest is the body.
// Properties: the reader never crashes; it fails only with its documented codes; what it
// accepts is vault's layout exactly — the documents it gave back, framed again by the
// exporter's own code (`PayloadEntry`, standard base64), are the input byte for byte — and each
// document's bytes have the size and SHA-256 its entry named.
import Crypto
import Foundation
import VaultCore
import VaultReceive

enum PayloadFamily {
    /// The reader's documented failures (PayloadReader's comment).
    static let codes: Set<VaultError.Code> = [.headerMalformed, .digestMismatch, .trailingData, .truncated]

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let shape: PayloadShape = mode % 2 == 0 ? .objects : .strings
        let piece = 1 + Int(mode / 2)
        let body = Array(bytes.dropFirst())
        var reader = PayloadReader(shape: shape)
        var headers: [PayloadReader.Header] = []
        var documents: [[UInt8]] = []
        do {
            try reader.read(body, inPiecesOf: piece) { event in
                switch event {
                case .begin(_, let header):
                    headers.append(header)
                    documents.append([])
                case .data(let b):
                    documents[documents.count - 1] += Array(b)
                case .end(_, let size, let sha):
                    expect(size == UInt64(documents.last!.count), "the end's size is the bytes given")
                    expect(sha == Array(SHA256.hash(data: documents.last!)), "the end's digest is the bytes'")
                }
            }
        } catch let e as VaultError {
            expect(codes.contains(e.code), "a failure with a documented code, not \(e.code)")
            return
        } catch {
            expect(false, "only VaultErrors: \(error)")
        }
        // Accepted: it is vault's layout, byte for byte.
        var framed = Array(#"{"Files":["#.utf8)
        for (i, (header, data)) in zip(headers, documents).enumerated() {
            if i > 0 { framed.append(0x2C) }
            let metadata = DocumentMetadata(
                name: header.name ?? "", contentType: header.contentType ?? "", size: UInt64(data.count),
                sha256: Array(SHA256.hash(data: data)), addedAtMillis: 0, tags: [])
            if shape == .objects {
                expect(header.size == UInt64(data.count), "the size the entry named")
                expect(header.sha256 == metadata.sha256, "the SHA-256 the entry named")
            }
            let record = DocumentRecord(
                id: header.id ?? DocumentID(bytes: [UInt8](repeating: 0, count: 16)), metadata: metadata)
            let entry = PayloadEntry(record, shape: shape)
            framed += entry.prefix + Array(Data(data).base64EncodedString().utf8) + entry.suffix
        }
        framed += Array("]}".utf8)
        expect(framed == body, "an accepted payload is vault's layout exactly")
    }
}
