import Foundation
import Testing
@testable import VaultCore

/// The sealed-state format (docs/FORMAT.md, "Sealed state"): constants pinned to the spec,
/// committed vectors (`Fixtures/state/*.vector`, made here with fixed randomness), and every
/// single-byte change refused.
@Suite struct SealedStateTests {
    static let vaultID = "00112233445566778899aabbccddeeff"

    /// Epoch 1's keys, knowing epoch 0's: fixed bytes, so the vectors are reproducible.
    static func keys() throws -> EpochKeys {
        let k0 = try (0..<32).map { UInt8($0) }.withUnsafeBytes { try SecretBytes(copying: $0) }
        let k1 = try (0..<32).map { UInt8(0xA0 + $0) }.withUnsafeBytes { try SecretBytes(copying: $0) }
        return EpochKeys(epoch: 1, current: k1, earlier: [0: k0])
    }

    struct Vector { var name: String; var fields: [(String, String)]; var bytes: [UInt8] }

    /// The vectors: each seals a JSON body for a purpose and role, then one fault each.
    static func vectors() throws -> [Vector] {
        let keys = try keys()
        let earlier = EpochKeys(epoch: 0, current: keys.earlier[0]!)
        let random = DeterministicRandom(seed: "vault sealed state vectors")
        let body = Array(#"{"count":3,"end":1234,"tag":"00112233445566778899aabbccddeeff"}"#.utf8)
        func seal(
            _ k: EpochKeys, _ purpose: SealedState.Purpose, _ role: String, id: String = vaultID
        ) throws -> [UInt8] {
            try SealedState.seal(body, purpose: purpose, role: role, keys: k, vaultID: id, random: random)
        }
        func fields(
            _ expect: String, _ comment: String, purpose: SealedState.Purpose = .logHead, role: String = "log.head"
        ) -> [(String, String)] {
            [
                ("expect", expect), ("comment", comment), ("vault-id", vaultID), ("epoch", "1"),
                ("purpose", String(purpose.rawValue)),
                ("role", role), ("body", Hex.encode(body)),
                ("vault-key-epoch-0", Hex.encode((0..<32).map { UInt8($0) })),
                ("vault-key-epoch-1", Hex.encode((0..<32).map { UInt8(0xA0 + $0) }))
            ]
        }
        let good = try seal(keys, .logHead, "log.head")
        var v: [Vector] = [
            Vector(name: "good_log_head", fields: fields("success", "a log head, epoch 1"), bytes: good),
            Vector(
                name: "good_tombstone",
                fields: fields(
                    "success", "a tombstone of document 0f…", purpose: .tombstone,
                    role: "removed/0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"),
                bytes: try seal(keys, .tombstone, "removed/0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f")),
            Vector(
                name: "good_upload_journal",
                fields: fields("success", "an upload journal", purpose: .uploadJournal, role: "uploads/0123"),
                bytes: try seal(keys, .uploadJournal, "uploads/0123"))
        ]
        func bad(_ name: String, _ comment: String, _ bytes: [UInt8]) {
            v.append(Vector(name: name, fields: fields("vault-damaged", comment), bytes: bytes))
        }
        var flipped = good
        flipped[flipped.count - 1] ^= 0x01
        bad("tag_bitflip", "the last byte of the tag changed", flipped)
        var body1 = good
        body1[SealedState.headerSize] ^= 0x01
        bad("ciphertext_bitflip", "the first ciphertext byte changed", body1)
        var epoch = good
        epoch[13] = 0
        bad("epoch_changed", "the epoch field says 0 (the seal was made in epoch 1)", epoch)
        var purpose = good
        purpose[9] = SealedState.Purpose.index.rawValue
        bad("purpose_changed", "the purpose byte says index", purpose)
        bad("other_role", "sealed as log.anchor, presented as log.head", try seal(keys, .logHead, "log.anchor"))
        bad(
            "other_vault", "sealed for another vault id",
            try seal(keys, .logHead, "log.head", id: "ffeeddccbbaa99887766554433221100"))
        bad(
            "superseded_epoch", "sealed under epoch 0's key, which epoch 1 retired",
            try seal(earlier, .logHead, "log.head"))
        bad("truncated", "the last 8 bytes cut off", Array(good.dropLast(8)))
        bad("too_short", "shorter than a header and a tag", Array(good.prefix(SealedState.headerSize + 15)))
        var version = good
        version[8] = 2
        bad("bad_version", "version 2", version)
        var magic = good
        magic[0] = UInt8(ascii: "W")
        bad("bad_magic", "the magic's first byte changed", magic)
        return v
    }

    static var directory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Fixtures/state").path
    }

    static func encode(_ v: Vector) -> [UInt8] {
        Array(v.fields.map { "\($0.0): \($0.1)\n" }.joined().utf8) + [0x0A] + v.bytes
    }

    /// The history seals a send's record in place (its frame is one buffer): the in-place
    /// result must be the bytes the separate-buffer seal gives, over many ChaCha20 blocks.
    @Test func sealingInPlaceGivesTheSameBytesAsSealingIntoAnotherBuffer() throws {
        let plaintext = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let nonce = [UInt8](repeating: 9, count: XChaCha20Poly1305.nonceSize)
        let ad = Array("record 5".utf8)
        let key = try SecretBytes(count: XChaCha20Poly1305.keySize) { k in for i in k.indices { k[i] = UInt8(i) } }
        let apart = XChaCha20Poly1305.seal(plaintext, ad: ad, nonce: nonce, key: key)
        var inPlace = plaintext + [UInt8](repeating: 0, count: XChaCha20Poly1305.tagSize)
        inPlace.withUnsafeMutableBytes { buffer in
            ad.withUnsafeBytes { a in
                nonce.withUnsafeBytes { n in
                    key.withUnsafeBytes { k in
                        XChaCha20Poly1305.seal(
                            UnsafeRawBufferPointer(rebasing: buffer[..<plaintext.count]), into: buffer, ad: a, nonce: n,
                            key: k)
                    }
                }
            }
        }
        #expect(inPlace == apart)
        #expect(XChaCha20Poly1305.open(inPlace, ad: ad, nonce: nonce, key: key) == plaintext)
    }

    @Test func constantsMatchTheSpecification() {
        #expect(SealedState.magic == Array("VAULTSTA".utf8))
        #expect(SealedState.version == 1)
        #expect(SealedState.prefixSize == 14 && SealedState.headerSize == 38)
        #expect(SealedState.subkeyBase == 256 && SealedState.subkeyContext == "vaultsta")
        #expect(SealedState.Purpose.allCases.map(\.rawValue) == Array(1...15))
        #expect(RetiredEpoch.entrySize == 116)
    }

    @Test func theCommittedVectorsAreWhatTheGeneratorMakesAndOpenAsTheySay() throws {
        let vectors = try Self.vectors()
        if ProcessInfo.processInfo.environment["VAULT_REGENERATE_FIXTURES"] != nil {
            try FileManager.default.createDirectory(atPath: Self.directory, withIntermediateDirectories: true)
            for v in vectors {
                _ = FileManager.default.createFile(
                    atPath: "\(Self.directory)/\(v.name).vector", contents: Data(Self.encode(v)))
            }
        }
        let files = try inputFiles(in: Self.directory, suffix: ".vector")
        #expect(files.count == vectors.count, "the vectors in \(Self.directory)")
        let keys = try Self.keys()
        for v in vectors {
            let committed = Array(
                (try? Data(contentsOf: URL(fileURLWithPath: "\(Self.directory)/\(v.name).vector"))) ?? Data())
            #expect(
                committed == Self.encode(v),
                "\(v.name): the committed file differs from the generator's ('make fixtures')")
            let f = Dictionary(v.fields, uniquingKeysWith: { a, _ in a })
            let purpose = SealedState.Purpose(rawValue: UInt8(f["purpose"]!)!)!
            var outcome = "success"
            do {
                let body = try SealedState.open(
                    v.bytes, purpose: purpose, role: f["role"]!, keys: keys, vaultID: f["vault-id"]!, what: v.name)
                #expect(Hex.encode(body) == f["body"])
            } catch {
                outcome = VaultError.from(error).code.rawValue
                if v.name == "superseded_epoch" {
                    #expect(VaultError.from(error).message.contains("superseded key (epoch 0"))
                }
            }
            #expect(outcome == f["expect"], "\(v.name): \(outcome)")
        }
    }

    @Test func everySingleByteChangeIsRefused() throws {
        let keys = try Self.keys()
        let good = try Self.vectors()[0].bytes
        for i in 0..<good.count {
            for delta: UInt8 in [0x01, 0x80] {
                var b = good
                b[i] ^= delta
                expectError(.vaultDamaged, "byte \(i)") {
                    _ = try SealedState.open(
                        b, purpose: .logHead, role: "log.head", keys: keys, vaultID: Self.vaultID, what: "x")
                }
            }
        }
        // And appended bytes: the tag is the last 16, so anything after it breaks the seal.
        expectError(.vaultDamaged) {
            _ = try SealedState.open(
                good + [0], purpose: .logHead, role: "log.head", keys: keys, vaultID: Self.vaultID, what: "x")
        }
    }

    @Test func theKeyringRoundTripsAndRefusesAnEpochAtOrAfterItsOwn() throws {
        let keys = try Self.keys()
        let random = DeterministicRandom(seed: "keyring")
        let entry = RetiredEpoch(
            epoch: 0, vaultKey: keys.earlier[0]!, kek: keys.current, kdf: .minimum,
            salt: [UInt8](repeating: 7, count: 16),
            keyCheck: [UInt8](repeating: 9, count: 16), retired: 1_767_225_600_000)
        let text = try EpochKeyring.seal([entry], keys: keys, vaultID: Self.vaultID, random: random)
        let back = try EpochKeyring.open(text, keys: keys, vaultID: Self.vaultID, path: "vault.json")
        #expect(back.count == 1 && back[0].epoch == 0 && back[0].salt == entry.salt && back[0].retired == entry.retired)
        #expect(back[0].vaultKey.withUnsafeBytes { Array($0) } == keys.earlier[0]!.withUnsafeBytes { Array($0) })
        // An entry claiming the current epoch is refused.
        var future = entry
        future.epoch = 1
        let bad = try EpochKeyring.seal([future], keys: keys, vaultID: Self.vaultID, random: random)
        expectError(.vaultDamaged) {
            _ = try EpochKeyring.open(bad, keys: keys, vaultID: Self.vaultID, path: "vault.json")
        }
    }
}
