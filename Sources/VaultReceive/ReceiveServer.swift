#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HTTPTypes
import Logging
import NIOCore
import NIOSSL
import Prometheus
import ServiceLifecycle
import VaultCore

/// The request context: Hummingbird's, with the peer's address (failed logins are counted
/// per address).
package struct ReceiveContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The peer's IP address.
    package let address: String

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        address = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// The receiver's HTTP server (docs/RECEIVE.md): `POST /batches`, tus under `/files`,
/// `GET /healthz`, `GET /metrics`, and the operators' browser view under `/ui/`, over
/// HTTP/1.1, with TLS when given a certificate.
///
/// Hummingbird 2 (on SwiftNIO): its request body is an asynchronous sequence of buffers as they
/// arrive, so a batch is read, checked and encrypted as it comes and never held; it gives idle
/// timeouts, bounded headers, TLS (swift-nio-ssl) and a graceful shutdown that lets requests
/// in flight finish. SwiftNIO alone would mean writing the HTTP/1 server pipeline, the body
/// back-pressure and the shutdown by hand.
public struct ReceiveServer: Service {
    /// Where and how to listen.
    public struct Configuration: Sendable {
        /// The host to bind (`127.0.0.1` unless given).
        public var host = "127.0.0.1"
        /// The port (0: one the system picks).
        public var port = 8080
        /// A PEM certificate chain file, to serve TLS (with ``tlsKey``).
        public var tlsCertificate: String?
        /// The PEM private key file of ``tlsCertificate``.
        public var tlsKey: String?
        /// A connection that sends or reads nothing this long is closed (a stalled body), as is
        /// one whose request head takes longer (slow headers); a body must arrive at the
        /// receiver's minimum rate once this long has passed.
        public var idleTimeout: TimeInterval = 30
        /// Most connections open at once.
        public var maxConnections = 256
        /// A tus upload no request touched this long is dropped.
        public var uploadExpiry: TimeInterval = 3600
        /// Host names the operators' pages (`/ui/`) may be asked for, besides IP addresses and
        /// `localhost`: a request whose `Host` is another name is refused (421), so a site that
        /// points its own name at this receiver (DNS rebinding) reaches none of them.
        public var operatorHosts: [String] = []
        /// What `/metrics` says this binary is (`vault_build_info`'s `version` label).
        package var version = ""
        /// The TLS pair read and checked already, to be read again on demand (else one is read
        /// from ``tlsCertificate`` and ``tlsKey`` when the server starts).
        package var tlsIdentity: TLSIdentity?
        /// A bearer token `/metrics` asks for (nil: none).
        package var metricsToken: String?

        /// The defaults: `127.0.0.1:8080`, no TLS, 30 s, 256 connections, 3600 s.
        public init() {}
    }

    private let receiver: Receiver
    private let configuration: Configuration
    private let logger: Logger
    private let metrics: ReceiveMetrics
    private let onListening: @Sendable (String) -> Void

    /// A server for `receiver`.
    /// - Parameters:
    ///   - receiver: what it serves.
    ///   - configuration: where and how it listens.
    ///   - logger: one line per request (station, protocol, batch, documents, bytes, result, time).
    ///   - onListening: called once with the address listened on (`http://127.0.0.1:41234`).
    public init(
        receiver: Receiver, configuration: Configuration, logger: Logger,
        onListening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.receiver = receiver
        self.configuration = configuration
        self.logger = logger
        self.onListening = onListening
        metrics = ReceiveMetrics(version: configuration.version)
    }

    /// Serves until the task is cancelled or its `ServiceGroup` shuts down gracefully; then it
    /// takes no new connections, refuses new batches (503) and lets those in flight finish.
    public func run() async throws {
        let onListening = self.onListening
        let router = try await buildRouter()
        let (server, scheme) = try buildServer()
        let receiver = self.receiver
        var quiet = logger
        quiet.logLevel = .warning
        let host = configuration.host
        let app = Application(
            router: router, server: server,
            configuration: .init(
                address: .hostname(host, port: configuration.port), serverName: "vault",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shown = host.contains(":") ? "[\(host)]" : host
                onListening("\(scheme)://\(shown):\(port)")
            },
            logger: quiet)
        do {
            try await withGracefulShutdownHandler {
                try await app.run()
            } onGracefulShutdown: {
                receiver.close()
            }
        } catch let e as IOError
            where [Errno.addressInUse, .addressNotAvailable, .permissionDenied].contains(Errno(rawValue: e.errnoCode))
        {
            throw listenError(Errno(rawValue: e.errnoCode))
        }
    }

    /// The routes (as Hummingbird's examples build theirs): health and metrics, batches, tus,
    /// and the operator's pages.
    func buildRouter() async throws -> Router<ReceiveContext> {
        let router = Router(context: ReceiveContext.self)
        let receiver = self.receiver
        let metrics = self.metrics
        let logger = self.logger
        router.get("/healthz") { _, _ in
            // Degraded (503) while the receiver cannot store batches: a load balancer sends the
            // stations to another receiver, a monitor wakes someone.
            if let reason = receiver.degraded {
                return Response(
                    status: .serviceUnavailable, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"status":"degraded","reason":"\#(reason)"}"#)))
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        let metricsToken = configuration.metricsToken
        router.get("/metrics") { request, _ in
            if let metricsToken {
                // The scheme in any case (RFC 9110), the token exactly.
                let given = request.headers[.authorization] ?? ""
                let scheme = given.prefix(7).lowercased(), token = String(given.dropFirst(7))
                guard scheme == "bearer ", OperatorSessions.same(token, metricsToken) else {
                    return Response(
                        status: .unauthorized,
                        headers: [.contentType: "text/plain; charset=utf-8", .wwwAuthenticate: "Bearer"],
                        body: .init(byteBuffer: ByteBuffer(string: "refused: /metrics needs its bearer token\n")))
                }
            }
            metrics.diskFull(receiver.degraded == "disk-full")
            await metrics.refresh(receiver)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
        router.post("/batches") { request, context in
            await BatchHandler(receiver: receiver, metrics: metrics, logger: logger).handle(request, context)
        }
        let tus = TusHandler(
            tus: TusReceiver(receiver: receiver, expiry: configuration.uploadExpiry), receiver: receiver,
            metrics: metrics, logger: logger)
        // Hummingbird routes "/files/" here too.
        router.on("/files", method: .options) { _, _ in tus.respond(tus.tus.options()) }
        router.post("/files") { request, context in await tus.create(request, context) }
        router.head("/files/:id") { request, context in await tus.head(request, context) }
        router.patch("/files/:id") { request, context in await tus.patch(request, context) }
        router.delete("/files/:id") { request, context in await tus.delete(request, context) }
        // A person who types the receiver's address lands on the operator's pages.
        router.get("/") { _, _ in Response(status: .seeOther, headers: [.location: "/ui/"]) }
        // The operators are the office's, in whichever home it is kept: every receiver of a store
        // serves the pages (an operator's session is this receiver's only).
        OperatorView(
            receiver: receiver, accounts: try await OperatorAccounts(home: receiver.home), sessions: OperatorSessions(),
            secure: configuration.tlsCertificate != nil, hosts: configuration.operatorHosts, logger: logger
        ).register(on: router)
        return router
    }

    /// The HTTP/1.1 server, bounded in time and header size, behind TLS when a certificate is
    /// configured; and its URL scheme.
    func buildServer() throws -> (HTTPServerBuilder, String) {
        let headTimeout = TimeAmount.milliseconds(Int64(configuration.idleTimeout * 1000))
        let http = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [
                    // A sign-in form or a page arrives whole in 10 s (a browser sends it at once).
                    RequestDeadline(
                        timeout: headTimeout,
                        smallRequest: .milliseconds(Int64(min(10, configuration.idleTimeout) * 1000)))
                ],
                idleTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000)),
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 64 << 10, maxHeaderFieldCount: 100)))
        let server: HTTPServerBuilder
        let scheme: String
        if let identity = try configuration.tlsIdentity
            ?? configuration.tlsCertificate.flatMap({ cert in
                try configuration.tlsKey.map { try TLSIdentity(certificate: cert, key: $0) }
            })
        {
            server = try .tls(http, tlsConfiguration: identity.configuration)
            scheme = "https"
        } else {
            server = http
            scheme = "http"
        }
        return (server, scheme)
    }

    /// Why the server cannot listen where it was asked to, in words for the operator.
    func listenError(_ errno: Errno) -> VaultError {
        let host = configuration.host
        let address = host.contains(":") ? "[\(host)]:\(configuration.port)" : "\(host):\(configuration.port)"
        switch errno {
        case .addressInUse:
            return VaultError(
                .busy, "cannot listen on \(address): another process listens there",
                hint: "choose another port (port 0 picks a free one), or stop the other server")
        case .permissionDenied:
            return VaultError(.usage, "cannot listen on \(address): a port under 1024 needs privileges")
        default:
            return VaultError(.usage, "cannot listen on \(address): no interface of this machine has that address")
        }
    }
}

/// The counters `/metrics` shows (Prometheus text format).
final class ReceiveMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()

    static func counter(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "vault", subsystem: "receive", metricName: name, unitName: "total", helpText: help)
    }
    // Computed: the descriptor type is not Sendable, so it is made where it is used.
    static var batches: MetricNameDescriptor {
        counter("batches", "Batches taken, by station, protocol and whether they came sealed.")
    }
    static var documents: MetricNameDescriptor { counter("documents", "Documents taken, by station.") }
    static var bytes: MetricNameDescriptor { counter("bytes", "Payload bytes taken, by station.") }
    static var refusals: MetricNameDescriptor { counter("refusals", "Requests refused, by station and reason.") }
    static func gauge(_ name: String, _ help: String, unit: String? = nil) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "vault", subsystem: "receive", metricName: name, unitName: unit, helpText: help)
    }
    static var lastBatch: MetricNameDescriptor {
        gauge(
            "last_batch_timestamp", "When each station's last batch was taken (Unix seconds; 0: never).",
            unit: "seconds")
    }
    // Made at once, so that they are there (0) before the first batch.
    private let diskFullGauge: Gauge
    private let diskFree: Gauge
    private let inFlight: Gauge
    private let alertsOpen: Gauge
    private let downloads: Gauge
    let latency: DurationHistogram

    init(version: String = "") {
        diskFullGauge = registry.makeGauge(
            descriptor: Self.gauge(
                "disk_full", "1 while batches find the receiver's disk or quota full (answered 507), else 0."))
        diskFullGauge.set(Int64(0))
        diskFree = registry.makeGauge(
            descriptor: Self.gauge("disk_free", "Free space of the vault's disk (a store: -1).", unit: "bytes"))
        inFlight = registry.makeGauge(
            descriptor: Self.gauge("batches_in_flight", "Batches being received now (bodies and tus uploads)."))
        alertsOpen = registry.makeGauge(
            descriptor: Self.gauge(
                "alerts_open", "Alerts (rollbacks, forks, removed tokens, refusals) not acknowledged."))
        downloads = registry.makeGauge(
            descriptor: Self.gauge("downloads", "Downloads by operators the office's records hold.", unit: "total"))
        latency = registry.makeDurationHistogram(
            descriptor: Self.gauge("request_duration", "Time to answer a batch request.", unit: "seconds"),
            buckets: [.milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300)])
        for gauge in [diskFree, inFlight, alertsOpen, downloads] { gauge.set(Int64(0)) }
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "vault", metricName: "build_info", helpText: "This receiver's version (the value is 1)."),
            labels: [("version", version.isEmpty ? "unknown" : version)]
        ).set(Int64(1))
    }

    func diskFull(_ full: Bool) { diskFullGauge.set(Int64(full ? 1 : 0)) }

    /// What `/metrics` reads at each scrape: the receiver's state and its office's records, so
    /// every station's series is there (0) before its first batch.
    func refresh(_ receiver: Receiver) async {
        inFlight.set(Int64(receiver.batchesInFlight))
        let folder = receiver.home as? FolderHome
        diskFree.set(folder.flatMap { FileSystem.freeSpace(at: $0.vault.store.root) }.map { Int64($0) } ?? -1)
        guard let book = try? await receiver.book() else { return }
        alertsOpen.set(Int64(book.openNotices.count))
        downloads.set(Int64(book.downloadCount))
        for s in book.stations.values {
            registry.makeGauge(descriptor: Self.lastBatch, labels: [("station", s.name)])
                .set(Double(s.lastBatchMillis ?? 0) / 1000)
            registry.makeCounter(descriptor: Self.documents, labels: [("station", s.name)]).increment(by: Int64(0))
            registry.makeCounter(descriptor: Self.bytes, labels: [("station", s.name)]).increment(by: Int64(0))
            for wire in ["json", "form", "tus"] {
                registry.makeCounter(
                    descriptor: Self.batches, labels: [("station", s.name), ("wire", wire), ("sealed", "false")]
                ).increment(by: Int64(0))
            }
        }
        // Requests no token identified: there from the start, as a monitor's alert on them needs.
        registry.makeCounter(descriptor: Self.refusals, labels: [("station", "-"), ("reason", "unauthorized")])
            .increment(by: Int64(0))
    }

    func batch(station: String, wire: String, sealed: Bool, documents: Int, bytes: UInt64) {
        registry.makeCounter(
            descriptor: Self.batches, labels: [("station", station), ("wire", wire), ("sealed", String(sealed))]
        ).increment()
        registry.makeCounter(descriptor: Self.documents, labels: [("station", station)])
            .increment(by: Int64(documents))
        registry.makeCounter(descriptor: Self.bytes, labels: [("station", station)]).increment(by: Int64(bytes))
    }

    func refusal(station: String, reason: String) {
        registry.makeCounter(descriptor: Self.refusals, labels: [("station", station), ("reason", reason)]).increment()
    }
}

/// One `POST /batches`.
struct BatchHandler: Sendable {
    let receiver: Receiver
    let metrics: ReceiveMetrics
    let logger: Logger

    func handle(_ request: Request, _ context: ReceiveContext) async -> Response {
        let clock = ContinuousClock.now
        defer { metrics.latency.record(ContinuousClock.now - clock) }
        let started = Date()
        var station = "-"
        var wire = "-"
        let key = request.headers[.init("Idempotency-Key")!]
        let answer: Receiver.Answer
        do {
            station = try await receiver.authenticate(request.headers[.authorization], from: context.address)
            let length = request.headers[.contentLength].flatMap { UInt64($0) }
            let intake = try await receiver.begin(
                station: station, key: key, head: request.headers[.init("X-Vault-Log-Head")!],
                contentType: request.headers[.contentType], contentLength: length)
            wire = intake.wire
            do {
                for try await buffer in request.body {
                    try buffer.withUnsafeReadableBytes { piece in try intake.read(piece) }
                    // The work on a piece is synchronous (decode, hash, encrypt, write): without a
                    // yield, a body whose pieces are already buffered keeps its thread to the end,
                    // and the other connections' bodies stall until their idle timeout.
                    await Task.yield()
                }
            } catch let r as Refusal {
                throw r
            } catch {
                throw Refusal(400, "body-unreadable", "the body could not be read: \(error)")
            }
            answer = try await intake.finish()
            if !answer.duplicate {
                metrics.batch(
                    station: station, wire: wire, sealed: answer.sealed, documents: answer.documents,
                    bytes: answer.bytes)
            }
        } catch let r as Refusal {
            // A refusal before the token was taken (`station` is still "-") is no station's.
            if station != "-" { await receiver.refused(station: station, code: r.code, status: r.status) }
            if Receiver.countsAsFailure(r.code) { receiver.countFailure(from: context.address) }
            metrics.refusal(station: station, reason: r.code)
            if r.status == 507 {
                receiver.noteDiskFull()
                metrics.diskFull(true)
            }
            log(
                station: station, wire: wire, key: key, result: "\(r.status) \(r.code)", documents: 0, bytes: 0,
                sealed: nil, started, level: r.status >= 500 ? .error : .warning, detail: r.detail)
            var headers: HTTPFields = [.contentType: "application/json"]
            if let after = r.retryAfter { headers[.retryAfter] = String(after) }
            // A refused body is not read further: the connection is closed after the answer (a
            // client without a token cannot make the receiver read an endless body).
            headers[.connection] = "close"
            return Response(
                status: .init(code: r.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: r.body)))
        } catch {
            return Response(status: .internalServerError)
        }
        log(
            station: station, wire: wire, key: key, result: answer.duplicate ? "200 duplicate" : "200",
            documents: answer.documents, bytes: answer.bytes, sealed: answer.sealed, started)
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// One line per batch request: a refusal at warning level, a server's own failure at error.
    private func log(
        station: String, wire: String, key: String?, result: String, documents: Int, bytes: UInt64, sealed: Bool?,
        _ started: Date, level: Logger.Level = .info, detail: String? = nil
    ) {
        var metadata: Logger.Metadata = [
            "station": .string(station), "protocol": .string(wire),
            // What a client sent is logged only when it is a key a batch may have.
            "batch": .string(key.map { Receiver.isBatchKey($0) ? String($0.prefix(80)) : "(invalid)" } ?? "-"),
            "documents": .stringConvertible(documents), "bytes": .stringConvertible(bytes),
            "result": .string(result),
            "ms": .stringConvertible(Int(Date().timeIntervalSince(started) * 1000))
        ]
        if let sealed { metadata["sealed"] = .stringConvertible(sealed) }
        // What the answer does not say, in the receiver's own words (a full disk names the
        // folder; a removed station's token names the station).
        if let detail { metadata["detail"] = .string(detail) }
        logger.log(level: level, "batch", metadata: metadata)
    }
}

/// The tus endpoint's requests (``TusReceiver``), authenticated as batches are.
struct TusHandler: Sendable {
    let tus: TusReceiver
    let receiver: Receiver
    let metrics: ReceiveMetrics
    let logger: Logger

    func respond(_ a: TusReceiver.Answer) -> Response {
        var headers: HTTPFields = [HTTPField.Name("Tus-Resumable")!: "1.0.0"]
        if a.status >= 400 { headers[.connection] = "close" }
        for (k, v) in a.headers { if let name = HTTPField.Name(k) { headers[name] = v } }
        return Response(
            status: .init(code: a.status), headers: headers,
            body: a.body.isEmpty ? .init() : .init(byteBuffer: ByteBuffer(bytes: a.body)))
    }

    /// The station, or the answer to give instead: 412 for another tus version, 401/429.
    private func station(_ request: Request, _ context: ReceiveContext) async -> Result<String, TusReceiver.Answer> {
        guard request.headers[HTTPField.Name("Tus-Resumable")!] == "1.0.0" else {
            var a = TusReceiver.Answer(Refusal(412, "tus-version", "this server speaks tus 1.0.0"))
            a.headers.append(("Tus-Version", "1.0.0"))
            return .failure(a)
        }
        do {
            return .success(try await receiver.authenticate(request.headers[.authorization], from: context.address))
        } catch {
            let refusal = Refusal.of(error, document: nil)
            metrics.refusal(station: "-", reason: refusal.code)
            return .failure(TusReceiver.Answer(refusal))
        }
    }

    /// One line per tus request: a refusal at warning level, a server's own failure at error.
    private func log(_ what: String, station: String, id: String?, _ a: TusReceiver.Answer, _ started: Date) {
        var metadata: Logger.Metadata = [
            "station": .string(station), "protocol": "tus", "request": .string(what),
            "upload": .string(id ?? "-"), "documents": .stringConvertible(a.documents),
            "bytes": .stringConvertible(a.bytes), "result": .stringConvertible(a.status),
            "ms": .stringConvertible(Int(Date().timeIntervalSince(started) * 1000))
        ]
        if a.documents > 0 { metadata["sealed"] = .stringConvertible(a.sealed) }
        let level: Logger.Level = a.status >= 500 ? .error : a.status >= 400 && a.status != 404 ? .warning : .info
        logger.log(level: level, "tus", metadata: metadata)
    }

    func create(_ request: Request, _ context: ReceiveContext) async -> Response {
        let started = Date()
        switch await station(request, context) {
        case .failure(let a):
            log("POST", station: "-", id: nil, a, started)
            return respond(a)
        case .success(let station):
            let a = await tus.create(
                station: station, key: request.headers[HTTPField.Name("Idempotency-Key")!],
                head: request.headers[HTTPField.Name("X-Vault-Log-Head")!],
                length: request.headers[HTTPField.Name("Upload-Length")!],
                deferLength: request.headers[HTTPField.Name("Upload-Defer-Length")!] != nil)
            if a.status >= 400 { metrics.refusal(station: station, reason: "tus-\(a.status)") }
            if a.status == 409 { receiver.countFailure(from: context.address) }
            log("POST", station: station, id: nil, a, started)
            return respond(a)
        }
    }

    func head(_ request: Request, _ context: ReceiveContext) async -> Response {
        switch await station(request, context) {
        case .failure(let a): return respond(a)
        case .success(let station): return respond(tus.head(context.parameters.get("id") ?? "", station: station))
        }
    }

    func delete(_ request: Request, _ context: ReceiveContext) async -> Response {
        let started = Date()
        switch await station(request, context) {
        case .failure(let a): return respond(a)
        case .success(let station):
            let id = context.parameters.get("id") ?? ""
            let a = tus.terminate(id, station: station)
            log("DELETE", station: station, id: id, a, started)
            return respond(a)
        }
    }

    func patch(_ request: Request, _ context: ReceiveContext) async -> Response {
        let started = Date()
        let id = context.parameters.get("id") ?? ""
        switch await station(request, context) {
        case .failure(let a):
            log("PATCH", station: "-", id: id, a, started)
            return respond(a)
        case .success(let station):
            let begun = tus.begin(
                id, station: station, offset: request.headers[HTTPField.Name("Upload-Offset")!],
                contentType: request.headers[.contentType],
                checksum: request.headers[HTTPField.Name("Upload-Checksum")!])
            let patch: TusReceiver.Patch
            switch begun {
            case .failure(let a):
                log("PATCH", station: station, id: id, a, started)
                var r = respond(a)
                r.headers[.connection] = "close"
                return r
            case .success(let p): patch = p
            }
            do {
                for try await buffer in request.body {
                    buffer.withUnsafeReadableBytes { tus.take(patch, $0) }
                    // Refused (past Upload-Length, a chunk that cannot be kept): the rest of the
                    // body is not read, and the connection closes after the answer.
                    if patch.isRefused { break }
                    await Task.yield()  // as for a batch's body: every connection gets its turn
                }
            } catch {
                // The connection broke mid-chunk: what arrived counts (the offset says how much).
            }
            let a = await tus.end(patch)
            if a.status == 507 {
                receiver.noteDiskFull()
                metrics.diskFull(true)
            }
            if a.documents > 0 {
                metrics.batch(station: station, wire: "tus", sealed: a.sealed, documents: a.documents, bytes: a.bytes)
            } else if a.status >= 400 {
                metrics.refusal(station: station, reason: "tus-\(a.status)")
            }
            log("PATCH", station: station, id: id, a, started)
            return respond(a)
        }
    }
}
