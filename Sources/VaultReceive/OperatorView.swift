import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import VaultCore

/// The operator's view in a browser (docs/RECEIVE.md, "The operator's view"): server-rendered
/// pages under `/ui/` of what the receiver took, read from its history and index on every
/// request (the history is the one truth; nothing here is kept but sessions).
///
/// - `GET /ui/`: the stations (last seen, batches, documents, bytes, head, rollback alerts).
/// - `GET /ui/batches`: the batches, newest first (time, station, documents, receipt).
/// - `GET /ui/documents/ID`: a document's metadata; `…/download` its plaintext.
/// - `GET|POST /ui/login`, `POST /ui/logout`.
///
/// Every page needs a session (``OperatorSessions``); every form carries a CSRF token: the
/// session's, or before sign-in a random one also set as a short-lived cookie (double submit).
/// A `POST` whose `Origin` is another site is refused. Pages send a Content-Security-Policy
/// that allows no script at all, and are never cached.
struct OperatorView: Sendable {
    let receiver: Receiver
    let accounts: OperatorAccounts
    let sessions: OperatorSessions
    /// Served over TLS: cookies get `Secure`, and a form's `Origin` must be `https`.
    let secure: Bool
    /// Host names the pages may be asked for besides IP addresses and `localhost`
    /// (``ReceiveServer/Configuration/operatorHosts``): a request for any other `Host` is refused,
    /// so a site whose name an attacker points at this receiver (DNS rebinding) gets nothing.
    let hosts: [String]
    /// One line per sign-in and sign-out.
    let logger: Logger

    static let sessionCookie = "vault_session"
    static let loginCookie = "vault_login"

    func register(on router: Router<ReceiveContext>) {
        accounts.prepare()
        router.get("/ui") { request, _ in await page(request) { try await stationsPage($0) } }
        router.get("/ui/batches") { request, _ in await page(request) { try await batchesPage($0, request) } }
        registerFinding(on: router)
        registerAlerts(on: router)
        router.get("/ui/documents/:id") { request, context in
            await page(request) { try await documentPage($0, id: context.parameters.get("id") ?? "") }
        }
        router.get("/ui/documents/:id/download") { request, context in
            await download(request, id: context.parameters.get("id") ?? "", from: context.address)
        }
        router.get("/ui/documents/:id/metadata") { request, context in
            await download(request, id: context.parameters.get("id") ?? "", from: context.address, metadata: true)
        }
        router.get("/ui/style.css") { _, _ in
            Response(
                status: .ok, headers: Self.headers(contentType: "text/css; charset=utf-8"),
                body: .init(byteBuffer: ByteBuffer(string: OperatorPages.css)))
        }
        router.get("/ui/login") { request, _ in await loginPage(request, message: nil, status: .ok) }
        router.post("/ui/login") { request, context in await login(request, context) }
        router.post("/ui/logout") { request, _ in await logout(request) }
    }

    // MARK: Pages

    /// A page for a signed-in operator, else a redirection to the sign-in page.
    func page(
        _ request: Request, _ render: (OperatorSessions.Session) async throws -> (Int, String)
    ) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard let session = await signedIn(request) else { return Self.redirect("/ui/login") }
        do {
            let (status, html) = try await render(session)
            return Self.html(html, status: status)
        } catch {
            return Self.html(
                frame("problem", title: "Cannot read the vault", session, ["message": VaultError.from(error).message]),
                status: 503)
        }
    }

    /// The live session of the request's cookie, whose operator still exists.
    func signedIn(_ request: Request) async -> OperatorSessions.Session? {
        let token = request.cookies[Self.sessionCookie]?.value
        guard let session = sessions.session(token) else { return nil }
        guard await accounts.isCurrent(session.operatorName, generation: session.generation) else {
            sessions.end(token)
            return nil
        }
        return session
    }

    /// `template` rendered with the frame (title, operator, CSRF token) and `content`.
    func frame(
        _ template: String, title: String, _ session: OperatorSessions.Session?, _ content: [String: Any] = [:]
    ) -> String {
        var context: [String: Any] = [
            "title": title, "signedIn": session != nil, "operatorName": session?.operatorName ?? "",
            "csrf": session?.csrf ?? ""
        ]
        context.merge(content) { $1 }
        return OperatorPages.render(context, template)
    }

    private func stationsPage(_ session: OperatorSessions.Session) async throws -> (Int, String) {
        // One read of the records gives the stations and what they sent; the receiver's memory
        // adds when each was last heard from in this run (refusals too).
        let book = try await receiver.book()
        let rows = book.stations.values.sorted { $0.name < $1.name }.map(stationRow)
        let removed = book.removedTokensUsed.map { RemovedTokenRow(name: $0.name, time: Shown.time(millis: $0.millis)) }
        return (200, frame("stations", title: "Stations", session, ["stations": rows, "removedTokens": removed]))
    }

    /// A station's card: what the records say of it, and what this run heard.
    func stationRow(_ s: OfficeBook.Station) -> StationRow {
        let mine = receiver.stations.first { $0.name == s.name }
        let seen = [mine?.lastSeenMillis, s.lastBatchMillis, s.lastRefusal?.millis].compactMap { $0 }.max()
        var refused: String?
        if let mine, let last = mine.lastRefusal, mine.refusals > 0 {
            let when = Shown.time(millis: last.millis)
            refused = "\(mine.refusals) since the receiver started; last \(when): \(last.code)"
        } else if let last = s.lastRefusal {
            refused = "last \(Shown.time(millis: last.millis)): \(last.code)"
        }
        return StationRow(
            name: s.name, lastSeen: Shown.time(millis: seen), refused: refused, batches: s.batches,
            documents: s.documents, bytes: ByteSize.text(s.bytes), head: s.head ?? "none received yet",
            alerts: s.alerts.map {
                AlertRow(
                    time: Shown.time(millis: $0.timeMillis), reason: $0.reason, head: $0.head, knownHead: $0.knownHead)
            })
    }

    /// `GET /ui/batches?page=N`: the batches, newest first, a page at a time.
    private func batchesPage(_ session: OperatorSessions.Session, _ request: Request) async throws -> (Int, String) {
        let book = try await receiver.book()
        let pages = max(1, (book.batches.count + Self.pageSize - 1) / Self.pageSize)
        let number = min(max(1, DocumentsQuery(request.uri.query).page), pages)
        let shown = book.batches.enumerated().reversed().dropFirst((number - 1) * Self.pageSize).prefix(Self.pageSize)
            .map { n, b in BatchRow(b, position: n + 1) }
        var content: [String: Any] = [
            "batches": shown, "paged": pages > 1, "page": number, "pages": pages, "total": book.batches.count
        ]
        if number > 1 { content["previous"] = "/ui/batches?page=\(number - 1)" }
        if number < pages { content["next"] = "/ui/batches?page=\(number + 1)" }
        return (200, frame("batches", title: "Batches", session, content))
    }

    private func documentPage(_ session: OperatorSessions.Session, id text: String) async throws -> (Int, String) {
        guard let id = DocumentID(hex: text), let (record, vault) = try await receiver.home.document(id) else {
            return (
                404,
                frame(
                    "problem", title: "No such document", session,
                    ["message": "This vault has no such document (it may have been removed)."])
            )
        }
        let m = record.metadata
        var content: [String: Any] = [
            "id": id.description, "contentType": m.contentType, "size": ByteSize.text(m.size),
            "sizeBytes": m.size, "sha256": Hex.encode(m.sha256)
        ]
        if !m.tags.isEmpty { content["tags"] = m.tags.joined(separator: ", ") }
        let book = try await receiver.book()
        let downloads = (book.downloads[id] ?? []).map {
            [
                "time": Shown.time(millis: $0.timeMillis), "operatorName": $0.operatorName, "address": $0.address,
                "via": $0.via == "archive" ? "in an archive of \($0.documents)" : "alone"
            ]
        }
        if !downloads.isEmpty { (content["downloaded"], content["downloads"]) = (true, downloads) }
        if let batch = book.batch(holding: id) {
            var received: [String: Any] = [
                "time": Shown.time(millis: batch.timeMillis), "station": batch.station, "key": batch.key
            ]
            if batch.sealed { received["sealed"] = true }
            if vault.holdsCaptured(id) {
                content["captured"] = true
                content["dataBytes"] = (try? vault.capturedDataLength(id)) ?? 0
            }
            if let i = batch.documents.firstIndex(where: { $0.id == id }), let ids = batch.stationIDs {
                received["stationID"] = ids[i].description
            }
            content["received"] = received
        }
        return (200, frame("document", title: m.name, session, content))
    }

    /// The document's plaintext as an attachment (`application/octet-stream` whatever its
    /// content type, so a browser never renders it), streamed batch by batch as each
    /// authenticates; a batch that does not authenticate cuts the response short of its
    /// `Content-Length`, so the browser marks the download failed.
    /// With `metadata`, a captured document's metadata age file (`ID.meta.age`), checked with its
    /// data file against the office's record first (404 for a document that did not come captured).
    private func download(
        _ request: Request, id text: String, from address: String, metadata: Bool = false
    ) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard let session = await signedIn(request) else { return Self.redirect("/ui/login") }
        guard let id = DocumentID(hex: text), let (record, vault) = try? await receiver.home.document(id) else {
            return Self.html(
                frame("problem", title: "No such document", session, ["message": "This vault has no such document."]),
                status: 404)
        }
        let file: OperatorView.File
        do {
            if metadata {
                guard vault.holdsCaptured(record.id) else {
                    let message = "This document did not come captured."
                    return Self.html(
                        frame("problem", title: "No sealed metadata", session, ["message": message]), status: 404)
                }
                let bytes = try vault.capturedMetadataFile(record.id)
                file = File(name: "\(record.id.hex).meta.age", size: UInt64(bytes.count)) {
                    var sent = false
                    return {
                        guard !sent else { return nil }
                        sent = true
                        return bytes.withUnsafeBytes { UnsafeRawBufferPointer($0) }
                    }
                }
            } else {
                file = try Self.file(record, in: vault)
            }
        } catch {
            let message = VaultError.from(error).message
            return Self.html(
                frame("problem", title: "Cannot read the document", session, ["message": message]), status: 503)
        }
        if let refused = await recorded([record], session, from: address, via: "document") { return refused }
        var headers = Self.headers(contentType: "application/octet-stream")
        headers[.contentDisposition] = Self.attachment(file.name)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: Int(file.size)) { writer in
                let next = try file.open()
                while let batch = try next() {
                    try await writer.write(ByteBuffer(bytes: batch))
                }
                try await writer.finish(nil)
            })
    }

    /// A document as it is downloaded: its plaintext under its name, or — one that came from a
    /// capture-only station, kept sealed — its data file as it is, an age file named `ID.age`,
    /// which the office's identity opens where it is kept.
    struct File: Sendable {
        var name: String
        var size: UInt64
        var open: @Sendable () throws -> () throws -> UnsafeRawBufferPointer?
    }

    static func file(_ record: DocumentRecord, in vault: Vault) throws -> File {
        let id = record.id
        guard vault.holdsCaptured(id) else {
            return File(name: record.metadata.name, size: record.metadata.size) { try vault.open(id).next }
        }
        return File(name: "\(id.hex).age", size: try vault.capturedDataLength(id)) { try vault.capturedData(id).next }
    }

    /// Records the download of `records` by the session's operator, or says why it cannot be
    /// (a page with status 503): no document leaves unrecorded.
    func recorded(
        _ records: [DocumentRecord], _ session: OperatorSessions.Session, from address: String, via: String
    ) async -> Response? {
        do {
            try await receiver.recordDownload(
                records.map(HistoryRecord.Document.init), by: session.operatorName, from: address, via: via)
            logger.info(
                "download",
                metadata: [
                    "operator": "\(session.operatorName)", "address": "\(address)", "documents": "\(records.count)",
                    "via": "\(via)"
                ])
            return nil
        } catch {
            let why = VaultError.from(error).message
            logger.error("download not recorded", metadata: ["operator": "\(session.operatorName)", "error": "\(why)"])
            let message = "The download could not be recorded in the office's history, so it was refused: " + why
            return Self.html(frame("problem", title: "Not downloaded", session, ["message": message]), status: 503)
        }
    }

    // MARK: Signing in and out

    /// `text` for a log line: printable ASCII but `\\` and `"` as it is, anything else as
    /// `\\u{HEX}`; at most 64 characters of it.
    static func escaped(_ text: String) -> String {
        var out = ""
        for u in text.unicodeScalars.prefix(64) {
            if u.value >= 0x21 && u.value < 0x7F && u != "\\" && u != "\"" {
                out.unicodeScalars.append(u)
            } else {
                out += "\\u{\(String(u.value, radix: 16))}"
            }
        }
        return out
    }

    private func loginPage(_ request: Request, message: String?, status: HTTPResponse.Status) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        if status == .ok, await signedIn(request) != nil { return Self.redirect("/ui/") }
        let csrf = OperatorSessions.randomToken()
        let noOperators = ((try? await accounts.names) ?? []).isEmpty
        var content: [String: Any] = ["csrf": csrf, "noOperators": noOperators]
        if let message { content["message"] = message }
        var response = Self.html(frame("login", title: "Sign in", nil, content), status: status.code)
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: csrf, maxAge: 3600, path: "/ui/login", secure: secure, httpOnly: true,
                sameSite: .strict))
        return response
    }

    private func login(_ request: Request, _ context: ReceiveContext) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard sameOrigin(request) else { return Self.forbidden() }
        // With no operator, nobody can sign in: the form is not read at all.
        guard !((try? await accounts.names) ?? []).isEmpty else {
            return await loginPage(request, message: nil, status: .notFound)
        }
        guard let form = await FormFields.read(request) else {
            return await loginPage(request, message: "The form could not be read.", status: .badRequest)
        }
        let cookie = request.cookies[Self.loginCookie]?.value ?? ""
        guard let csrf = form.text("csrf"), !cookie.isEmpty, OperatorSessions.same(csrf, cookie) else {
            return await loginPage(request, message: "The form expired: sign in again.", status: .forbidden)
        }
        guard let name = form.text("name"), let password = form.secret("password") else {
            return await loginPage(request, message: "Give a name and a password.", status: .badRequest)
        }
        // Argon2id takes 64 MiB and about 0.1 s: off Swift's cooperative threads, so that pages
        // and batches go on meanwhile and a third sign-in at once is refused, not queued.
        let accounts = self.accounts, address = context.address
        try? await accounts.refresh()
        let result = await withCheckedContinuation { done in
            DispatchQueue.global().async {
                done.resume(returning: accounts.signIn(name: name, password: password, from: address))
            }
        }
        // The name tried, escaped (anyone may type anything there) and cut; a failure is a warning.
        let metadata: Logger.Metadata = [
            "address": "\(address)", "operator": "\(Self.escaped(name))", "result": "\(Self.describe(result))"
        ]
        if case .signedIn = result {
            logger.info("sign-in", metadata: metadata)
        } else {
            logger.warning("sign-in", metadata: metadata)
        }
        switch result {
        case .signedIn(let name, let generation):
            let (token, _) = sessions.start(for: name, generation: generation)
            var response = Self.redirect("/ui/")
            response.setCookie(
                Cookie(
                    name: Self.sessionCookie, value: token, path: "/ui", secure: secure, httpOnly: true,
                    sameSite: .strict))
            response.setCookie(
                Cookie(
                    name: Self.loginCookie, value: "", maxAge: 0, path: "/ui/login", secure: secure, httpOnly: true,
                    sameSite: .strict))
            return response
        case .refused:
            return await loginPage(request, message: "Wrong name or password.", status: .unauthorized)
        case .tooManyFailures:
            var r = await loginPage(
                request, message: "Too many failed sign-ins: wait a minute.", status: .tooManyRequests
            )
            r.headers[.retryAfter] = "60"
            return r
        case .untrusted:
            return await loginPage(
                request, message: "The receiver's history does not verify: nobody signs in until it has been audited.",
                status: .serviceUnavailable)
        case .busy:
            var r = await loginPage(
                request, message: "The receiver is busy: try again in a moment.", status: .serviceUnavailable)
            r.headers[.retryAfter] = "1"
            return r
        }
    }

    private func logout(_ request: Request) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard sameOrigin(request) else { return Self.forbidden() }
        let token = request.cookies[Self.sessionCookie]?.value
        guard let session = sessions.session(token) else { return Self.redirect("/ui/login") }
        guard let form = await FormFields.read(request), let csrf = form.text("csrf"),
            OperatorSessions.same(csrf, session.csrf)
        else { return Self.forbidden() }
        sessions.end(token)
        logger.info("sign-out", metadata: ["operator": "\(session.operatorName)"])
        var response = Self.redirect("/ui/login")
        response.setCookie(
            Cookie(
                name: Self.sessionCookie, value: "", maxAge: 0, path: "/ui", secure: secure, httpOnly: true,
                sameSite: .strict))
        return response
    }

    // MARK: Responses

    /// What every answer of the view carries: no script, no framing, no caching, no sniffing.
    static func headers(contentType: String) -> HTTPFields {
        var h: HTTPFields = [.contentType: contentType, .cacheControl: "no-store"]
        h[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'"
        h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        h[HTTPField.Name("X-Frame-Options")!] = "DENY"
        // Not `no-referrer`: under it Chromium sends `Origin: null` with the forms' posts, which
        // ``sameOrigin(_:)`` must refuse. `same-origin` keeps the pages' addresses from other sites.
        h[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return h
    }

    static func html(_ body: String, status: Int) -> Response {
        Response(
            status: .init(code: status), headers: headers(contentType: "text/html; charset=utf-8"),
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func redirect(_ to: String) -> Response {
        var h = headers(contentType: "text/plain; charset=utf-8")
        h[.location] = to
        return Response(status: .seeOther, headers: h)
    }

    static func forbidden() -> Response {
        Response(
            status: .forbidden, headers: headers(contentType: "text/plain; charset=utf-8"),
            body: .init(byteBuffer: ByteBuffer(string: "refused: a form of this site, from this site, is needed\n")))
    }

    /// A `POST` from a page of another site is refused: its `Origin` (sent by every current
    /// browser with a form post) must be this receiver's scheme, host and port, `Sec-Fetch-Site`
    /// must not say cross-site, and the body must be a form. (SameSite=Strict keeps the session
    /// cookie off such requests anyway.)
    func sameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
            return false
        }
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingSpaces()
        guard type?.lowercased() == "application/x-www-form-urlencoded" else { return false }
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority, let url = URL(string: origin), let host = url.host,
            url.scheme == (secure ? "https" : "http")
        else { return false }
        let port = url.port.map { ":\($0)" } ?? ""
        return "\(host)\(port)".lowercased() == authority.lowercased()
            || "[\(host)]\(port)".lowercased() == authority.lowercased()
    }

    /// Whether the request's `Host` is an IP address, `localhost`, or one of ``hosts``.
    func knownHost(_ request: Request) -> Bool {
        guard let authority = request.head.authority else { return false }
        var host = Substring(authority)
        if host.first == "[" {
            guard let end = host.firstIndex(of: "]") else { return false }
            return host[host.index(after: host.startIndex)..<end].contains(":")
        }
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        let name = host.lowercased()
        if name == "localhost" || hosts.contains(where: { $0.lowercased() == name }) { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in UInt8(p).map { String($0) == p } ?? false }
    }

    /// The answer to a request for a host name this receiver was not told it has.
    static func misdirected() -> Response {
        Response(
            status: .init(code: 421), headers: headers(contentType: "text/plain; charset=utf-8"),
            body: .init(
                byteBuffer: ByteBuffer(
                    string: "refused: this receiver's pages are served only for its addresses "
                        + "and the host names it was given\n")))
    }

    static func describe(_ r: OperatorAccounts.SignIn) -> String {
        switch r {
        case .signedIn(let name, _): "signed in as \(name)"
        case .refused: "refused"
        case .untrusted: "refused: the history does not verify"
        case .tooManyFailures: "refused: too many failures"
        case .busy: "refused: busy"
        }
    }

    /// `attachment` with the name as ASCII (others replaced by `_`) and exactly (RFC 8187).
    static func attachment(_ name: String) -> String {
        let ascii = String(
            name.unicodeScalars.map { s -> Character in
                s.isASCII && (UInt8(s.value).isASCIIAlphanumeric || ".-_ ()".unicodeScalars.contains(s))
                    ? Character(s) : "_"
            })
        let exact = DocumentsQuery.encoded(name)
        return "attachment; filename=\"\(ascii.isEmpty ? "document" : ascii)\"; filename*=UTF-8''\(exact)"
    }
}

/// A station's row on the stations page.
struct StationRow {
    let name: String
    let lastSeen: String
    /// Its refusals in this run and the last one, when there were any.
    var refused: String? = nil
    let batches: Int
    let documents: Int
    let bytes: String
    let head: String
    let alerts: [AlertRow]
}

/// The use of a removed station's token, on the stations page.
struct RemovedTokenRow {
    let name: String
    let time: String
}

/// A rollback alert the history recorded for a station.
struct AlertRow {
    let time: String
    let reason: String
    let head: String
    let knownHead: String
}

/// A batch on the batches page.
struct BatchRow {
    let time: String
    let station: String
    let wire: String
    let key: String
    let count: String
    let bytes: String
    let signature: String
    /// Its place among the batches the office took (1 the first): its page's address.
    var position = 0
    /// Whether its documents came sealed (age files to the office's recipients).
    var sealed = false
    let documents: [DocumentRow]
}

/// A document of a batch.
struct DocumentRow {
    let id: String
    let name: String
    let size: String
    /// The id the station gave it (its receipt names it so), when the receipt could be read.
    var stationID: String? = nil
}

/// The fields of a small `application/x-www-form-urlencoded` body (at most 8 KiB), decoded
/// from bytes: the password is never a Swift `String` (it goes into ``SecretBytes``, and the
/// body and the decoded fields are wiped), which Hummingbird's `URLEncodedFormDecoder` cannot
/// offer.
final class FormFields {
    private var fields: [String: [UInt8]] = [:]

    private init() {}

    deinit {
        for key in Array(fields.keys) { Sodium.wipe(&fields[key]!) }
    }

    static func read(_ request: Request) async -> FormFields? {
        guard var buffer = try? await request.body.collect(upTo: 8 << 10) else { return nil }
        var bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        buffer.moveReaderIndex(to: 0)
        buffer.withUnsafeMutableReadableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        defer { Sodium.wipe(&bytes) }
        let form = FormFields()
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = decode(parts[0]).flatMap({ String(validating: $0, as: UTF8.self) }),
                let value = decode(parts.count > 1 ? parts[1] : [])
            else { return nil }
            form.fields[key] = value
        }
        return form
    }

    /// `+` as space and `%XX` as its byte; nil for a broken escape.
    static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            switch bytes[i] {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard i + 2 < bytes.endIndex, let hi = nibble(bytes[i + 1]), let lo = nibble(bytes[i + 2]) else {
                    return nil
                }
                out.append(hi << 4 | lo)
                i += 2
            default: out.append(bytes[i])
            }
            i += 1
        }
        return out
    }

    func text(_ name: String) -> String? {
        fields[name].flatMap { String(validating: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    func secret(_ name: String) -> SecretBytes? {
        guard let bytes = fields[name], !bytes.isEmpty else { return nil }
        return bytes.withUnsafeBytes { try? SecretBytes(copying: $0) }
    }
}

extension BatchRow {
    /// The row of a batch the office's records name.
    init(_ b: OfficeBook.Batch, position: Int) {
        self.position = position
        time = Shown.time(millis: b.timeMillis)
        (station, wire, key, sealed) = (b.station, b.wire, b.key, b.sealed)
        count = b.documents.count == 1 ? "1 document" : "\(b.documents.count) documents"
        bytes = ByteSize.text(b.bytes)
        signature = b.signature.count > 16 ? b.signature.prefix(16) + "…" : b.signature
        documents = b.documents.enumerated().map { i, d in
            DocumentRow(
                id: d.id.description, name: d.name.isEmpty ? d.id.description : d.name, size: ByteSize.text(d.size),
                stationID: b.stationIDs?[i].description)
        }
    }
}
