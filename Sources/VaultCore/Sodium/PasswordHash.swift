internal import CSodium

/// A password kept only as an Argon2id hash in libsodium's string form
/// (`$argon2id$v=19$m=65536,t=2,p=1$<salt>$<hash>`, the PHC format): the operators of a
/// receiver's browser view (docs/RECEIVE.md). libsodium's `crypto_pwhash_str` picks the salt and
/// records the parameters, and its verification compares in constant time.
package enum PasswordHash {
    /// The parameters new hashes get: libsodium's `interactive` level (64 MiB, 2 passes, about
    /// 0.1 s here), its advice for an online login.
    package static let parameters = KDFParameters.interactive

    /// A new hash of `password`.
    package static func make(_ password: SecretBytes, parameters: KDFParameters = parameters) throws -> String {
        var out = [CChar](repeating: 0, count: Int(crypto_pwhash_STRBYTES))
        let status = password.withUnsafeBytes { p -> Int32 in
            guard let base = p.baseAddress, p.count > 0 else { return -1 }
            return crypto_pwhash_argon2id_str(
                &out, base.assumingMemoryBound(to: CChar.self), UInt64(p.count), UInt64(parameters.opsLimit),
                Int(parameters.memLimitKiB) * 1024)
        }
        guard status == 0 else {
            throw VaultError(.internal, "could not hash the password (is it empty, or is memory short?)")
        }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` is the one `hash` was made of. A hash that is not an Argon2id string
    /// of at most the `sensitive` level's cost never matches.
    package static func verify(_ password: SecretBytes, against hash: String) -> Bool {
        guard hash.hasPrefix("$argon2id$"), hash.utf8.count < Int(crypto_pwhash_STRBYTES),
            let cost = cost(of: hash), (try? cost.validate()) != nil
        else { return false }
        return password.withUnsafeBytes { p in
            guard let base = p.baseAddress, p.count > 0 else { return false }
            return crypto_pwhash_argon2id_str_verify(hash, base.assumingMemoryBound(to: CChar.self), UInt64(p.count))
                == 0
        }
    }

    /// The `m=` and `t=` of a hash string, read before libsodium allocates what `m` says.
    private static func cost(of hash: String) -> KDFParameters? {
        let fields = hash.split(separator: "$")
        guard fields.count == 5 else { return nil }
        var m: UInt32?, t: UInt32?
        for part in fields[2].split(separator: ",") {
            if part.hasPrefix("m=") { m = UInt32(part.dropFirst(2)) }
            if part.hasPrefix("t=") { t = UInt32(part.dropFirst(2)) }
        }
        guard let m, let t else { return nil }
        return KDFParameters(opsLimit: t, memLimitKiB: m)
    }
}
