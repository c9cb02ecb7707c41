#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one format of every state file vault writes and reads back (docs/FORMAT.md, "Sealed
/// state"): the index, the log's head and anchor, a pending removal, tombstones, upload
/// journals, the remote list and the keyring of earlier key epochs.
///
/// ```
/// file   = "VAULTSTA" ‖ version 0x01 ‖ purpose (1) ‖ epoch (u32) ‖ nonce (24) ‖ seal(subkey, nonce, body, AD)
/// AD     = bytes 0..<14 ‖ vault id (32 ASCII hex digits) ‖ 0x00 ‖ role (UTF-8)
/// subkey = crypto_kdf(vault key of that epoch, id = 256 + purpose, context "vaultsta")
/// ```
///
/// The purpose picks its own subkey, and the role (the file's name in the vault, or its key on
/// a store) is authenticated: a file opens only as what it was written as, in its own vault,
/// under the key of its own epoch. Written by hand: this is vault's own format (a few lines
/// over libsodium's AEAD); no package of this field does sealed state files.
package enum SealedState {
    /// What a state file is for; each has its own subkey.
    package enum Purpose: UInt8, Sendable, CaseIterable {
        case index = 1
        case logHead = 2
        case pendingRemoval = 3
        case tombstone = 4
        case uploadJournal = 5
        case logAnchor = 6
        case keyring = 7
        case remotes = 8
        case indexRecord = 9
        case indexState = 10
        case destinations = 11
        case pendingIntake = 12
        case receiver = 13
        case receiverLog = 14
        case capturedRecord = 15

        var name: String {
            switch self {
            case .index: "index"
            case .logHead: "log head"
            case .pendingRemoval: "pending removal"
            case .tombstone: "tombstone"
            case .uploadJournal: "upload journal"
            case .logAnchor: "log anchor"
            case .keyring: "keyring"
            case .remotes: "remote list"
            case .indexRecord: "index record"
            case .indexState: "index state"
            case .destinations: "destination list"
            case .pendingIntake: "pending intake"
            case .receiver: "receiver key"
            case .receiverLog: "receivers' log entry"
            case .capturedRecord: "captured document's record"
            }
        }
    }

    static let magic = Array("VAULTSTA".utf8)
    static let version: UInt8 = 1
    /// magic, version, purpose, epoch.
    static let prefixSize = 8 + 1 + 1 + 4
    static let headerSize = prefixSize + EnvelopeFormat.nonceSize
    static let subkeyBase: UInt64 = 256
    static let subkeyContext = "vaultsta"

    /// The associated data of a state file whose first 14 bytes are `prefix`.
    static func associatedData(prefix: ArraySlice<UInt8>, vaultID: String, role: String) -> [UInt8] {
        Array(prefix) + Array(vaultID.utf8) + [0] + Array(role.utf8)
    }

    static func subkey(_ vaultKey: SecretBytes, purpose: Purpose) throws -> SecretBytes {
        try SubkeyDerivation.derive(from: vaultKey, id: subkeyBase + UInt64(purpose.rawValue), context: subkeyContext)
    }

    /// Seals `body` as the state file `role` for `purpose`, under the current epoch's key.
    static func seal(
        _ body: [UInt8], purpose: Purpose, role: String, keys: EpochKeys, vaultID: String,
        random: any RandomSource
    ) throws -> [UInt8] {
        seal(
            body, purpose: purpose, role: role, epoch: keys.epoch, subkey: try subkey(keys.current, purpose: purpose),
            vaultID: vaultID,
            random: random)
    }

    /// Seals with a subkey derived once by the caller (``subkey(_:purpose:)`` of `epoch`'s
    /// vault key): for the index, which seals and opens one record per document.
    static func seal(
        _ body: [UInt8], purpose: Purpose, role: String, epoch: UInt32, subkey: SecretBytes, vaultID: String,
        random: any RandomSource
    ) -> [UInt8] {
        var prefix = magic + [version, purpose.rawValue]
        prefix.appendBigEndian(epoch)
        let nonce = random.bytes(EnvelopeFormat.nonceSize)
        let ad = associatedData(prefix: prefix[...], vaultID: vaultID, role: role)
        return prefix + nonce + XChaCha20Poly1305.seal(body, ad: ad, nonce: nonce, key: subkey)
    }

    /// Opens what ``seal(_:purpose:role:epoch:subkey:vaultID:random:)`` sealed in `epoch`; nil
    /// when it is not such a file or does not authenticate.
    static func open(
        _ bytes: [UInt8], purpose: Purpose, role: String, epoch: UInt32, subkey: SecretBytes, vaultID: String
    ) -> [UInt8]? {
        guard let p = prefix(of: bytes),
              p.purpose == purpose.rawValue,
              p.epoch == epoch else { return nil }
        let ad = associatedData(prefix: bytes[0..<prefixSize], vaultID: vaultID, role: role)
        return XChaCha20Poly1305.open(
            Array(bytes[headerSize...]), ad: ad, nonce: Array(bytes[prefixSize..<headerSize]), key: subkey)
    }

    /// What a state file says about itself before it is opened (public bytes).
    struct Prefix: Equatable {
        var purpose: UInt8
        var epoch: UInt32
    }

    /// Parses the public prefix, or nil if `bytes` is not a sealed state file of this version.
    static func prefix(of bytes: [UInt8]) -> Prefix? {
        guard bytes.count >= headerSize + EnvelopeFormat.tagSize,
              bytes.starts(with: magic),
              bytes[8] == version else {
            return nil
        }
        return Prefix(purpose: bytes[9], epoch: UInt32(bigEndianBytes: bytes[10..<14]))
    }

    /// Opens a state file written as `role` for `purpose`, under the current epoch's key.
    ///
    /// - Parameter what: how errors name the file (e.g. its path).
    /// - Throws: ``VaultError/Code/vaultDamaged``: malformed, written for another purpose, sealed
    ///   under a superseded key (it authenticates under an earlier epoch's key: someone who knew
    ///   an old password wrote it, or it predates the last password change), or failing authentication.
    static func open(
        _ bytes: [UInt8], purpose: Purpose, role: String, keys: EpochKeys, vaultID: String,
        what: String
    ) throws -> [UInt8] {
        guard let p = prefix(of: bytes) else {
            throw VaultError(
                .vaultDamaged, "\(what) is not a sealed \(purpose.name) file (bad magic, version or length)")
        }
        guard p.purpose == purpose.rawValue else {
            throw VaultError(
                .vaultDamaged, "\(what) is a sealed file of another kind (purpose \(p.purpose)), not a \(purpose.name)")
        }
        if p.epoch == keys.epoch,
            let body = try openUnder(keys.current, bytes, purpose: purpose, role: role, vaultID: vaultID)
        {
            return body
        }
        if p.epoch < keys.epoch, let old = keys.earlier[p.epoch],
            try openUnder(old, bytes, purpose: purpose, role: role, vaultID: vaultID) != nil
        {
            throw VaultError(
                .vaultDamaged,
                """
                    \(what) is sealed under a superseded key (epoch \(p.epoch); the vault's key is epoch \
                    \(keys.epoch)): it was written with an old password, after the password changed
                    """
            )
        }
        throw VaultError(
            .vaultDamaged, "\(what) fails authentication: it was altered, moved, or comes from another vault")
    }

    /// Opens under the key of `p.epoch` if this keyring has it (current or earlier); for readers
    /// that accept state written in an earlier epoch on purpose (a log head of a rotation that a
    /// crash interrupted). Returns the epoch and the body.
    static func openAnyEpoch(
        _ bytes: [UInt8], purpose: Purpose, role: String, keys: EpochKeys, vaultID: String
    ) throws
        -> (epoch: UInt32, body: [UInt8])?
    {
        guard let p = prefix(of: bytes),
              p.purpose == purpose.rawValue,
              let key = keys.key(epoch: p.epoch),
              let body = try openUnder(key, bytes, purpose: purpose, role: role, vaultID: vaultID) else { return nil }
        return (p.epoch, body)
    }

    private static func openUnder(
        _ vaultKey: SecretBytes, _ bytes: [UInt8], purpose: Purpose, role: String,
        vaultID: String
    ) throws -> [UInt8]? {
        let ad = associatedData(prefix: bytes[0..<prefixSize], vaultID: vaultID, role: role)
        return XChaCha20Poly1305.open(
            Array(bytes[headerSize...]), ad: ad, nonce: Array(bytes[prefixSize..<headerSize]),
            key: try subkey(vaultKey, purpose: purpose))
    }
}

/// The vault key of the current key epoch, and those of earlier epochs (from the keyring in
/// `vault.json`): state and history records written before a password change stay readable,
/// and what is sealed under a superseded key is told apart from damage.
package struct EpochKeys: Sendable {
    /// The current epoch (0 until the first password change).
    package let epoch: UInt32
    let current: SecretBytes
    /// Earlier epochs' vault keys.
    let earlier: [UInt32: SecretBytes]
    /// Where the history stood when each earlier epoch was retired (``LogAnchor``), when known.
    let retiredAt: [UInt32: LogAnchor]

    init(
        epoch: UInt32, current: SecretBytes, earlier: [UInt32: SecretBytes] = [:], retiredAt: [UInt32: LogAnchor] = [:]
    ) {
        self.epoch = epoch
        self.current = current
        self.earlier = earlier
        self.retiredAt = retiredAt
    }

    /// The vault key of `epoch`, if known.
    func key(epoch e: UInt32) -> SecretBytes? { e == epoch ? current : earlier[e] }

    /// Every epoch with a key, oldest first.
    var epochs: [UInt32] { (earlier.keys.sorted() + [epoch]) }
}

extension Vault {
    /// Seals `body` as the state file `role` (its path in the vault, e.g. `uploads/<job>`) for
    /// `purpose`, under the current key epoch: for state kept by other modules (upload journals).
    package func sealState(_ body: [UInt8], purpose: SealedState.Purpose, role: String) throws -> [UInt8] {
        try SealedState.seal(body, purpose: purpose, role: role, keys: keys, vaultID: config.id, random: random)
    }

    /// Opens a state file sealed by ``sealState(_:purpose:role:)``.
    /// - Throws: ``VaultError/Code/vaultDamaged`` naming `what` when it is malformed, of another
    ///   purpose or role (moved or swapped), from another vault, or sealed under a retired key.
    package func openState(_ bytes: [UInt8], purpose: SealedState.Purpose, role: String, what: String) throws -> [UInt8]
    {
        try SealedState.open(bytes, purpose: purpose, role: role, keys: keys, vaultID: config.id, what: what)
    }

    /// Opens a sealed state file of any key epoch this vault has a key for, with its epoch: for
    /// a chain whose readers check that epochs never go down along it (the receivers' log on a
    /// store, written before and after a password change). The body is nil, with the epoch, for
    /// a file of a later epoch than this vault's (the password was changed since this vault was
    /// opened: it must be opened again with the new one).
    /// - Throws: `vault-damaged` for a file that does not open.
    package func openStateOfAnyEpoch(
        _ bytes: [UInt8], purpose: SealedState.Purpose, role: String, what: String
    ) throws -> (epoch: UInt32, body: [UInt8]?) {
        if let opened = try SealedState.openAnyEpoch(
            bytes, purpose: purpose, role: role, keys: keys, vaultID: config.id)
        {
            return (opened.epoch, opened.body)
        }
        if let p = SealedState.prefix(of: bytes), p.purpose == purpose.rawValue, p.epoch > keys.epoch {
            return (p.epoch, nil)
        }
        throw VaultError(
            .vaultDamaged, "\(what) fails authentication: it was altered, moved, or comes from another vault")
    }
}
