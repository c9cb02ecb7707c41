#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Hummingbird
import VaultCore

/// The pages that find what the office took: the documents (searched, filtered and paged), one
/// batch, one station. Each reads the receiver's book (``Receiver/book()``: the records as last
/// read, what was added since applied), and the index only for the rows shown.
extension OperatorView {
    /// Rows on a page of documents or batches.
    static let pageSize = 50

    func registerFinding(on router: Router<ReceiveContext>) {
        router.get("/ui/documents") { request, _ in await page(request) { try await documentsPage($0, request) } }
        router.get("/ui/batches/:n") { request, context in
            await page(request) { try await batchPage($0, position: context.parameters.get("n") ?? "") }
        }
        router.get("/ui/archive") { request, context in await archive(request, from: context.address) }
        router.get("/ui/stations/:name") { request, context in
            await page(request) { try await stationPage($0, name: context.parameters.get("name") ?? "") }
        }
    }

    /// `GET /ui/documents?q=&station=&tag=&from=&to=&sealed=&page=`: newest first.
    private func documentsPage(_ session: OperatorSessions.Session, _ request: Request) async throws -> (Int, String) {
        let query = DocumentsQuery(request.uri.query)
        if let problem = query.problem {
            return (400, frame("problem", title: "Documents", session, ["message": problem]))
        }
        let book = try await receiver.book()
        let found = try await documents(query, in: book)
        let pages = max(1, (found.count + Self.pageSize - 1) / Self.pageSize)
        let number = min(max(1, query.page), pages)
        let shown = found.dropFirst((number - 1) * Self.pageSize).prefix(Self.pageSize)
        var rows: [[String: Any]] = []
        for r in shown {
            let b = book.batches[r.batch]
            let d = r.document
            var row: [String: Any] = [
                "id": d.id.description, "name": d.name.isEmpty ? d.id.description : d.name,
                "size": ByteSize.text(d.size), "station": b.station, "received": Shown.time(millis: b.timeMillis),
                "batch": r.batch + 1
            ]
            if b.sealed { row["sealed"] = true }
            if let record = try await receiver.home.document(r.document.id)?.record {
                row["type"] = record.metadata.contentType
                row["present"] = true
            }
            rows.append(row)
        }
        var content: [String: Any] = [
            "q": query.text, "tag": query.tag, "from": query.from, "to": query.to,
            "stationOptions": book.stations.keys.sorted().map { ["name": $0, "selected": $0 == query.station] },
            "sealedOptions": [("", "either"), ("yes", "sealed"), ("no", "not sealed")].map {
                ["value": $0.0, "label": $0.1, "selected": $0.0 == query.sealed]
            },
            "documents": rows, "count": found.count == 1 ? "1 document" : "\(found.count) documents",
            "page": number, "pages": pages, "archive": "/ui/archive" + query.link(page: nil)
        ]
        if number > 1 { content["previous"] = "/ui/documents" + query.link(page: number - 1) }
        if number < pages { content["next"] = "/ui/documents" + query.link(page: number + 1) }
        if pages > 1 {
            content["first"] = "/ui/documents" + query.link(page: 1)
            content["last"] = "/ui/documents" + query.link(page: pages)
        }
        return (200, frame("documents", title: "Documents", session, content))
    }

    /// The documents taken that `query` keeps, newest first.
    func documents(_ query: DocumentsQuery, in book: OfficeBook) async throws -> [OfficeBook.Received] {
        var filter = OfficeBook.Filter(
            station: query.station.isEmpty ? nil : query.station, text: query.text,
            sealed: query.sealed == "yes" ? true : query.sealed == "no" ? false : nil)
        filter.sinceMillis = UTCTime.parseDay(query.from).map { UTCTime($0).millis }
        // "To" a day takes the whole of that day.
        filter.beforeMillis = UTCTime.parseDay(query.to).map { UTCTime($0).millis + 86_400_000 }
        if !query.tag.isEmpty { filter.among = try await receiver.documents(tagged: query.tag, in: book) }
        if !query.ids.isEmpty {
            let ids = Set(query.ids.compactMap(DocumentID.init(hex:)))
            filter.among = filter.among.map { $0.intersection(ids) } ?? ids
        }
        return book.received(matching: filter)
    }

    /// `GET /ui/batches/N`: the N-th batch the office took (1 the first).
    private func batchPage(_ session: OperatorSessions.Session, position: String) async throws -> (Int, String) {
        let book = try await receiver.book()
        guard let n = Int(position), n >= 1, n <= book.batches.count else {
            return (
                404, frame("problem", title: "No such batch", session, ["message": "The office took no such batch."])
            )
        }
        let b = book.batches[n - 1]
        let content: [String: Any] = ["batches": [BatchRow(b, position: n)], "archive": "/ui/archive?batch=\(n)"]
        return (200, frame("batches", title: "Batch \(n) · \(b.station)", session, content))
    }

    /// `GET /ui/stations/NAME`: a station's card, its newest batches and a link to its documents.
    private func stationPage(_ session: OperatorSessions.Session, name: String) async throws -> (Int, String) {
        let book = try await receiver.book()
        guard let s = book.stations[name] else {
            return (
                404, frame("problem", title: "No such station", session, ["message": "The office has no such station."])
            )
        }
        let row = stationRow(s)
        let batches = book.batches.enumerated().reversed().filter { $0.element.station == name }.prefix(Self.pageSize)
            .map { n, b in
                [
                    "n": n + 1, "time": Shown.time(millis: b.timeMillis),
                    "count": b.documents.count == 1 ? "1 document" : "\(b.documents.count) documents",
                    "bytes": ByteSize.text(b.bytes)
                ] as [String: Any]
            }
        var query = DocumentsQuery(nil)
        query.station = name
        return (
            200,
            frame(
                "station", title: "Station \(name)", session,
                ["station": row, "batches": batches, "documents": "/ui/documents" + query.link(page: nil)])
        )
    }
}

extension OperatorView {
    /// The most documents one archive holds: a day of a busy office (more: narrow the filter).
    static let archiveLimit = 20_000

    /// `GET /ui/archive?…`: the documents a filter of the documents page keeps (`q`, `station`,
    /// …), the ticked ones (`id`, repeated), or a batch's (`batch=N`), as one zip streamed as
    /// it is read, oldest first, each under its name with its folders (a clash made unique as
    /// "name (2).pdf"). Each 64 KiB chunk is authenticated before it is written; a document that
    /// does not authenticate stops the response short of its length, so the browser marks the
    /// download failed.
    // Long: the selection, the names, and the response with its body.
    private func archive(_ request: Request, from address: String) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard let session = await signedIn(request) else { return Self.redirect("/ui/login") }
        let query = DocumentsQuery(request.uri.query)
        func problem(_ status: Int, _ title: String, _ message: String) -> Response {
            Self.html(frame("problem", title: title, session, ["message": message]), status: status)
        }
        if let unread = query.problem { return problem(400, "Nothing to download", unread) }
        var items: [(record: DocumentRecord, vault: Vault, entry: ZipStream.Entry, file: File)] = []
        do {
            let book = try await receiver.book()
            let found: [OfficeBook.Received]
            if let n = query.batch {
                guard n >= 1, n <= book.batches.count else {
                    return problem(404, "No such batch", "The office took no such batch.")
                }
                found = book.received(matching: OfficeBook.Filter()).filter { $0.batch == n - 1 }
            } else {
                found = try await documents(query, in: book)
            }
            guard found.count <= Self.archiveLimit else {
                return problem(
                    413, "Too many documents",
                    "\(found.count) documents match; an archive holds at most \(Self.archiveLimit): narrow the filter.")
            }
            var chosen: [(record: DocumentRecord, vault: Vault)] = []
            for r in OfficeBook.oldestFirst(found) {
                if let document = try await receiver.home.document(r.document.id) { chosen.append(document) }
            }
            // Names as `get` makes them, safe to unpack on Windows too, a clash made unique.
            // What came captured goes as it is kept, an age file (`ID.age`).
            let files = try chosen.map { try Self.file($0.record, in: $0.vault) }
            let paths = SafePath.unique(files.enumerated().map { n, f in
                SafePath.portable(SafePath.of(f.name, id: chosen[n].record.id))
            })
            for (((record, vault), file), path) in zip(zip(chosen, files), paths) {
                items.append(
                    (record, vault, ZipStream.Entry(path: path, size: file.size, millis: record.metadata.addedAtMillis),
                        file))
            }
        } catch {
            return problem(503, "Cannot read the vault", VaultError.from(error).message)
        }
        guard !items.isEmpty else { return problem(404, "Nothing to download", "No document matches.") }
        if let refused = await recorded(items.map(\.record), session, from: address, via: "archive") {
            return refused
        }
        var headers = Self.headers(contentType: "application/zip")
        let stamp = UTCTime(Date()).iso8601.filter { $0.isNumber }.prefix(14)
        headers[.contentDisposition] = Self.attachment("vault-documents-\(stamp).zip")
        let length = ZipStream.length(of: items.map(\.entry))
        let chosen = items
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { writer in
                var zip = ZipStream()
                for item in chosen {
                    try await writer.write(ByteBuffer(bytes: zip.begin(item.entry)))
                    let next = try item.file.open()
                    while let batch = try next() {
                        batch.withUnsafeBytes { zip.data($0) }
                        try await writer.write(ByteBuffer(bytes: batch))
                    }
                    try await writer.write(ByteBuffer(bytes: try zip.end()))
                }
                try await writer.write(ByteBuffer(bytes: zip.finish()))
                try await writer.finish(nil)
            })
    }
}

/// What the documents page was asked for: its form's fields (GET, so a filtered page can be
/// bookmarked), and ticked rows (`id`, repeated) for an archive.
struct DocumentsQuery {
    var text = ""
    var station = ""
    var tag = ""
    var from = ""
    var to = ""
    var sealed = ""
    var page = 1
    var ids: [String] = []
    /// `batch=N`: the documents of the N-th batch (archives of one batch).
    var batch: Int?
    /// What could not be read (`to=2026-13-45 is not a day`): a filter never widens to everything
    /// because a value in it was not understood.
    var unreadable: [String] = []

    /// The fields of `query` (the request's raw query, `+` a space, `%XX` a byte); unknown
    /// fields and undecodable values are left out.
    init(_ query: String?) {
        var seen: Set<String> = []
        for pair in Array((query ?? "").utf8).split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = FormFields.decode(parts[0]).flatMap({ String(validating: $0, as: UTF8.self) }),
                let value = FormFields.decode(parts.count > 1 ? parts[1] : []).flatMap({
                    String(validating: $0, as: UTF8.self)
                })
            else {
                unreadable.append("a field that is not UTF-8")
                continue
            }
            let trimmed = String(value.prefix(256))
            if key != "id" && !seen.insert(key).inserted { unreadable.append("\(key) is given twice") }
            switch key {
            case "q": text = trimmed
            case "station": station = trimmed
            case "tag": tag = trimmed
            case "from": from = trimmed
            case "to": to = trimmed
            case "sealed": sealed = trimmed
            case "page": page = Int(trimmed) ?? 1
            case "batch":
                batch = Int(trimmed)
                if batch == nil { unreadable.append("batch=\(trimmed) is not a batch's number") }
            case "id" where ids.count < 1_000:
                ids.append(trimmed)
                if DocumentID(hex: trimmed) == nil { unreadable.append("id=\(trimmed) is not a document's id") }
            case "id": unreadable.append("more than 1,000 ids")
            default: continue
            }
        }
        for (field, value) in [("from", from), ("to", to)] where !value.isEmpty && UTCTime.parseDay(value) == nil {
            unreadable.append("\(field)=\(value) is not a day (2026-11-28)")
        }
        if !["", "yes", "no"].contains(sealed) { unreadable.append("sealed=\(sealed) is not yes or no") }
        if batch != nil && (!ids.isEmpty || !text.isEmpty || !station.isEmpty || !tag.isEmpty || !from.isEmpty
            || !to.isEmpty || !sealed.isEmpty)
        {
            unreadable.append("batch= goes alone")
        }
    }

    /// The sentence a page says when something could not be read.
    var problem: String? {
        unreadable.isEmpty ? nil : "The filter could not be read: " + unreadable.joined(separator: "; ") + "."
    }

    /// The query string (from `?`, empty when nothing is asked) of these fields on page `page`.
    func link(page: Int?) -> String {
        var fields: [(String, String)] = [
            ("q", text), ("station", station), ("tag", tag), ("from", from), ("to", to), ("sealed", sealed)
        ].filter { !$0.1.isEmpty }
        if let batch { fields.append(("batch", String(batch))) }
        fields += ids.map { ("id", $0) }
        if let page, page > 1 { fields.append(("page", String(page))) }
        guard !fields.isEmpty else { return "" }
        return "?" + fields.map { "\($0.0)=\(Self.encoded($0.1))" }.joined(separator: "&")
    }

    /// `text` percent-encoded for a query value or an RFC 8187 `filename*`: letters, digits and
    /// `-._~` as they are (unreserved characters, all attr-chars too).
    static func encoded(_ text: String) -> String {
        text.utf8.map { b -> String in
            b.isASCIIAlphanumeric || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
                ? String(UnicodeScalar(b)) : "%" + Hex.digits(b, uppercase: true)
        }.joined()
    }
}
