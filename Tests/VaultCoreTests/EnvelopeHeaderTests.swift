import Testing
@testable import VaultCore

@Suite struct EnvelopeHeaderTests {
    /// Every size and offset is pinned to the numbers in docs/FORMAT.md.
    @Test func constantsMatchTheSpecification() {
        #expect(EnvelopeFormat.magic == Array("VAULTENV".utf8))
        #expect(EnvelopeFormat.version == 1)
        #expect(EnvelopeFormat.kdfArgon2id13 == 1)
        #expect(EnvelopeFormat.versionOffset == 8 && EnvelopeFormat.kdfAlgorithmOffset == 9)
        #expect(EnvelopeFormat.opsLimitOffset == 10 && EnvelopeFormat.memLimitOffset == 14)
        #expect(EnvelopeFormat.saltOffset == 18 && EnvelopeFormat.keyCheckOffset == 34)
        #expect(EnvelopeFormat.documentIDOffset == 50 && EnvelopeFormat.wrapNonceOffset == 66)
        #expect(EnvelopeFormat.wrappedKeyOffset == 90 && EnvelopeFormat.metadataLengthOffset == 138)
        #expect(EnvelopeFormat.metadataNonceOffset == 142 && EnvelopeFormat.fixedHeaderSize == 166)
        #expect(EnvelopeFormat.chunkSize == 65536 && EnvelopeFormat.sealedChunkSize == 65552)
        #expect(EnvelopeFormat.metadataBlock == 256 && EnvelopeFormat.maxSealedMetadataSize == 1 << 20)
        // The named constants agree with libsodium's own sizes.
        #expect(XChaCha20Poly1305.nonceSize == EnvelopeFormat.nonceSize)
        #expect(XChaCha20Poly1305.tagSize == EnvelopeFormat.tagSize)
        #expect(XChaCha20Poly1305.keySize == EnvelopeFormat.keySize)
        #expect(PasswordKDF.saltSize == EnvelopeFormat.saltSize)
        #expect(KDFParameters.sensitive == KDFParameters(opsLimit: 4, memLimitKiB: 1 << 20))
        #expect(KDFParameters.interactive == KDFParameters(opsLimit: 2, memLimitKiB: 64 << 10))
        #expect(KDFParameters.moderate == KDFParameters(opsLimit: 3, memLimitKiB: 256 << 10))
    }

    @Test func parseThenSerializeGivesTheSameBytes() throws {
        let keyring = TestKeys.keyring()
        for (i, n) in [0, 1, 65536, 200_000].enumerated() {
            let env = try sealEnvelope(
                testBytes(n), keyring: keyring, name: String(repeating: "n", count: 1 + i * 300),
                tags: (0..<i).map { "tag\($0)" })
            let header = try EnvelopeHeader.parse(env)
            #expect(header.serialized() == Array(env.prefix(header.encodedSize)))
            #expect(header.encodedSize == (try EnvelopeHeader.headerLength(fromPrefix: Array(env.prefix(166)))))
        }
    }

    /// Property: mutate headers at random; whatever still parses serializes back to the same bytes.
    @Test func parsingIsNonMalleable() throws {
        let env = try sealEnvelope(testBytes(10), keyring: TestKeys.keyring())
        let header = try EnvelopeHeader.parse(env)
        let base = Array(env.prefix(header.encodedSize))
        var rng = SplitMix(seed: 77)
        var parsed = 0
        for _ in 0..<5000 {
            var b = base
            let edits = Int(rng.next() % 4) + 1
            for _ in 0..<edits {
                let pos = (Int(rng.next()) << 8 | Int(rng.next())) % b.count
                b[pos] = rng.next()
            }
            if rng.next() % 8 == 0 { b = Array(b.prefix(Int(rng.next()) * b.count / 256)) }
            if let h = try? EnvelopeHeader.parse(b) {
                parsed += 1
                #expect(h.serialized() == Array(b.prefix(h.encodedSize)))
            }
        }
        #expect(parsed > 100)
    }

    @Test func kdfParametersAboveSensitiveAreRejectedBeforeAnyWork() throws {
        expectError(.kdfParametersRejected) { try KDFParameters(opsLimit: 5, memLimitKiB: 1024).validate() }
        expectError(.kdfParametersRejected) { try KDFParameters(opsLimit: 1, memLimitKiB: (1 << 20) + 1).validate() }
        expectError(.kdfParametersRejected) { try KDFParameters(opsLimit: 0, memLimitKiB: 64).validate() }
        try KDFParameters.sensitive.validate()
        try KDFParameters.minimum.validate()
        // Deriving with hostile parameters fails at validation, not after allocating 4 GiB.
        let e = #expect(throws: VaultError.self) {
            try PasswordKDF.deriveKey(
                password: TestKeys.password(), salt: [UInt8](repeating: 0, count: 16),
                parameters: KDFParameters(opsLimit: 3, memLimitKiB: .max))
        }
        #expect(e?.code == .kdfParametersRejected)
    }

    @Test func metadataRoundTripsAndRejectsNonCanonicalPadding() throws {
        let m = DocumentMetadata(
            name: "Ünïcødé \"q\"\n🎉", contentType: "image/png", size: 12345,
            sha256: testBytes(32), addedAtMillis: -5, tags: ["a", "b c"])
        let e = m.encoded()
        #expect(e.count % 256 == 0)
        #expect(try DocumentMetadata.decode(e) == m)
        var padded = e
        padded[padded.count - 1] = 1
        expectError(.headerMalformed) { _ = try DocumentMetadata.decode(padded) }
        expectError(.headerMalformed) { _ = try DocumentMetadata.decode(e + [UInt8](repeating: 0, count: 256)) }
        expectError(.headerMalformed) { _ = try DocumentMetadata.decode(Array(e.prefix(10))) }
    }

    @Test func emptyNameAndBadContentTypeAreRefused() {
        let ok = DocumentMetadata(
            name: "x", contentType: "a/b", size: 0, sha256: testBytes(32), addedAtMillis: 0, tags: [])
        var m = ok; m.name = ""
        expectError(.usage) { try m.validate() }
        m = ok; m.contentType = "text/plain; charset=utf-8"
        expectError(.usage) { try m.validate() }
        m = ok; m.tags = [""]
        expectError(.usage) { try m.validate() }
    }
}

@Suite struct KeyTests {
    @Test func wipeZeroesTheSecretMemory() throws {
        let key = try SecretBytes.random(count: 32, using: SystemRandom())
        #expect(key.withUnsafeBytes { $0.contains { $0 != 0 } })
        key.wipe()
        #expect(key.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
    }

    @Test func argon2idMatchesAnIndependentImplementation() throws {
        // Known answer cross-checked with Python cryptography's Argon2id (research/swift-probe.md):
        // password "correct horse", salt 16 × 0x07, 2 passes, 64 MiB, 1 lane.
        let key = try PasswordKDF.deriveKey(
            password: TestKeys.password("correct horse"), salt: [UInt8](repeating: 7, count: 16),
            parameters: .interactive)
        let hex = key.withUnsafeBytes { Hex.encode($0) }
        #expect(hex.hasPrefix("c4a902bf"))
        #expect(hex.hasSuffix("0ca88e2acf"))
    }

    @Test func wrongPasswordIsDistinctFromDamage() throws {
        let keyring = TestKeys.keyring()
        let env = try sealEnvelope(testBytes(1000), keyring: keyring)
        let header = try EnvelopeReader.readHeader(MemoryEnvelope(env))
        let e = #expect(throws: VaultError.self) {
            try Keyring.unlock(password: TestKeys.password("nope"), envelope: header)
        }
        #expect(e?.code == .wrongPassword)
        var damaged = env
        damaged[EnvelopeFormat.wrappedKeyOffset] ^= 1
        #expect(openEnvelope(damaged, keyring: keyring).error?.code == .headerAuthenticationFailed)
        #expect(openEnvelope(env, keyring: keyring).error == nil)
    }
}

@Suite struct ContentTypeTests {
    static func sniff(_ b: [UInt8]) -> String { b.withUnsafeBytes { ContentType.sniff($0) } }

    @Test func magicNumbers() {
        #expect(Self.sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0]) == "image/jpeg")
        #expect(Self.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == "image/png")
        #expect(Self.sniff(Array("%PDF-1.7\n".utf8)) == "application/pdf")
        #expect(Self.sniff(Array("GIF89a".utf8) + [0, 0]) == "image/gif")
        #expect(Self.sniff(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8)) == "image/webp")
        #expect(Self.sniff([0x49, 0x49, 0x2A, 0x00, 8, 0]) == "image/tiff")
        #expect(Self.sniff([0x4D, 0x4D, 0x00, 0x2A, 0, 8]) == "image/tiff")
        #expect(Self.sniff([0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0]) == "image/heic")
        #expect(Self.sniff(Array("plain text, ünïcødé\n".utf8)) == "text/plain")
        #expect(Self.sniff([0, 1, 2, 3]) == "application/octet-stream")
        #expect(Self.sniff([]) == "application/octet-stream")
    }
}

extension ContentTypeTests {
    static func detect(_ b: [UInt8], _ name: String) -> String {
        b.withUnsafeBytes { ContentType.detect($0, name: name) }
    }

    @Test func theExtensionIsBelievedOnlyWhereTheBytesAgree() {
        let zip: [UInt8] = [0x50, 0x4B, 0x03, 0x04, 0x14, 0]
        let office = "application/vnd.openxmlformats-officedocument."
        #expect(Self.detect(zip, "a.docx") == office + "wordprocessingml.document")
        #expect(Self.detect(zip, "a.pptx") == office + "presentationml.presentation")
        #expect(Self.detect(zip, "a.ods") == "application/vnd.oasis.opendocument.spreadsheet")
        #expect(Self.detect(zip, "a.bin") == "application/octet-stream")
        #expect(Self.detect(zip, "docx") == "application/octet-stream")  // a name without an extension
        #expect(Self.detect([0, 0, 0, 0x18] + Array("ftypmp42".utf8), "a.m4v") == "video/mp4")
        #expect(Self.detect([0, 0, 0, 0x18] + Array("ftypheic".utf8), "a.mp4") == "image/heic")  // the bytes say more
        #expect(Self.detect([0, 0, 0], "a.mp4") == "application/octet-stream")  // too short for its magic
        #expect(Self.detect(Array("x\ty\n".utf8), "a.tsv") == "text/tab-separated-values")
        #expect(Self.detect(Array("<a/>".utf8), "a.xml") == "application/xml")
        #expect(Self.detect(Array("text".utf8), "a.pdf") == "text/plain")  // text is not made a binary type
        #expect(Self.detect([0x00, 0x01], "a.txt") == "application/octet-stream")  // nor binary text
        #expect(Self.detect([], "empty.docx") == office + "wordprocessingml.document")
        #expect(Self.detect([], "empty.md") == "text/markdown")
        #expect(Self.detect([], "empty") == "application/octet-stream")
    }
}

/// A tiny deterministic byte generator for property tests.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt8 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return UInt8(truncatingIfNeeded: z ^ (z >> 31))
    }
}
