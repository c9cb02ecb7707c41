#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A key epoch that a password change retired: its vault key (for the history records and
/// state written in it) and its password block and key-encryption key (so envelopes sealed in
/// it, in backups or on a store written before the change, are recognised).
struct RetiredEpoch {
    var epoch: UInt32
    var vaultKey: SecretBytes
    var kek: SecretBytes
    var kdf: KDFParameters
    var salt: [UInt8]
    var keyCheck: [UInt8]
    /// When the password change retired it (ms since 1970).
    var retired: Int64
    /// Where the history stood when it was retired (``LogAnchor``); nil for epochs retired by
    /// versions before `vault/3`.
    var anchor: LogAnchor? = nil

    /// Bytes of one entry in the sealed keyring.
    static let entrySize = 4 + 32 + 32 + 4 + 4 + 16 + 16 + 8
}

/// The keyring of earlier epochs in `vault.json` (`keyring`): a sealed state file (purpose
/// keyring, role `vault.json`) under the current vault key, holding u32 count ‖ count × (u32
/// epoch ‖ vault key (32) ‖ KEK (32) ‖ u32 opslimit ‖ u32 memlimit KiB ‖ salt (16) ‖ key check
/// (16) ‖ i64 retired ms), then (from `vault/3`) u32 n ‖ n × (u32 epoch ‖ u64 records ‖ tag
/// (16)): where the history stood when each epoch was retired. Only the current password opens
/// it, and through it every earlier epoch; an old password opens none of the later ones.
enum EpochKeyring {
    static let role = "vault.json"

    static func seal(
        _ entries: [RetiredEpoch], keys: EpochKeys, vaultID: String, random: any RandomSource
    ) throws -> String {
        var body: [UInt8] = []
        body.appendBigEndian(UInt32(entries.count))
        for e in entries {
            body.appendBigEndian(e.epoch)
            e.vaultKey.withUnsafeBytes { body.append(contentsOf: $0) }
            e.kek.withUnsafeBytes { body.append(contentsOf: $0) }
            body.appendBigEndian(e.kdf.opsLimit)
            body.appendBigEndian(e.kdf.memLimitKiB)
            body += e.salt + e.keyCheck
            body.appendBigEndian(UInt64(bitPattern: e.retired))
        }
        let anchored = entries.filter { $0.anchor != nil }
        body.appendBigEndian(UInt32(anchored.count))
        for e in anchored {
            body.appendBigEndian(e.epoch)
            body.appendBigEndian(UInt64(e.anchor!.count))
            body += e.anchor!.tag
        }
        defer { Sodium.wipe(&body) }
        return try SealedState.seal(body, purpose: .keyring, role: role, keys: keys, vaultID: vaultID, random: random)
            .base64
    }

    static func open(_ text: String, keys: EpochKeys, vaultID: String, path: String) throws -> [RetiredEpoch] {
        guard let bytes = [UInt8](base64: text) else {
            throw VaultError(.vaultDamaged, "the keyring in \(path) is not base64")
        }
        var body = try SealedState.open(
            bytes, purpose: .keyring, role: role, keys: keys, vaultID: vaultID, what: "the keyring in \(path)")
        defer { Sodium.wipe(&body) }
        let damaged = VaultError(.vaultDamaged, "the keyring in \(path) is malformed")
        var reader = ByteReader(body, what: "the keyring", damaged: damaged)
        func secret() throws -> SecretBytes {
            var bytes = try reader.raw(32)
            defer { Sodium.wipe(&bytes) }
            return try bytes.withUnsafeBytes { try SecretBytes(copying: $0) }
        }
        let count = Int(try reader.u32())
        guard count * RetiredEpoch.entrySize <= body.count - 4 else { throw damaged }
        var entries: [RetiredEpoch] = []
        for _ in 0..<count {
            let epoch = try reader.u32(), vaultKey = try secret(), kek = try secret()
            let kdf = KDFParameters(opsLimit: try reader.u32(), memLimitKiB: try reader.u32())
            let salt = try reader.raw(16), check = try reader.raw(16)
            let retired = Int64(bitPattern: try reader.u64())
            guard epoch < keys.epoch,
                  !entries.contains(where: { $0.epoch == epoch }) else { throw damaged }
            entries.append(
                RetiredEpoch(
                    epoch: epoch, vaultKey: vaultKey, kek: kek, kdf: kdf, salt: salt, keyCheck: check, retired: retired)
            )
        }
        if reader.remaining > 0 {
            for _ in 0..<(try reader.u32()) {
                let epoch = try reader.u32(), records = try reader.u64(), tag = try reader.raw(HistoryFormat.tagSize)
                guard let i = entries.firstIndex(where: { $0.epoch == epoch }),
                      entries[i].anchor == nil,
                      records <= UInt64(Int.max) else { throw damaged }
                entries[i].anchor = LogAnchor(count: Int(records), tag: tag)
            }
        }
        guard reader.remaining == 0 else { throw damaged }
        return entries
    }
}

/// Where the history stood when a password change retired a key epoch: how many records it held
/// and the tag of the last, sealed into the keyring. No record sealed under that epoch's key can
/// come after that one, and that one must be there: a log extended, replaced or cut by someone
/// who knew the old password (an old copy put back, with records of their own) is a finding,
/// and its records count for nothing.
struct LogAnchor: Sendable, Equatable {
    var count: Int
    var tag: [UInt8]
}
