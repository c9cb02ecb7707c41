// vault-fixture: makes large vaults for `make bench` and the scale tests, through the library
// (one process instead of one per document). Not installed; not part of the CLI.
//
//   vault-fixture VAULT COUNT [PER-RECORD]
//
// Creates VAULT (password from $VAULT_PASSWORD, Argon2id `interactive`, or Argon2id's minimum
// when VAULT_FIXTURE_KDF=insecure-test, as the CLI tests ask) if it does not exist and
// adds COUNT documents of 4 KiB to it, PER-RECORD documents per history record (default 1: a
// history of COUNT records, as a station adding documents one at a time makes). Document i is
// named `doc-<i>.txt`, tagged `t<i mod 10>`, and added at 2026-01-01 plus i seconds.
//
// With VAULT_FIXTURE_OFFICE=1 the vault is a back office's instead: each record is a `receive`
// record (a batch of PER-RECORD documents taken from station north, east or south in turn, as
// `vault receive` commits one), so `vault receive` serves it with its pages.
//
//   vault-fixture --floor BODY OUT
//
// The CPU floor of a receiver's work on a one-document form BODY (Floor.swift), for make bench.
import Foundation
import VaultCore

let args = CommandLine.arguments
if args.count == 4, args[1] == "--floor" {
    do {
        try floor(body: args[2], out: args[3])
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("vault-fixture: \(error)\n".utf8))
        exit(1)
    }
}
guard args.count >= 3,
      let count = Int(args[2]),
      count >= 0 else {
    FileHandle.standardError.write(Data("usage: vault-fixture VAULT COUNT [PER-RECORD]\n".utf8))
    exit(64)
}
let perRecord = args.count > 3 ? max(1, Int(args[3]) ?? 1) : 1
guard let password = ProcessInfo.processInfo.environment["VAULT_PASSWORD"],
      !password.isEmpty else {
    FileHandle.standardError.write(Data("vault-fixture: set VAULT_PASSWORD\n".utf8))
    exit(64)
}
do {
    let secret = try Array(password.utf8).withUnsafeBytes { try SecretBytes(copying: $0) }
    let store = VaultStore(root: args[1])
    let kdf: KDFParameters =
        ProcessInfo.processInfo.environment["VAULT_FIXTURE_KDF"] == "insecure-test" ? .minimum : .interactive
    let vault = store.exists ? try store.unlock(password: secret) : try store.create(password: secret, kdf: kdf)
    let start = try vault.documentCount()
    if ProcessInfo.processInfo.environment["VAULT_FIXTURE_OFFICE"] == "1" {
        try office(vault, from: start, count: count, perBatch: perRecord)
        exit(0)
    }
    var random = SystemRandomNumberGenerator()
    var session: AddSession?
    for i in start..<(start + count) {
        if session == nil { session = try AddSession(vault: vault) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        for j in stride(from: 0, to: bytes.count, by: 8) {
            withUnsafeBytes(of: random.next()) { bytes.replaceSubrange(j..<j + 8, with: $0) }
        }
        _ = try session!.add(
            from: BytesSource(bytes), name: "doc-\(i).txt", contentType: "text/plain", tags: ["t\(i % 10)"],
            allowDuplicate: true, now: Date(timeIntervalSince1970: 1_767_225_600 + Double(i)))
        if (i - start + 1) % perRecord == 0 {
            try session!.finish()
            session = nil
        }
    }
    try session?.finish()
} catch {
    FileHandle.standardError.write(Data("vault-fixture: \(error)\n".utf8))
    exit(1)
}

/// `count` documents in batches of `perBatch`, each committed as `vault receive` commits a
/// batch (IntakeBatch, a `receive` record), from the stations north, east and south in turn.
func office(_ vault: Vault, from start: Int, count: Int, perBatch: Int) throws {
    var random = SystemRandomNumberGenerator()
    let stations = ["north", "east", "south"]
    var i = start
    var batch = start / perBatch
    while i < start + count {
        let intake = IntakeBatch(vault: vault)
        for _ in 0..<min(perBatch, start + count - i) {
            var bytes = [UInt8](repeating: 0, count: 4096)
            for j in stride(from: 0, to: bytes.count, by: 8) {
                withUnsafeBytes(of: random.next()) { bytes.replaceSubrange(j..<j + 8, with: $0) }
            }
            try intake.begin(
                name: "inbox/doc-\(i).txt", contentType: "text/plain", tags: ["t\(i % 10)"],
                now: Date(timeIntervalSince1970: 1_767_225_600 + Double(i)))
            try bytes.withUnsafeBytes { try intake.write($0) }
            try intake.end()
            i += 1
        }
        let detail =
            #"{"answer":"{}","batch":"fixture-\#(batch)","payloadSHA256":"","station":"\#(stations[batch % 3])","#
            + #""wire":"json"}"#
        try intake.commit(HistoryRecord(.receive, detail: detail))
        batch += 1
    }
}
