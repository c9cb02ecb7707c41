// `fuzzvault FAMILY --make-seeds DIR`: seeds written by vault itself — a scratch vault with
// documents, a destination list, a remote list, an upload journal and a history, each state
// file taken as it is on disk (raw) and as the body its seal holds (sealed mode), framed as the
// family reads its input. scripts/fuzz.sh adds the fixtures, the official vectors and the
// recorded answers (Fuzz/seeds/).
import CSQLite
import Crypto
import Foundation
import VaultCore
import VaultRemote
import VaultUpload

enum Seeds {
    // Long: one seed list per fuzz family, a table read down the page.
    static func make(_ family: String, into dir: String) -> Int {
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var n = 0
        func seed(_ name: String, _ bytes: [UInt8]) {
            FileManager.default.createFile(atPath: dir + "/" + name, contents: Data(bytes))
            n += 1
        }
        let (vault, root) = busyVault()
        func open(_ path: String, _ purpose: SealedState.Purpose, _ role: String) -> [UInt8] {
            let bytes = Array(FileManager.default.contents(atPath: path)!)
            return try! vault.openState(bytes, purpose: purpose, role: role, what: path)
        }
        switch family {
        case "history":
            let log = Array(FileManager.default.contents(atPath: root + "/log.vlt")!)
            seed("log", [0] + log)
            let records = try! vault.history().entries.compactMap(\.record)
            for (i, r) in records.enumerated() {
                seed("record-\(i)-\(r.operation.rawValue)", [1] + r.json())
            }
            seed("records", [2] + records.map { $0.json() }.joined(separator: [0x1E]))
            seed("head-raw", [3, 0] + Array(FileManager.default.contents(atPath: root + "/log.head")!))
            seed("head-sealed", [3, 1] + open(root + "/log.head", .logHead, "log.head"))
            seed("anchor-sealed", [3, 3] + open(root + "/log.anchor", .logAnchor, "log.anchor"))
            let documents = records.flatMap(\.documents)
            seed("remove-pending-sealed", [3, 5] + Array(try! JSONEncoder().encode(documents)))
        case "state":
            let id = try! vault.records().records.sorted { $0.metadata.name < $1.metadata.name }[0].id
            let stone = try! vault.sealTombstone(
                try! vault.history().entries.compactMap(\.record).flatMap(\.documents).first { $0.id == id }!)
            seed("tombstone-raw", [0 << 1] + stone)
            seed(
                "tombstone-sealed",
                [0 << 1 | 1]
                    + (try! vault.openState(stone, purpose: .tombstone, role: "removed/\(id.hex)", what: "tombstone")))
            for (k, path, purpose, role) in [
                (1, DestinationList.path(vault.store), SealedState.Purpose.destinations, DestinationList.role),
                (2, RemoteList.path(vault.store), .remotes, RemoteList.role)
            ] {
                seed("\(role)-raw", [UInt8(k << 1)] + Array(FileManager.default.contents(atPath: path)!))
                seed("\(role)-sealed", [UInt8(k << 1 | 1)] + open(path, purpose, role))
            }
            let journal = open(
                UploadJournal.path(in: vault.store, job: "seed-job"), .uploadJournal,
                UploadJournal.role(job: "seed-job"))
            let retitled = Array(
                String(decoding: journal, as: UTF8.self).replacingOccurrences(of: "seed-job", with: StateFamily.job)
                    .utf8)
            seed("journal-sealed", [3 << 1 | 1] + retitled)
            seed(
                "journal-with-log",
                [4 << 1 | 1] + retitled + [0x1E] + Array("{\"batches\":[],\"updated\":\"2026-11-24T00:00:00Z\"}".utf8))
            let (state, record) = indexRows(root, id)
            seed(
                "index-state-sealed",
                [5 << 1 | 1]
                    + (try! vault.openState(state, purpose: .indexState, role: "index.db/state", what: "state")))
            seed(
                "index-record-sealed",
                [6 << 1 | 1]
                    + (try! vault.openState(
                        record, purpose: .indexRecord, role: "index.db/documents/\(id.hex)", what: "row")))
            seed("index-record-raw", [6 << 1] + record)
        case "config":
            let config = Array(FileManager.default.contents(atPath: root + "/vault.json")!)
            seed("vault-json", [0] + config)
            seed("vault-json-opened", [3] + config)
            var journal = Array("VAULTPWJ".utf8)
            for field in [config, config] { journal.appendBigEndian32(UInt32(field.count)); journal += field }
            journal.appendBigEndian32(0)
            seed("passwd-journal-body", [1] + journal)
            let (changed, changedRoot) = ConfigFamily.sandbox.fresh()
            let json =
                try! JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: changedRoot + "/vault.json"))) as! [String: Any]
            let keyring = Array(Data(base64Encoded: json["keyring"] as! String)!)
            seed(
                "keyring-body",
                [4] + (try! changed.openState(keyring, purpose: .keyring, role: "vault.json", what: "keyring")))
            seed("vault-json-epoch-1", [3] + Array(FileManager.default.contents(atPath: changedRoot + "/vault.json")!))
        case "payload":
            // Payloads of vault's layout in both shapes, read in pieces of 1, 8 and 128 bytes.
            for (count, label) in [(0, "empty"), (1, "one"), (4, "four")] {
                for shape in PayloadShape.allCases {
                    var body = Array(#"{"Files":["#.utf8)
                    for i in 0..<count {
                        if i > 0 { body.append(0x2C) }
                        let data = [UInt8](repeating: UInt8(i), count: [0, 1, 2, 70][i % 4])
                        let metadata = DocumentMetadata(
                            name: ["scan.pdf", "quote\"d\n", "ünï", ""][i % 4], contentType: "application/pdf",
                            size: UInt64(data.count), sha256: Array(SHA256.hash(data: data)), addedAtMillis: 0, tags: []
                        )
                        let entry = PayloadEntry(
                            DocumentRecord(
                                id: DocumentID(bytes: [UInt8](repeating: UInt8(i), count: 16)), metadata: metadata),
                            shape: shape)
                        body += entry.prefix + Array(Data(data).base64EncodedString().utf8) + entry.suffix
                    }
                    body += Array("]}".utf8)
                    let first: UInt8 = shape == .objects ? 0 : 1
                    for mode in [first, first + 14, first + 254] {
                        seed("\(label)-\(shape.rawValue)-\(mode)", [mode] + body)
                    }
                }
            }
        case "multipart":
            // Forms as vault's form upload sends them (with the fuzz family's boundary), read in
            // pieces of 1, 8 and 256 bytes; and one as a browser or curl sends it.
            let data = [UInt8](repeating: 0x2D, count: 40) + Array("\r\n--vault-fu".utf8)
            let metadata = DocumentMetadata(
                name: "scan \"1\".pdf", contentType: "application/pdf", size: UInt64(data.count),
                sha256: Array(SHA256.hash(data: data)), addedAtMillis: 0, tags: [])
            let record = DocumentRecord(id: DocumentID(bytes: [UInt8](repeating: 7, count: 16)), metadata: metadata)
            let form = FormBody(
                boundary: MultipartFamily.boundary, fields: [FormField(name: "case", value: "4711")], batch: 1, of: 1)
            let vaultForm = form.opening([record]) + form.head(record) + data + form.tail(record) + form.closing
            let curlForm = Array(
                ("--vault-fuzz\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"a\\\"b.txt\"\r\n"
                    + "Content-Type: text/plain\r\n\r\nhello\r\n--vault-fuzz--\r\n").utf8)
            for mode: UInt8 in [0, 7, 255] {
                seed("vault-form-\(mode)", [mode] + vaultForm)
                seed("curl-form-\(mode)", [mode] + curlForm)
            }
        case "receipt":
            // Answers as a receiver signs them: no document, one, and twenty.
            let key = try! [UInt8](repeating: 0x11, count: 32).withUnsafeBytes {
                try SigningKey(seed: try SecretBytes(copying: $0))
            }
            for count in [0, 1, 20] {
                let receipt = Receipt(
                    batch: "run-\(count)/1",
                    documents: (0..<count).map {
                        Receipt.Document(
                            id: DocumentID(bytes: [UInt8](repeating: UInt8($0), count: 16)),
                            sha256: [UInt8](repeating: UInt8($0), count: 32), size: UInt64($0) * 1000)
                    },
                    payloadSHA256: [UInt8](repeating: 0xEF, count: 32), receiver: "office \"main\"",
                    station: "station-3",
                    timeMillis: 1_795_651_200_123)
                seed("answer-\(count)", receipt.signed(with: key))
            }
        case "tus":
            // A creation of a one-document payload, its PATCH in two chunks (the second with its
            // SHA-1), a HEAD and a DELETE; and the same with offsets that jump and overlap.
            let doc = Array("tus seed".utf8)
            let payload = Array(
                (#"{"Files":[{"Id":"00000000000000000000000000000001","Name":"t.txt","ContentType":"text/plain","#
                    + #""Size":\#(doc.count),"SHA256":"\#(Hex.encode(Array(SHA256.hash(data: doc))))","#
                    + #""Data":"\#(Data(doc).base64EncodedString())"}]}"#).utf8)
            func field(_ s: String) -> [UInt8] { [UInt8(s.utf8.count)] + Array(s.utf8) }
            func chunk(_ b: ArraySlice<UInt8>) -> [UInt8] { [UInt8(b.count)] + Array(b) }
            let half = payload.count / 2
            let sha1 = Data(Insecure.SHA1.hash(data: payload[half...])).base64EncodedString()
            let create = [UInt8(0)] + field(String(payload.count))
            let first = [UInt8(1)] + field("0") + chunk(payload[..<half])
            let second = [UInt8(5)] + field(String(half)) + field("sha1 " + sha1) + chunk(payload[half...])
            seed("whole", create + first + second + [6] + [3])
            seed("jumps", create + [UInt8(1)] + field("7") + chunk(payload[7..<20]) + first + first + [2])
        case "age":
            // Files vault seals to the test recipients (0), plaintexts to seal (1), and sealed
            // payloads of zero, one and three documents (2), in pieces of 1, 16 and 64 bytes.
            let recipients = AgeFamily.identities.map(\.recipient)
            for size in [0, 1, 65_536, 65_537] {
                let plain = [UInt8](repeating: 0x61, count: size)
                let file = PayloadSealing(recipients: recipients).sealWhole(plain, slot: .manifest)
                seed("sealed-\(size)", [0] + file)
                if size < 100 { seed("plain-\(size)", [1] + plain) }
            }
            for count in [0, 1, 3] {
                let sealing = PayloadSealing(recipients: recipients)
                let format = PayloadFormat.sealed(sealing)
                var records: [(DocumentRecord, [UInt8])] = []
                for i in 0..<count {
                    let data = [UInt8](repeating: UInt8(i), count: [0, 5, 70_000][i % 3])
                    let metadata = DocumentMetadata(
                        name: ["scan.pdf", "quote\"d", "ünï"][i % 3], contentType: "application/pdf",
                        size: UInt64(data.count), sha256: Array(SHA256.hash(data: data)), addedAtMillis: 0, tags: [])
                    records.append(
                        (
                            DocumentRecord(
                                id: DocumentID(bytes: [UInt8](repeating: UInt8(i + 1), count: 16)), metadata: metadata),
                            data
                        ))
                }
                var body = format.opening(records.map(\.0))
                for (i, (r, data)) in records.enumerated() {
                    body += format.head(r, first: i == 0)
                    body += Array(Data(sealing.sealWhole(data, slot: .data(r.id))).base64EncodedString().utf8)
                    body += format.tail(r)
                }
                body += format.closing
                for mode in [UInt8(2), 62, 254] { seed("payload-\(count)-\(mode)", [mode] + body) }
            }
        default:
            break
        }
        return n
    }

    /// A scratch vault that has done what a station does: documents added, destinations and a
    /// remote named, one upload journalled.
    static func busyVault() -> (Vault, String) {
        let sandbox = ScratchVault()
        let (vault, root) = sandbox.fresh()
        var destinations = DestinationList()
        destinations.destinations = [
            .init(name: "office", url: "https://office.example/in"),
            .init(name: "tus", url: "https://office.example/tus", wire: "tus")
        ]
        try! destinations.save(vault)
        // The file a vault/2 kept them in (read once, by the upgrade to vault/3).
        try! destinations.saveFile(vault)
        var remotes = RemoteList()
        remotes.remotes = [.init(name: "backup", url: "s3://bucket/prefix")]
        try! remotes.save(vault)
        let transport = FuzzTransport(
            answers: [], presign: false, always: UploadResponse(status: 200, reason: "OK", retryAfter: nil, body: ""))
        let options = UploadOptions(target: UploadTarget(address: UploadFamily.target)!)
        waitFor {
            _ = try! await Uploader(
                vault: vault, records: sandbox.records, options: options, transport: transport, job: "seed-job",
                onEvent: { _ in }
            ).run()
        }
        return (vault, root)
    }

    /// `index.db`'s state row and document `id`'s row, as SQLite holds them.
    static func indexRows(_ root: String, _ id: DocumentID) -> ([UInt8], [UInt8]) {
        var db: OpaquePointer?
        precondition(sqlite3_open_v2(root + "/index.db", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        func blob(_ sql: String) -> [UInt8] {
            var s: OpaquePointer?
            precondition(sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            defer { sqlite3_finalize(s) }
            return Array(
                UnsafeRawBufferPointer(start: sqlite3_column_blob(s, 0), count: Int(sqlite3_column_bytes(s, 0))))
        }
        return (
            blob("SELECT value FROM meta WHERE name = 'state'"),
            blob("SELECT record FROM documents WHERE id = X'\(id.hex)'")
        )
    }
}
