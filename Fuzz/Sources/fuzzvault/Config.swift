// Family `config`: `vault.json` and `passwd.journal` (an interrupted password change). The
// first byte picks:
//  0  `vault.json` decoded: a VaultError or a configuration that encodes and decodes back to
//     itself;
//  1  the input as a password journal's body with its SHA-256 appended (so the parser behind
//     the checksum sees it): a VaultError, or a journal that encodes to exactly those bytes;
//  2  the input as a whole password journal (checksum and all);
//  3  the input as `vault.json` of a vault, opened with the password: a VaultError or a vault
//     (only when its Argon2id parameters are the cheapest, so one input costs microseconds);
//  4  the input as the keyring of earlier key epochs, sealed under the vault's key into its
//     `vault.json` (so the parser behind authentication sees it), opened with the password.
// The vault has had its password changed once (key epoch 1), so its keyring has an entry.
import Crypto
import Foundation
import VaultCore

enum ConfigFamily {
    static let sandbox = ScratchVault(documents: 1) { vault in
        _ = try! vault.changePassword(to: try! SecretBytes(password: fuzzPassword), kdf: .minimum)
    }

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch mode % 5 {
        case 0:
            if let config = onlyVaultErrors(
                "vault.json", codes: [.vaultDamaged, .unsupportedVersion, .kdfParametersRejected],
                { try VaultConfig.decode(rest, path: "vault.json") })
            {
                let again = onlyVaultErrors("vault.json written back") {
                    try VaultConfig.decode(config.encoded(), path: "vault.json")
                }
                expect(again == config, "vault.json does not read back as it was written")
            }
        case 1:
            journal(rest + Array(SHA256.hash(data: rest)))
        case 2:
            journal(rest)
        case 4:
            let (vault, dir) = sandbox.fresh()
            var json =
                try! JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/vault.json")))
                as! [String: Any]
            json["keyring"] = Data(try! vault.sealState(rest, purpose: .keyring, role: "vault.json"))
                .base64EncodedString()
            put(
                Array(try! JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])),
                at: dir + "/vault.json")
            onlyVaultErrors("opening a vault with its keyring", codes: [.vaultDamaged]) {
                _ = try VaultStore(root: dir).unlock(password: try SecretBytes(password: fuzzPassword))
            }
        default:
            guard let config = try? VaultConfig.decode(rest, path: "vault.json"),
                  config.parameters == .minimum else {
                return
            }
            let (_, dir) = sandbox.fresh()
            put(rest, at: dir + "/vault.json")
            onlyVaultErrors("opening a vault") {
                _ = try VaultStore(root: dir).unlock(password: try SecretBytes(password: fuzzPassword))
            }
        }
    }

    static func journal(_ bytes: [UInt8]) {
        if let j = onlyVaultErrors("passwd.journal", codes: [.vaultDamaged], { try PasswordJournal.decode(bytes) }) {
            expect(j.encoded() == bytes, "passwd.journal does not encode back to its bytes")
        }
    }
}
