// Family `history`: the history log (`log.vlt`), its head and anchor, and `remove.pending`.
// The first byte picks a mode:
//  0  the input is `log.vlt`: scanning and auditing it only ever report findings or throw a
//     VaultError;
//  1  the input is a record's plaintext (what authentication hands the record reader): the
//     hand-written reader and JSONDecoder agree on every input the reader accepts, and what
//     it accepts is exactly the bytes `json()` writes for it (no second spelling of a record);
//  2  the parts of the input that decode as records are appended (sealed, chained, as vault
//     writes them), then the log is scanned and audited: whatever a record says, reading it
//     back does not trap;
//  3  the second byte picks `log.head`, `log.anchor` or `remove.pending`, written either as the
//     raw input or as the input sealed under the vault's key in its role (so the parser behind
//     authentication sees it); scan and audit again.
import Foundation
import VaultCore

enum HistoryFamily {
    static let sandbox = ScratchVault()

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = bytes.dropFirst()
        switch mode % 4 {
        case 0:
            let (vault, dir) = sandbox.fresh()
            put(Array(rest), at: dir + "/log.vlt")
            readBack(vault)
        case 1:
            records(Array(rest))
        case 2:
            let (vault, _) = sandbox.fresh()
            for part in parts(rest, limit: 8) {
                guard let record = try? JSONDecoder().decode(HistoryRecord.self, from: Data(part)) else { continue }
                onlyVaultErrors("appending a record") { _ = try vault.appendToHistory(record) }
            }
            readBack(vault)
        default:
            guard let which = rest.first else { return }
            let body = Array(rest.dropFirst())
            let (vault, dir) = sandbox.fresh()
            let files: [(String, SealedState.Purpose)] = [
                ("log.head", .logHead), ("log.anchor", .logAnchor), ("remove.pending", .pendingRemoval)
            ]
            let (name, purpose) = files[Int(which >> 1) % files.count]
            let sealed = which & 1 == 1
            put(sealed ? try! vault.sealState(body, purpose: purpose, role: name) : body, at: dir + "/" + name)
            readBack(vault)
        }
    }

    /// Scans and audits: findings, or a VaultError; never a trap.
    static func readBack(_ vault: Vault) {
        if let scan = onlyVaultErrors("scanning the log", { try vault.history() }) {
            expect(
                scan.entries.enumerated().allSatisfy { $0.element.position == $0.offset + 1 }, "entries out of place")
        }
        onlyVaultErrors("auditing") { _ = try vault.audit() }
    }

    /// The record reader against JSONDecoder, and against `json()`.
    static func records(_ plain: [UInt8]) {
        let decoded = try? JSONDecoder().decode(HistoryRecord.self, from: Data(plain))
        if let fast = HistoryRecordReader.read(plain, documents: { _ in true }) {
            expect(decoded == fast, "the record reader accepts what JSONDecoder reads differently (or not at all)")
            expect(fast.json() == plain, "the record reader accepts a spelling json() does not write")
            let lean = HistoryRecordReader.read(plain, documents: { _ in false })
            expect(
                lean?.documents == []
                    && lean.map {
                        var l = $0; l.documents = fast.documents; return l == fast
                    } == true,
                "reading without documents changes the rest of the record")
        }
        if let decoded {
            let canonical = decoded.json()
            expect(
                HistoryRecordReader.read(canonical, documents: { _ in true }) == decoded,
                "the record reader does not read what json() writes")
        }
    }
}
