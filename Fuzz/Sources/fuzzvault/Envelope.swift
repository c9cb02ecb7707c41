// Family `envelope`: the envelope header parser, the metadata decoder and the reader.
//  - parsing never crashes, whatever the bytes;
//  - non-malleability: a header that parses serializes back to exactly the bytes it came from,
//    and metadata that decodes encodes back to exactly the same bytes;
//  - the reader never releases more plaintext than the metadata's size, and releases nothing
//    that did not authenticate (it either ends cleanly having released exactly that size, or
//    throws a VaultError).
// The keyring is the fixture generator's, so mutated fixture vectors reach the payload code.
import Foundation
import VaultCore

enum EnvelopeFamily {
    static let keyring: Keyring = {
        let pw = Array("vault fixture password".utf8)
        return try! Keyring.create(
            password: pw.withUnsafeBytes { try! SecretBytes(copying: $0) }, kdf: .minimum,
            random: DeterministicRandom(seed: "vault fixtures v1 / keyring"))
    }()

    static func check(_ bytes: [UInt8]) {
        if let header = try? EnvelopeHeader.parse(bytes) {
            expect(header.serialized() == Array(bytes.prefix(header.encodedSize)), "header parsing is malleable")
        }
        if let meta = try? DocumentMetadata.decode(bytes) {
            expect(meta.encoded() == bytes, "metadata decoding is malleable")
        }
        onlyVaultErrors("the envelope reader") {
            let reader = try EnvelopeReader(input: MemoryEnvelope(bytes), keyring: keyring, verifyDigest: true)
            var released: UInt64 = 0
            while let batch = try reader.next() {
                released += UInt64(batch.count)
                expect(released <= reader.metadata.size, "released more than the document's size")
            }
            expect(released == reader.metadata.size, "ended early without an error")
        }
    }
}
