import Crypto
import Foundation
@testable import VaultCore

/// The committed generator of `Fixtures/envelope/*.vector`.
///
/// Fixed randomness (``DeterministicRandom``) and a fixed clock make the output identical on
/// every run; `FixtureTests` checks the committed files against it byte for byte, and
/// `make fixtures` (VAULT_REGENERATE_FIXTURES=1) rewrites them. Each bad vector has exactly one
/// thing wrong. Argon2id runs at its minimum parameters so the vectors open fast.
enum FixtureGenerator {
    static let password = "vault fixture password"
    static let addedAt: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z

    struct Vector {
        var name: String
        var expect: String
        var comment: String
        var password: String = FixtureGenerator.password
        var releasedPlaintext: [UInt8] = []
        var documentName: String?
        var bytes: [UInt8]

        /// The file: `key: value` lines, a blank line, then the envelope bytes.
        var fileContents: [UInt8] {
            var head = "expect: \(expect)\ncomment: \(comment)\npassword: \(password)\n"
            head += "payload: \(Hex.encode(Array(SHA256.hash(data: releasedPlaintext))))\n"
            if let documentName { head += "name: \(documentName.debugDescription)\n" }
            return Array((head + "\n").utf8) + bytes
        }
    }

    static func keyring() -> Keyring {
        let pw = Array(password.utf8)
        return try! Keyring.create(
            password: pw.withUnsafeBytes { try! SecretBytes(copying: $0) }, kdf: .minimum,
            random: DeterministicRandom(seed: "vault fixtures v1 / keyring"))
    }

    static func envelope(_ plain: [UInt8], name: String, seed: String, keyring: Keyring) -> [UInt8] {
        let random = DeterministicRandom(seed: "vault fixtures v1 / \(seed)")
        let out = MemoryEnvelope()
        let meta = DocumentMetadata(
            name: name, contentType: "application/octet-stream", size: 0,
            sha256: [UInt8](repeating: 0, count: 32), addedAtMillis: addedAt, tags: ["fixture"])
        let w = try! EnvelopeWriter(
            output: out, keyring: keyring, documentID: .random(using: random), metadata: meta, random: random)
        try! plain.withUnsafeBytes { try w.write($0) }
        _ = try! w.finish()
        return out.bytes
    }

    static func plaintext(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        out.withUnsafeMutableBytes { DeterministicRandom(seed: "vault fixtures v1 / plaintext \(n)").fill($0) }
        return out
    }

    // Long: the table of fixture vectors (the committed files are generated from it).
    static func vectors() -> [Vector] {
        let k = keyring()
        var v: [Vector] = []
        func good(_ file: String, _ n: Int, name: String, _ comment: String) -> [UInt8] {
            let p = plaintext(n)
            let bytes = envelope(p, name: name, seed: file, keyring: k)
            v.append(
                Vector(
                    name: file, expect: "success", comment: comment, releasedPlaintext: p, documentName: name,
                    bytes: bytes))
            return bytes
        }
        _ = good("good_empty", 0, name: "empty.bin", "0-byte document: one empty final chunk")
        _ = good("good_one_byte", 1, name: "one.bin", "1-byte document")
        _ = good("good_chunk_minus_1", 65535, name: "a.bin", "one short final chunk")
        _ = good("good_chunk", 65536, name: "b.bin", "exactly one full chunk, which is final")
        _ = good("good_chunk_plus_1", 65537, name: "c.bin", "a full chunk and a 1-byte final chunk")
        let base = good("good_200000", 200000, name: "scan.pdf", "four chunks; the base of the bad vectors below")
        _ = good(
            "good_unicode_name", 10, name: "Ünïcødé 文件 \"quoted\" \\ back\nslash 🎉.pdf",
            "a name needing JSON escapes and non-ASCII")

        let fixed = EnvelopeFormat.fixedHeaderSize
        let headerSize = try! EnvelopeHeader.headerLength(fromPrefix: Array(base.prefix(fixed)))
        let ss = EnvelopeFormat.sealedChunkSize
        func bad(
            _ file: String, _ expect: VaultError.Code, _ comment: String, password: String = FixtureGenerator.password,
            _ bytes: [UInt8]
        ) {
            v.append(Vector(name: file, expect: expect.rawValue, comment: comment, password: password, bytes: bytes))
        }
        func flipped(_ offset: Int) -> [UInt8] { var b = base; b[offset] ^= 0x01; return b }
        func u32(_ b: [UInt8], at o: Int, _ value: UInt32) -> [UInt8] {
            var b = b
            withUnsafeBytes(of: value.bigEndian) { b.replaceSubrange(o..<o + 4, with: $0) }
            return b
        }

        bad("bad_magic", .headerMalformed, "first magic byte changed", flipped(0))
        bad(
            "bad_version", .unsupportedVersion, "version byte 2",
            {
                var b = base; b[8] = 2; return b
            }())
        bad(
            "bad_kdf_algorithm", .headerMalformed, "unknown KDF algorithm id 7",
            {
                var b = base; b[9] = 7; return b
            }())
        bad(
            "kdf_ops_too_large", .kdfParametersRejected,
            "opslimit 5, above sensitive (4); rejected before Argon2id runs",
            u32(base, at: EnvelopeFormat.opsLimitOffset, 5))
        bad(
            "kdf_mem_too_large", .kdfParametersRejected,
            "memlimit 4 GiB - 1 KiB, above sensitive (1 GiB); rejected before allocating",
            u32(base, at: EnvelopeFormat.memLimitOffset, 0xFFFF_FFFF))
        bad(
            "kdf_ops_zero", .kdfParametersRejected, "opslimit 0, below Argon2id's minimum",
            u32(base, at: EnvelopeFormat.opsLimitOffset, 0))
        bad("empty_file", .truncated, "zero bytes", [])
        for cut in [5, 100, fixed - 1, fixed + 10, headerSize - 1] {
            bad("header_cut_\(cut)", .truncated, "header cut after \(cut) bytes", Array(base.prefix(cut)))
        }
        bad(
            "metadata_length_too_large", .headerMalformed, "metadata length 2 MiB, above the 1 MiB cap",
            u32(base, at: EnvelopeFormat.metadataLengthOffset, 2 << 20))
        bad(
            "metadata_length_not_block", .headerMalformed,
            "metadata length not a whole number of 256-byte blocks plus a tag",
            u32(base, at: EnvelopeFormat.metadataLengthOffset, 300))
        bad(
            "wrong_password", .wrongPassword, "a good envelope opened with another password",
            password: "not the password", base)
        bad(
            "header_bitflip_salt", .wrongPassword,
            """
                bit flip in the salt: alone, an envelope cannot tell this from a wrong password; inside a vault it is \
                reported as damage
                """,
            flipped(EnvelopeFormat.saltOffset))
        bad(
            "header_bitflip_document_id", .headerAuthenticationFailed,
            "bit flip in the document id (authenticated by the key wrap)",
            flipped(EnvelopeFormat.documentIDOffset + 3))
        bad(
            "header_bitflip_wrap_nonce", .headerAuthenticationFailed, "bit flip in the key-wrap nonce",
            flipped(EnvelopeFormat.wrapNonceOffset))
        bad(
            "header_bitflip_wrapped_key", .headerAuthenticationFailed, "bit flip in the wrapped document key",
            flipped(EnvelopeFormat.wrappedKeyOffset + 5))
        bad(
            "header_bitflip_metadata_nonce", .headerAuthenticationFailed, "bit flip in the metadata nonce",
            flipped(EnvelopeFormat.metadataNonceOffset + 1))
        bad("metadata_bitflip", .headerAuthenticationFailed, "bit flip inside the sealed metadata", flipped(fixed + 20))
        bad(
            "metadata_tag_bitflip", .headerAuthenticationFailed, "bit flip in the metadata tag", flipped(headerSize - 1)
        )
        for k in 0..<4 {
            bad(
                "chunk\(k)_bitflip", .chunkAuthenticationFailed, "bit flip in the body of chunk \(k) of 4",
                flipped(headerSize + k * ss + 7))
        }
        bad(
            "chunk0_tag_bitflip", .chunkAuthenticationFailed, "bit flip in the tag of chunk 0",
            flipped(headerSize + ss - 1))
        bad(
            "truncated_at_chunk_boundary", .truncated, "the final chunk removed (cut at the boundary after chunk 2)",
            Array(base.prefix(headerSize + 3 * ss)))
        bad(
            "truncated_inside_chunk", .truncated, "cut in the middle of chunk 1",
            Array(base.prefix(headerSize + ss + 1000)))
        bad("truncated_inside_tag", .truncated, "cut inside the final chunk's tag", Array(base.dropLast(5)))
        bad("trailing_data", .trailingData, "three bytes after the final chunk", base + [0x00, 0x01, 0x02])
        let c = (0..<4).map { Array(base[(headerSize + $0 * ss)..<min(base.count, headerSize + ($0 + 1) * ss)]) }
        bad(
            "chunks_swapped", .chunkAuthenticationFailed, "chunks 0 and 1 swapped",
            Array(base.prefix(headerSize)) + c[1] + c[0] + c[2] + c[3])
        bad(
            "chunk_duplicated", .chunkAuthenticationFailed, "chunk 0 repeated in place of chunk 1",
            Array(base.prefix(headerSize)) + c[0] + c[0] + c[2] + c[3])
        let other = envelope(plaintext(200000), name: "other.pdf", seed: "other document", keyring: k)
        let otherHeader = try! EnvelopeHeader.headerLength(fromPrefix: Array(other.prefix(fixed)))
        let otherChunk1 = Array(other[(otherHeader + ss)..<(otherHeader + 2 * ss)])
        bad(
            "chunk_from_other_document", .chunkAuthenticationFailed,
            "chunk 1 taken from another document of the same vault",
            Array(base.prefix(headerSize)) + c[0] + otherChunk1 + c[2] + c[3])
        bad(
            "header_from_other_document", .chunkAuthenticationFailed,
            "the header of another document (same vault, same size) on this payload",
            Array(other.prefix(otherHeader)) + Array(base[headerSize...]))
        return v
    }

    static var directory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/envelope").path
    }
}
