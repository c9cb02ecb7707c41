#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// A receiver's identity (`vault receive`): its Ed25519 signing key, kept sealed in
/// `receiver.vlt` (the body is the 32-byte seed; resealed by a password change, so the key
/// outlives the password), and the
/// public key recorded in the history when it was made — so a deleted or replaced key file is
/// found, never silently replaced by a new key the stations do not know.
package struct ReceiverIdentity: Sendable {
    /// The signing key.
    package let signingKey: SigningKey
    /// The key of the station tokens' keyed hashes (derived from the signing seed).
    private let tokenKey: SecretBytes

    /// The Ed25519 public key (32 bytes).
    package var publicKey: [UInt8] { signingKey.publicKey }

    /// The identity of a signing seed (32 bytes).
    package init(seed: SecretBytes) throws {
        signingKey = try SigningKey(seed: seed)
        tokenKey = try SubkeyDerivation.derive(from: seed, id: 1, context: "vaultrcv")
    }

    /// The keyed hash (BLAKE2b) a station's token is kept as: without the receiver's key nobody
    /// can test a guessed token against it.
    package func tokenDigest(_ token: String) -> [UInt8] {
        KeyedHash.digest(Array(token.utf8), key: tokenKey)
    }

    /// A new station token: 32 random bytes in hex, prefixed `vst_` (so a leaked one is
    /// recognisable in a scan of logs or code).
    package static func newToken(using random: any RandomSource = SystemRandom()) -> String {
        "vst_" + Hex.encode(random.bytes(32))
    }
}

/// What a `receiver` history record says: the public key made.
package struct ReceiverKeyRecord: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.receiver
    /// The Ed25519 public key, in hex.
    package var publicKey: String

    /// The record of `publicKey` (hex).
    package init(publicKey: String) { self.publicKey = publicKey }
}

/// What a `station` history record says: a station added (with its token's keyed hash),
/// removed, or one of its requests refused because its history went backwards or forked.
package struct StationChange: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.station
    /// What changed.
    /// `refused`: a batch of the station was refused (`reason`: the code), recorded once per code
    /// until a batch of it is taken. `acknowledge`: an operator (`by`) saw the alert or refusal
    /// recorded at position `reason` of the office's records.
    package enum Action: String, Codable, Sendable { case add, remove, alert, refused, acknowledge }
    package var action: Action
    /// The station's name.
    package var name: String
    /// `add`: the keyed hash of its token, in hex.
    package var token: String?
    /// `alert`: the head the station sent, and the head the receiver knew.
    package var head: String?
    package var knownHead: String?
    /// `alert`: why (`rolled-back`, `forked`); `refused`: the refusal's code; `acknowledge`: the
    /// alert's position.
    package var reason: String?
    /// `acknowledge`: the operator.
    package var by: String?

    /// A change by its parts.
    package init(
        action: Action, name: String, token: String? = nil, head: String? = nil, knownHead: String? = nil,
        reason: String? = nil, by: String? = nil
    ) {
        self.action = action
        self.name = name
        self.token = token
        self.head = head
        self.knownHead = knownHead
        self.reason = reason
        self.by = by
    }

    /// For a listing of the history, an acknowledgement in words ("alice acknowledged alert 11
    /// of station north"); nil for the other actions, whose JSON is shown.
    package var summary: String? {
        guard action == .acknowledge else { return nil }
        return "\(by ?? "?") acknowledged alert \(reason ?? "?") of station \(name)"
    }
}

/// What a `download` history record says: an operator of the browser view downloaded the
/// record's documents (one from its page, or several as an archive), from an address.
package struct DownloadRecord: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.download
    /// The operator signed in.
    package var operatorName: String
    /// The address the request came from.
    package var address: String
    /// `document` (one, from its page) or `archive` (a zip of several).
    package var via: String

    private enum CodingKeys: String, CodingKey {
        case operatorName = "operator"
        case address, via
    }

    package init(operatorName: String, address: String, via: String) {
        (self.operatorName, self.address, self.via) = (operatorName, address, via)
    }

    package static func of(_ record: HistoryRecord) -> DownloadRecord? { record.payload(DownloadRecord.self) }

    /// For a listing of the history: "alice downloaded 3 documents (archive, from 10.0.0.7)".
    package func summary(documents: Int) -> String {
        let count = documents == 1 ? "1 document" : "\(documents) documents"
        return "\(operatorName) downloaded \(count) (\(via), from \(address))"
    }
}

/// What an `operator` history record says: an operator of the receiver's browser view added,
/// with the Argon2id hash of their password (``PasswordHash``), or removed. The history is the
/// only place operators are kept: sealed and chained, so nobody without the vault's password
/// can add one or bring back a removed one.
package struct OperatorChange: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.operatorAccount
    /// What changed.
    package enum Action: String, Codable, Sendable { case add, remove }
    package var action: Action
    /// The operator's name.
    package var name: String
    /// `add`: the password's hash (`$argon2id$…`).
    package var passwordHash: String?

    /// A change by its parts.
    package init(action: Action, name: String, passwordHash: String? = nil) {
        self.action = action
        self.name = name
        self.passwordHash = passwordHash
    }

    /// The change an `operator` record holds.
    package static func of(_ record: HistoryRecord) -> OperatorChange? {
        record.payload(OperatorChange.self)
    }

    /// For a listing of the history: the action and the name. The password's hash is never
    /// shown (it could be guessed against offline).
    package var summary: String { "operator \(name) \(action == .add ? "added" : "removed")" }

    /// The record's detail as a listing of the history in JSON shows it: without the hash.
    package var shownDetail: String {
        String(
            decoding: (try? JSONEncoder().encode(OperatorChange(action: action, name: name))) ?? Data(), as: UTF8.self)
    }
}

/// What a `receive` history record says besides its documents: who sent the batch, under which
/// key, with which history head, and the receipt the receiver answered with.
package struct ReceivedBatch: HistoryPayload, Equatable {
    package static let operation = HistoryRecord.Operation.receive
    /// The station's name.
    package var station: String
    /// The batch's `Idempotency-Key`.
    package var batch: String
    /// The station's `X-Vault-Log-Head`, if it sent one.
    package var head: String?
    /// The protocol it came by (`json`, `form`, `tus`).
    package var wire: String
    /// The SHA-256 of the payload as received, in hex.
    package var payloadSHA256: String
    /// The receipt answered (`{"receipt":…,"signature":…}`), as sent.
    package var answer: String
    /// True when its documents came sealed (age files to the office's recipients), kept so;
    /// absent for a plain batch, and in records written before it was recorded.
    package var sealed: Bool?
    /// The batch proof its sealed documents carried, in hex (docs/SECURITY.md, "A resend is the
    /// station's"): a resend under its key must carry the same. Absent for batches without one.
    package var proof: String?
    /// True when it came from a capture-only station: its documents' files are kept as they were
    /// sealed at capture (absent otherwise).
    package var captured: Bool?

    /// A batch by its parts.
    package init(
        station: String, batch: String, head: String?, wire: String, payloadSHA256: String, answer: String,
        sealed: Bool? = nil, proof: String? = nil, captured: Bool? = nil
    ) {
        self.proof = proof
        self.captured = captured
        self.station = station
        self.batch = batch
        self.head = head
        self.wire = wire
        self.payloadSHA256 = payloadSHA256
        self.answer = answer
        self.sealed = sealed
    }
}

extension Vault {
    /// The receiver's identity: opened from `receiver.vlt`, or made (and its public key
    /// recorded in the history) when the vault has none yet and `create` is true.
    /// - Throws: ``VaultError/Code/vaultDamaged`` when the file does not open, or is missing or
    ///   differs from the key the history recorded.
    package func receiverIdentity(create: Bool) throws -> ReceiverIdentity? {
        let path = store.path(.receiver)
        let recorded = try history().records.last { $0.record.operation == .receiver && $0.record.outcome == .ok }
            .flatMap { $0.record.payload(ReceiverKeyRecord.self) }
        if FileSystem.kind(of: path) == .missing {
            if let recorded {
                throw VaultError(
                    .vaultDamaged,
                    "receiver.vlt is missing, and the history says this receiver's key is \(recorded.publicKey)")
            }
            guard create else { return nil }
            // No new key over a history that does not verify: a deleted or cut log must not let
            // a key be made that the stations were never given.
            let scan = try history()
            let problems = Set((scan.findings + scan.noted).map(\.code.rawValue)).sorted()
            guard problems.isEmpty else {
                throw VaultError(
                    .vaultDamaged,
                    "receiver.vlt is missing and the history has findings (\(problems.joined(separator: ", "))): "
                        + "no new receiver key is made over a history that does not verify")
            }
            let seed = try SecretBytes.random(count: SigningKey.seedSize, using: random)
            let identity = try ReceiverIdentity(seed: seed)
            var body = seed.withUnsafeBytes { Array($0) }
            defer { Sodium.wipe(&body) }
            try AtomicFile.write(
                try sealState(body, purpose: .receiver, role: VaultFile.receiver.name), to: path, random: random)
            let key = ReceiverKeyRecord(publicKey: Hex.encode(identity.publicKey))
            _ = try appendToHistory(HistoryRecord(payload: key))
            return identity
        }
        var plain = try openState(
            try FileSystem.readFile(path, limit: 4096), purpose: .receiver, role: VaultFile.receiver.name,
            what: "receiver.vlt")
        defer { Sodium.wipe(&plain) }
        guard plain.count == SigningKey.seedSize else { throw VaultError(.vaultDamaged, "receiver.vlt is malformed") }
        let identity = try ReceiverIdentity(seed: try plain.withUnsafeBytes { try SecretBytes(copying: $0) })
        if let recorded, recorded.publicKey != Hex.encode(identity.publicKey) {
            throw VaultError(
                .vaultDamaged,
                "receiver.vlt holds the key \(Hex.encode(identity.publicKey)), "
                    + "but the history says \(recorded.publicKey)"
            )
        }
        return identity
    }
}

extension Vault {
    /// The receiver's signing seed, opened from `receiver.vlt`; nil when this vault has never
    /// been a receiver (a push carries it to a store, where receivers share it).
    /// - Throws: ``VaultError/Code/vaultDamaged`` when the file does not open or is malformed.
    package func receiverSeed() throws -> SecretBytes? {
        let path = store.path(.receiver)
        guard FileSystem.kind(of: path) != .missing else { return nil }
        var plain = try openState(
            try FileSystem.readFile(path, limit: 4096), purpose: .receiver, role: VaultFile.receiver.name,
            what: "receiver.vlt")
        defer { Sodium.wipe(&plain) }
        guard plain.count == SigningKey.seedSize else { throw VaultError(.vaultDamaged, "receiver.vlt is malformed") }
        return try plain.withUnsafeBytes { try SecretBytes(copying: $0) }
    }
}

extension Vault {
    /// Takes the receiver's lock (`receiver.lock`, an exclusive `flock` held while the returned
    /// file is open): one receiver serves a vault at a time.
    /// - Throws: ``VaultError/Code/busy`` when another process serves it.
    package func lockReceiver() throws -> OpenFile {
        let file = try OpenFile.openOrCreate(store.path(.receiverLock))
        guard try file.lockExclusive(wait: false) else {
            throw VaultError(.busy, "another receiver serves this vault (it holds receiver.lock)")
        }
        return file
    }
}
