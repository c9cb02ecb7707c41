/// The key-encryption key of one unlock, with the public values that identify it.
///
/// Argon2id runs once, when the keyring is made; every envelope of the vault is then opened
/// with the same key. An envelope whose KDF parameters, salt or key check differ from the
/// keyring's was sealed under another password or vault, or its header is damaged.
package final class Keyring: Sendable {
    /// Argon2id parameters.
    package let kdf: KDFParameters
    /// Argon2id salt.
    package let salt: [UInt8]
    /// Check value of ``kek``.
    package let keyCheck: [UInt8]
    let kek: SecretBytes
    /// The key epoch this password block belongs to (0 outside a vault or before any change).
    package let epoch: UInt32
    /// Password blocks of earlier key epochs (from the vault's keyring), newest first: an
    /// envelope sealed under one of them is recognised as such, and opened only when
    /// ``acceptsEarlierEpochs`` is set.
    let earlier: [Keyring]
    /// Open envelopes sealed under an earlier epoch's password too (reading a backup or a store
    /// written before a password change); off for a vault's own objects.
    package let acceptsEarlierEpochs: Bool

    init(
        kdf: KDFParameters, salt: [UInt8], kek: SecretBytes, epoch: UInt32 = 0, earlier: [Keyring] = [],
        acceptsEarlierEpochs: Bool = false
    ) {
        self.kdf = kdf
        self.salt = salt
        self.kek = kek
        self.epoch = epoch
        self.earlier = earlier
        self.acceptsEarlierEpochs = acceptsEarlierEpochs
        keyCheck = PasswordKDF.keyCheck(for: kek)
    }

    /// This keyring in `epoch`, knowing the password blocks of earlier ones.
    func with(epoch: UInt32, earlier: [Keyring], acceptsEarlierEpochs: Bool = false) -> Keyring {
        Keyring(
            kdf: kdf, salt: salt, kek: kek, epoch: epoch, earlier: earlier, acceptsEarlierEpochs: acceptsEarlierEpochs)
    }

    /// The same keys, also opening envelopes of earlier epochs.
    /// This keyring, taking envelopes of earlier epoch `e` too (and of no other earlier one).
    package func accepting(epoch e: UInt32) -> Keyring {
        Keyring(
            kdf: kdf, salt: salt, kek: kek, epoch: epoch, earlier: earlier.filter { $0.epoch == e },
            acceptsEarlierEpochs: true)
    }

    package func acceptingEarlierEpochs() -> Keyring {
        Keyring(kdf: kdf, salt: salt, kek: kek, epoch: epoch, earlier: earlier, acceptsEarlierEpochs: true)
    }

    /// Runs Argon2id for a new salt (vault creation).
    package static func create(password: SecretBytes, kdf: KDFParameters, random: any RandomSource) throws -> Keyring {
        let salt = random.bytes(PasswordKDF.saltSize)
        return Keyring(
            kdf: kdf, salt: salt, kek: try PasswordKDF.deriveKey(password: password, salt: salt, parameters: kdf))
    }

    /// Runs Argon2id and checks the result against a stored key check.
    /// - Throws: ``VaultError/Code/wrongPassword`` when the check does not match.
    package static func unlock(
        password: SecretBytes, kdf: KDFParameters, salt: [UInt8], keyCheck: [UInt8]
    ) throws -> Keyring {
        let kek = try PasswordKDF.deriveKey(password: password, salt: salt, parameters: kdf)
        guard PasswordKDF.matches(kek: kek, check: keyCheck) else {
            throw VaultError(.wrongPassword, "wrong password")
        }
        return Keyring(kdf: kdf, salt: salt, kek: kek)
    }

    /// Unlocks a single envelope with its own KDF parameters (no vault needed).
    package static func unlock(password: SecretBytes, envelope header: EnvelopeHeader) throws -> Keyring {
        try unlock(password: password, kdf: header.kdf, salt: header.salt, keyCheck: header.keyCheck)
    }

    /// The key-encryption key for `header`, if it was sealed under this keyring.
    func kek(for header: EnvelopeHeader) throws -> SecretBytes {
        if let old = earlier.first(where: {
            header.kdf == $0.kdf && header.salt == $0.salt && header.keyCheck == $0.keyCheck
        }) {
            if acceptsEarlierEpochs { return old.kek }
            throw VaultError(
                .headerAuthenticationFailed,
                """
                    it is sealed under the password of key epoch \(old.epoch), which a password change retired (this \
                    vault is at epoch \(epoch))
                    """,
                hint:
                    """
                        an envelope of an earlier epoch in the vault's folder was put there from a backup or by \
                        someone who knew an old password
                        """
            )
        }
        guard header.kdf == kdf,
              header.salt == salt,
              header.keyCheck == keyCheck else {
            throw VaultError(
                .headerAuthenticationFailed, "its password block does not match this vault",
                hint: "the header is damaged, or the envelope comes from another vault")
        }
        return kek
    }
}
