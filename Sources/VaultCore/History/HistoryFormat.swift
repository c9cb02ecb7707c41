#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The constants of the history log (docs/FORMAT.md, "History").
enum HistoryFormat {
    /// `log.vlt` starts with these 8 bytes and a version byte.
    static let magic = Array("VAULTLOG".utf8)
    static let version: UInt8 = 1
    static var fileHeader: [UInt8] { magic + [version] }
    /// `log.head` starts with these 8 bytes.
    static let headMagic = Array("VAULTLHD".utf8)
    static let tagSize = 16
    static let nonceSize = EnvelopeFormat.nonceSize
    /// A record's sealed length (nonce and tag included) is at most this.
    static let maxRecordSize = 64 << 20
    /// `crypto_kdf` subkey of the vault key that seals records and the head.
    static let subkeyID: UInt64 = 2
    static let subkeyContext = "vaultlog"
}
