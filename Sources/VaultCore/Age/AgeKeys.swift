import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CSodium

/// An age recipient: the public key a sealed document is encrypted to (age-encryption.org/v1,
/// c2sp.org/age). `age1…` is X25519; `age1pq1…` is the post-quantum hybrid of age v1.3
/// (ML-KEM-768 + X25519, X-Wing), through HPKE.
package enum AgeRecipient: Sendable, Hashable, CustomStringConvertible {
    /// An X25519 public key (32 bytes).
    case x25519([UInt8])
    /// An MLKEM768-X25519 (X-Wing) public key (1,216 bytes).
    case hybrid([UInt8])

    static let x25519HRP = "age", hybridHRP = "age1pq"
    /// X-Wing's public key length: ML-KEM-768's encapsulation key (1,184) and X25519's (32).
    static let hybridKeySize = 1216

    /// Parses `age1…` or `age1pq1…` (surrounding spaces ignored).
    /// - Throws: ``VaultError/Code/usage`` naming what is wrong, never echoing a secret key.
    package init(parsing text: String) throws {
        let s = text.trimmingSpaces()
        guard !s.uppercased().hasPrefix("AGE-SECRET-KEY-") else {
            throw VaultError(
                .usage, "that is an age identity (a secret key), not a recipient",
                hint: "give the recipient (age1…) that age-keygen or vault keygen printed; keep the identity secret")
        }
        guard let (hrp, data) = Bech32.decode(s) else {
            throw VaultError(.usage, "\(Self.shown(s)) is not an age recipient (age1… in Bech32)")
        }
        switch hrp {
        case Self.x25519HRP where data.count == 32: self = .x25519(data)
        case Self.hybridHRP where data.count == Self.hybridKeySize:
            guard (try? XWingMLKEM768X25519.PublicKey(rawRepresentation: data)) != nil else {
                throw VaultError(.usage, "\(Self.shown(s)) is not a valid post-quantum age recipient")
            }
            self = .hybrid(data)
        default:
            throw VaultError(
                .usage, "\(Self.shown(s)) is not an age recipient this build knows (age1… or age1pq1…)",
                hint: "plugin recipients (age1yubikey…, age1tag…) are not supported")
        }
    }

    /// A long recipient shortened for a message.
    private static func shown(_ s: String) -> String {
        let clean = String(
            s.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(80).map(Character.init))
        return "'" + (clean.count < s.count ? clean + "…" : clean) + "'"
    }

    /// The Bech32 form (`age1…`, `age1pq1…`).
    package var description: String {
        switch self {
        case .x25519(let k): Bech32.encode(hrp: Self.x25519HRP, k)
        case .hybrid(let k): Bech32.encode(hrp: Self.hybridHRP, k)
        }
    }

    /// The most recipients a file is sealed to (every header holds a stanza for each; a reader
    /// refuses more, as a receiver must bound what one file costs).
    package static let maxRecipients = AgeHeader.maxStanzas

    /// True for the post-quantum hybrid type.
    package var isPostQuantum: Bool {
        if case .hybrid = self { return true }
        return false
    }

    /// Reads recipients in age's recipients-file format: one per line, `#` comments and blank
    /// lines ignored. At most 64 KiB and ``maxRecipients`` recipients.
    package static func parseFile(_ text: String, path: String) throws -> [AgeRecipient] {
        let out = try AgeKeyFile.lines(text, path: path, kind: "a recipients file", what: "names no recipient") {
            try AgeRecipient(parsing: $0)
        }
        guard out.count <= maxRecipients else {
            throw VaultError(.usage, "\(path): at most \(maxRecipients) recipients")
        }
        return out
    }
}

/// An age identity: the secret key that opens what was sealed to its recipient. Its bytes stay
/// in ``SecretBytes`` (wiped on release) and are never part of a message.
package struct AgeIdentity: Sendable {
    /// Which type, and the 32 secret bytes (an X25519 scalar, or an X-Wing seed).
    package enum Kind: Sendable { case x25519, hybrid }
    package let kind: Kind
    let secret: SecretBytes
    /// The matching recipient.
    package let recipient: AgeRecipient
    /// X-Wing's private key, expanded once from the seed.
    let hybridKey: XWingMLKEM768X25519.PrivateKey?

    static let x25519HRP = "age-secret-key-", hybridHRP = "age-secret-key-pq-"

    init(kind: Kind, secret: SecretBytes) throws {
        precondition(secret.count == 32, "internal error: identity size")
        self.kind = kind
        self.secret = secret
        switch kind {
        case .x25519:
            var pk = [UInt8](repeating: 0, count: 32)
            _ = secret.withUnsafeBytes { crypto_scalarmult_base(&pk, $0.bindMemory(to: UInt8.self).baseAddress!) }
            recipient = .x25519(pk)
            hybridKey = nil
        case .hybrid:
            let key = try secret.withUnsafeBytes {
                try XWingMLKEM768X25519.PrivateKey(seedRepresentation: Data($0), publicKey: nil)
            }
            hybridKey = key
            recipient = .hybrid(Array(key.publicKey.rawRepresentation))
        }
    }

    /// Parses `AGE-SECRET-KEY-1…` or `AGE-SECRET-KEY-PQ-1…`.
    /// - Throws: ``VaultError/Code/usage``; the message never holds the text.
    package init(parsing text: String) throws {
        guard let decoded = Bech32.decode(text.trimmingSpaces()), decoded.data.count == 32 else {
            throw VaultError(.usage, "not an age identity (AGE-SECRET-KEY-1… in Bech32)")
        }
        let hrp = decoded.hrp
        var data = decoded.data
        defer { Sodium.wipe(&data) }
        let secret = try data.withUnsafeBytes { try SecretBytes(copying: $0) }
        switch hrp {
        case Self.x25519HRP: try self.init(kind: .x25519, secret: secret)
        case Self.hybridHRP: try self.init(kind: .hybrid, secret: secret)
        default: throw VaultError(.usage, "not an age identity type this build knows (AGE-SECRET-KEY-1… or -PQ-1…)")
        }
    }

    /// A new identity from the system's random source.
    package static func generate(postQuantum: Bool) throws -> AgeIdentity {
        try AgeIdentity(
            kind: postQuantum ? .hybrid : .x25519, secret: SecretBytes.random(count: 32, using: SystemRandom()))
    }

    /// The Bech32 form, uppercase as age writes it: secret, for an identity file only.
    package var secretText: String {
        secret.withUnsafeBytes { Bech32.encode(hrp: kind == .x25519 ? Self.x25519HRP : Self.hybridHRP, Array($0)) }
            .uppercased()
    }

    /// Reads identities in age's identity-file format: one `AGE-SECRET-KEY-…` per line, `#`
    /// comments and blank lines ignored. At most 64 KiB.
    package static func parseFile(_ text: String, path: String) throws -> [AgeIdentity] {
        try AgeKeyFile.lines(text, path: path, kind: "an identity file", what: "holds no age identity") {
            try AgeIdentity(parsing: $0)
        }
    }
}

/// age's key files (recipients files, identity files): one key per line, `#` comments and blank
/// lines ignored, CR before LF allowed, at most 64 KiB.
enum AgeKeyFile {
    /// Each key line of `text` through `parse`; a line that fails is named by its number (the
    /// message is the parser's, which never holds a secret).
    static func lines<T>(
        _ text: String, path: String, kind: String, what: String, _ parse: (String) throws -> T
    ) throws -> [T] {
        guard text.utf8.count <= 64 << 10 else { throw VaultError(.usage, "\(path): \(kind) is at most 64 KiB") }
        var out: [T] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let l = line.trimming(while: { $0.isSpace || $0 == "\r" })
            if l.isEmpty || l.hasPrefix("#") { continue }
            do { out.append(try parse(l)) } catch let e as VaultError {
                throw VaultError(.usage, "\(path):\(n + 1): \(e.message)", hint: e.hint)
            }
        }
        guard !out.isEmpty else { throw VaultError(.usage, "\(path) \(what)") }
        return out
    }
}
