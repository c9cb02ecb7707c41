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
        // A page rendered through the view's library uses the scalar escaping.
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
        #expect(OperatorPages.sources.count == 7)
        for (name, text) in OperatorPages.sources {
            #expect(!text.contains("{{{") && !text.contains("{{&") && !text.contains("{{="), "\(name)")
        }
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
