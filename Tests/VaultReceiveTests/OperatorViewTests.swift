import Foundation
import Mustache
import Testing
@testable import VaultReceive

/// The browser view's templates and escaping, and its sessions, without a server.
@Suite struct OperatorViewTests {
    @Test func everyValueIsEscapedByScalarWhereMustachesOwnEscapingMissesAQuoteWithAMark() throws {
        // A quote and a combining mark are one Character (grapheme cluster); written apart here,
        // as #expect's expansion would otherwise read them as one.
        let mark = "\u{301}", quote = "\"", rlo = "\u{202E}"
        let name = "a" + quote + mark + " onmouseover=alert(1) x='" + mark + "<b>&" + rlo + "\u{7}"
        let escaped = ScalarHTMLEscaping().escapeText(name)
        let expected = "a&quot;" + mark + " onmouseover=alert(1) x=&#39;" + mark + "&lt;b&gt;&amp;\u{FFFD}\u{FFFD}"
        #expect(escaped == expected)
        // The library's default HTML escaping, on the same name, leaves the quote as it is: the
        // reason for ScalarHTMLEscaping (if this ever escapes it, the library was fixed).
        let plain = try MustacheTemplate(string: "<a title=\"{{name}}\">").render(["name": name])
        let unescaped = "a" + quote + mark + " onmouseover"
        #expect(plain.contains(unescaped))
        // A page rendered through the view's templates uses the scalar escaping.
        let html = OperatorPages.render(
            [
                "title": name, "signedIn": true, "operatorName": "op" + quote + mark, "csrf": "c",
                "batches": [
                    BatchRow(
                        time: "t", station: "s", wire: "json", key: "k" + quote + mark, count: "1 document",
                        bytes: "1 B", signature: "sig", documents: [DocumentRow(id: "00", name: name, size: "1 B")])
                ]
            ], "batches")
        let quoteWithMark = quote + mark, escapedName = "a&quot;" + mark + " onmouseover"
        #expect(!html.contains(quoteWithMark) && !html.contains("<b>") && !html.unicodeScalars.contains("\u{202E}"))
        #expect(html.contains(escapedName) && html.contains("value=\"c\""))
    }

    @Test func theTemplatesNeverOutputAValueUnescaped() {
        #expect(OperatorPages.sources.count == 11)
        for (name, text) in OperatorPages.sources {
            #expect(!text.contains("{{{") && !text.contains("{{&") && !text.contains("{{="), "\(name)")
        }
    }

    /// Every page the view renders, in each of its states, is byte for byte what swift-mustache
    /// (which rendered the pages before PageTemplate) writes from the same templates and models.
    @Test func everyPageIsWhatSwiftMustacheRendersByteForByte() throws {
        MustacheContentTypes.register(MustacheScalarEscaping(), named: "VaultScalarHTML")
        var templates: [String: MustacheTemplate] = [:]
        for (name, text) in OperatorPages.sources {
            templates[name] = try MustacheTemplate(string: "{{% CONTENT_TYPE: VaultScalarHTML }}" + text)
        }
        let library = MustacheLibrary(templates: templates)
        let hostile = "a\"\u{301} <b>&'\u{202E}"
        let frame: [String: Any] = ["title": "T " + hostile, "signedIn": true, "operatorName": "op", "csrf": "c1"]
        let signedOut: [String: Any] = ["title": "Sign in", "signedIn": false, "operatorName": "", "csrf": "c2"]
        let alert = AlertRow(time: "2026-11-26 09:05:03 UTC", reason: "head behind", head: "h1", knownHead: "h2")
        let station = StationRow(
            name: "front-desk", lastSeen: "never", batches: 3, documents: 7, bytes: "1.5 MiB", head: "abc",
            alerts: [alert, alert])
        let quiet = StationRow(
            name: "scanner-2", lastSeen: "now", batches: 0, documents: 0, bytes: "0 B", head: "", alerts: [])
        let batch = BatchRow(
            time: "t", station: "front-desk", wire: "json", key: "k", count: "2 documents", bytes: "2 B",
            signature: "sig",
            documents: [
                DocumentRow(id: "00", name: hostile, size: "1 B"), DocumentRow(id: "01", name: "b", size: "1 B")
            ])
        let received: [String: Any] = ["time": "t", "station": "front-desk", "key": "k"]
        let documents = Self.documentsPage(hostile)
        let pages: [(String, [String: Any])] = [
            ("login", signedOut),
            ("login", signedOut.merging(["message": "wrong " + hostile, "noOperators": true]) { $1 }),
            ("stations", frame.merging(["stations": [StationRow]()]) { $1 }),
            ("stations", frame.merging(["stations": [station, quiet]]) { $1 }),
            ("batches", frame.merging(["batches": [BatchRow]()]) { $1 }),
            ("batches", frame.merging(["batches": [batch, batch], "more": true, "shown": 2, "total": 9]) { $1 }),
            (
                "document",
                frame.merging([
                    "id": "00", "contentType": "application/pdf", "size": "1 B", "sizeBytes": 1, "sha256": "ff",
                    "tags": "x, y", "received": received
                ]) { $1 }
            ),
            (
                "document",
                frame.merging([
                    "id": "00", "contentType": "text/plain", "size": "1 B", "sizeBytes": 1, "sha256": "ff"
                ]) { $1 }
            ),
            ("problem", frame.merging(["message": "gone " + hostile]) { $1 }),
            (
                "batches",
                frame.merging([
                    "batches": [batch], "archive": "/ui/archive?batch=1", "paged": true, "page": 2, "pages": 3,
                    "total": 120, "previous": "/ui/batches", "next": "/ui/batches?page=3"
                ]) { $1 }
            ),
            ("documents", frame.merging(documents) { $1 }),
            ("alerts", frame.merging(["open": [[String: Any]](), "acknowledged": [[String: Any]]()]) { $1 }),
            (
                "alerts",
                frame.merging([
                    "open": [["number": 7, "time": "t", "station": hostile, "kind": "forked", "detail": hostile]],
                    "acknowledged": [["time": "t", "station": "s", "detail": "d", "by": hostile, "when": "w"]],
                    "anyAcknowledged": true
                ]) { $1 }
            ),
            ("documents", frame.merging(documents.merging(["documents": [[String: Any]]()]) { $1 }) { $1 }),
            (
                "station",
                frame.merging([
                    "station": station, "documents": "/ui/documents?station=front-desk",
                    "batches": [["n": 3, "time": "t", "count": "2 documents", "bytes": "2 B"] as [String: Any]]
                ]) { $1 }
            )
        ]
        for (name, context) in pages {
            let ours = OperatorPages.render(context, name)
            let theirs = try #require(library.render(context, withTemplate: name))
            #expect(
                Array(ours.utf8) == Array(theirs.utf8), "\(name): \(ours.debugDescription) \(theirs.debugDescription)")
            #expect(ours.contains("<main>") && ours.contains("</html>"), "\(name)")
        }
    }

    /// The documents page's model with a hostile name in its search field and a row.
    static func documentsPage(_ hostile: String) -> [String: Any] {
        let row: [String: Any] = [
            "id": "00", "name": hostile, "size": "1 B", "station": "front-desk", "received": "t", "batch": 2
        ]
        return [
            "q": hostile, "tag": "", "from": "2026-11-01", "to": "",
            "stationOptions": [["name": "front-desk", "selected": true], ["name": "b", "selected": false]],
            "sealedOptions": [["value": "", "label": "either", "selected": true]],
            "documents": [
                row.merging(["type": "application/pdf", "present": true, "sealed": true]) { $1 }, row
            ],
            "count": "2 documents", "page": 1, "pages": 2, "archive": "/ui/archive?q=a%22",
            "next": "/ui/documents?page=2", "first": "/ui/documents", "last": "/ui/documents?page=2"
        ]
    }

    @Test func sessionsEndAtSignOutWhenIdleAfterTheirLifetimeAndWithTheirOperator() {
        let sessions = OperatorSessions()
        let start = Date(timeIntervalSince1970: 1_000_000)
        let (token, session) = sessions.start(for: "alice", now: start)
        #expect(token.count == 64 && session.csrf.count == 64 && token != session.csrf)
        #expect(sessions.session(token, now: start + 60)?.operatorName == "alice")
        #expect(sessions.session(String(token.reversed()), now: start + 60) == nil)
        #expect(sessions.session(token, now: start + 60 + OperatorSessions.idle) == nil)
        // Used every 20 minutes, it still ends after its lifetime.
        let (kept, _) = sessions.start(for: "bob", now: start)
        var t = start
        while t < start + OperatorSessions.lifetime - 1200 {
            t += 1200
            #expect(sessions.session(kept, now: t) != nil)
        }
        #expect(sessions.session(kept, now: start + OperatorSessions.lifetime) == nil)
        let (a, _) = sessions.start(for: "carol", now: start)
        let (b, _) = sessions.start(for: "dave", now: start)
        sessions.end(a)
        sessions.end(operator: "dave")
        #expect(sessions.session(a, now: start) == nil && sessions.session(b, now: start) == nil)
    }
}

/// ScalarHTMLEscaping as swift-mustache's content type, for the comparison above.
struct MustacheScalarEscaping: MustacheContentType {
    func escapeText(_ text: String) -> String { ScalarHTMLEscaping().escapeText(text) }
}
