import Hummingbird
import VaultCore

/// The alerts page: what an operator is to see (a station's history rolled back or forked, a
/// removed station's token used, a refusal recorded), each open until an operator acknowledges
/// it; an acknowledgement is a sealed record of the office's history, naming the operator.
extension OperatorView {
    /// Acknowledged alerts the page lists (the newest).
    static let acknowledgedShown = 50

    func registerAlerts(on router: Router<ReceiveContext>) {
        router.get("/ui/alerts") { request, _ in await page(request) { try await alertsPage($0) } }
        router.post("/ui/alerts/acknowledge") { request, _ in await acknowledge(request) }
    }

    private func alertsPage(_ session: OperatorSessions.Session) async throws -> (Int, String) {
        let book = try await receiver.book()
        func row(_ n: OfficeBook.Notice) -> [String: Any] {
            var row: [String: Any] = [
                "number": n.number, "time": Shown.time(millis: n.timeMillis), "station": n.station, "kind": n.kind,
                "detail": n.detail
            ]
            if let by = n.acknowledgedBy { (row["by"], row["when"]) = (by, Shown.time(millis: n.acknowledged)) }
            return row
        }
        let open = book.openNotices.reversed().map(row)
        let done = book.notices.filter { $0.acknowledged != nil }
            .sorted { ($0.acknowledged ?? 0) > ($1.acknowledged ?? 0) }.prefix(Self.acknowledgedShown).map(row)
        return (
            200,
            frame(
                "alerts", title: "Alerts", session,
                ["open": open, "acknowledged": done, "anyAcknowledged": !done.isEmpty])
        )
    }

    /// `POST /ui/alerts/acknowledge` (`csrf`, `alert`): records the acknowledgement, then back
    /// to the alerts page.
    private func acknowledge(_ request: Request) async -> Response {
        guard knownHost(request) else { return Self.misdirected() }
        guard sameOrigin(request) else { return Self.forbidden() }
        guard let session = await signedIn(request) else { return Self.redirect("/ui/login") }
        guard let form = await FormFields.read(request), let csrf = form.text("csrf"),
            OperatorSessions.same(csrf, session.csrf)
        else { return Self.forbidden() }
        guard let number = form.text("alert").flatMap(Int.init) else {
            return Self.html(
                frame("problem", title: "No such alert", session, ["message": "Say which alert."]), status: 400)
        }
        do {
            try await receiver.acknowledge(alert: number, by: session.operatorName)
            logger.info("alert acknowledged", metadata: ["operator": "\(session.operatorName)", "alert": "\(number)"])
        } catch let e as VaultError where e.code == .notFound {
            return Self.html(
                frame("problem", title: "No such alert", session, ["message": "The office has no such alert."]),
                status: 404)
        } catch {
            let why = VaultError.from(error).message
            return Self.html(
                frame("problem", title: "Not acknowledged", session, ["message": "It could not be recorded: " + why]),
                status: 503)
        }
        return Self.redirect("/ui/alerts")
    }
}
