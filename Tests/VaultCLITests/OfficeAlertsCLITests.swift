import Foundation
import Testing
import VaultTestSupport

/// Alerts an operator sees and closes, and `/metrics` as a monitor reads it from the start
/// (issue 60, points 4 and 6).
@Suite(.blocking) struct OfficeAlertsCLITests {
    @Test func anAlertIsListedCountedAndClosedByAnOperatorsAcknowledgement() throws {
        let s = Sandbox()
        let office = try ReceiverProcess(s)
        office.addOperator()
        _ = office.addStation("front-desk")
        // Every series is there before anything happened.
        let before = office.curl(token: nil, [office.url + "/metrics"]).body
        for line in [
            "vault_receive_alerts_open 0", "vault_receive_batches_in_flight 0", #"vault_build_info{version=""#,
            #"vault_receive_last_batch_timestamp_seconds{station="front-desk"} 0"#,
            #"vault_receive_documents_total{station="front-desk"} 0"#, "vault_receive_request_duration_seconds_bucket",
            "vault_receive_downloads_total 0",
            #"vault_receive_batches_total{station="front-desk",wire="json",sealed="false"} 0"#,
            #"vault_receive_refusals_total{station="-",reason="unauthorized"} 0"#
        ] {
            #expect(before.contains(line), "\(line) in \(before)")
        }
        let free = before.split(separator: "\n").first { $0.hasPrefix("vault_receive_disk_free_bytes ") }
        #expect((free?.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0, "\(before)")
        // A removed station's token used: an alert; the page lists it, the metric counts it.
        let old = office.addStation("old-scanner")
        #expect(office.run("receive", "station", "remove", "old-scanner").status == 0)
        #expect(office.curl(token: old, ["-X", "POST", "--data-binary", "{}", office.url + "/batches"]).status == 401)
        #expect(office.curl(token: nil, [office.url + "/metrics"]).body.contains("vault_receive_alerts_open 1"))
        let (status, session) = OperatorViewCLITests.signIn(s, office.url)
        #expect(status == 303)
        let cookie = "vault_session=\(try #require(session))"
        let page = Fixtures.curl(s, ["-b", cookie, office.url + "/ui/alerts"])
        #expect(page.status == 200)
        #expect(page.body.contains("the token of removed station old-scanner was used; it was refused"), "\(page.body)")
        let field = try #require(page.body.range(of: #"name="alert" value=""#))
        let number = String(page.body[field.upperBound...].prefix { $0 != "\"" })
        let csrf = try #require(
            page.body.range(of: #"name="csrf" value=""#).map { String(page.body[$0.upperBound...].prefix(64)) })
        // Without the session's token, or from another site: refused, still open.
        let forged = Fixtures.curl(
            s, ["-b", cookie, "--data", "csrf=x&alert=\(number)", office.url + "/ui/alerts/acknowledge"])
        #expect(forged.status == 403)
        let crossSite = Fixtures.curl(
            s,
            [
                "-b", cookie, "-H", "Origin: http://evil.example", "--data", "csrf=\(csrf)&alert=\(number)",
                office.url + "/ui/alerts/acknowledge"
            ])
        #expect(crossSite.status == 403)
        let ack = Fixtures.curl(
            s,
            [
                "-b", cookie, "-H", "Origin: \(office.url)", "--data", "csrf=\(csrf)&alert=\(number)",
                office.url + "/ui/alerts/acknowledge"
            ])
        #expect(ack.status == 303 && ack.headers["location"] == "/ui/alerts", "\(ack.body)")
        let after = Fixtures.curl(s, ["-b", cookie, office.url + "/ui/alerts"])
        #expect(after.body.contains("No open alerts."))
        #expect(after.body.contains("acknowledged by alice"))
        #expect(office.curl(token: nil, [office.url + "/metrics"]).body.contains("vault_receive_alerts_open 0"))
        let unknown = Fixtures.curl(
            s,
            [
                "-b", cookie, "-H", "Origin: \(office.url)", "--data", "csrf=\(csrf)&alert=9999",
                office.url + "/ui/alerts/acknowledge"
            ])
        #expect(unknown.status == 404)
        // The acknowledgement is a record of the history, naming the operator.
        let log = office.run("log", "--json")
        #expect(log.out.contains(#"\"action\":\"acknowledge\""#), "\(log.out)")
        #expect(log.out.contains(#"\"by\":\"alice\""#))
        #expect(office.run("log").out.contains("alice acknowledged alert \(number) of station old-scanner"))
    }
}
