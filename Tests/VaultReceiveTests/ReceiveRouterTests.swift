import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import VaultCore
@testable import VaultReceive

/// The receiver's routes in process (Hummingbird's `app.test(.router)`): what a station, a
/// monitor and a browser get back, with no socket and no `vault receive` process. The binary's
/// own tests keep what only a process shows (exit codes, signals, TLS, timeouts).
@Suite struct ReceiveRouterTests {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("router-\(UUID().uuidString)").path
    let vault: Vault

    init() throws {
        vault = try VaultStore(root: dir).create(
            password: try Array("office password".utf8).withUnsafeBytes { try SecretBytes(copying: $0) }, kdf: .minimum)
    }

    /// Runs `body` against the routes of a receiver of the test's vault.
    func withRoutes(
        _ body: @escaping @Sendable (any TestClientProtocol, Receiver) async throws -> Void
    ) async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try Receiver(vault: vault, serving: false)
        var configuration = ReceiveServer.Configuration()
        configuration.port = 0
        let server = ReceiveServer(
            receiver: receiver, configuration: configuration, logger: Logger(label: "test"), onListening: { _ in })
        let app = Application(router: try await server.buildRouter())
        try await app.test(.router) { client in try await body(client, receiver) }
    }

    /// A one-document JSON payload of `text`, as a station sends it.
    static func payload(_ text: String, name: String) -> ByteBuffer {
        let bytes = Array(text.utf8)
        let sha = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        return ByteBuffer(
            string: #"{"Files":[{"Id":"\#(String(repeating: "ab", count: 16))","Name":"\#(name)","#
                + #""ContentType":"text/plain","Size":\#(bytes.count),"SHA256":"\#(sha)","#
                + #""Data":"\#(Data(bytes).base64EncodedString())"}]}"#)
    }

    /// A station's `POST /batches` of `body` with its token, under the idempotency key `k1`.
    static func post(
        _ body: ByteBuffer, token: String, to client: any TestClientProtocol
    ) async throws -> TestResponse {
        try await client.execute(
            uri: "/batches", method: .post,
            headers: [
                .contentType: "application/json", .authorization: "Bearer \(token)", .init("Idempotency-Key")!: "k1",
            ], body: body)
    }

    @Test func healthAndMetricsAnswerAMonitor() async throws {
        try await withRoutes { client, _ in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok && String(buffer: health.body) == #"{"status":"ok"}"#)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType] == "text/plain; version=0.0.4")
            #expect(String(buffer: metrics.body).contains("vault_receive_disk_full 0"))
        }
    }

    @Test func aBatchIsRefusedWithoutATokenAndStoredWithOne() async throws {
        try await withRoutes { client, receiver in
            let body = Self.payload("hello office", name: "note.txt")
            let stranger = try await client.execute(
                uri: "/batches", method: .post,
                headers: [.contentType: "application/json", .init("Idempotency-Key")!: "k1"], body: body)
            #expect(stranger.status == .unauthorized, "\(String(buffer: stranger.body))")
            #expect(String(buffer: stranger.body).contains(#""code":"#))
            let token = try await receiver.addStation("front-desk")
            let sent = try await Self.post(body, token: token, to: client)
            #expect(sent.status == .ok || sent.status == .created, "\(sent.status) \(String(buffer: sent.body))")
            let records = try vault.records().records
            #expect(records.map(\.metadata.name) == ["note.txt"])
            #expect(try vault.randomAccess(records[0].id).read(at: 0, count: 100) == Array("hello office".utf8))
            // The same key again: answered again, stored once.
            let again = try await Self.post(body, token: token, to: client)
            #expect(again.status == sent.status)
            #expect(try vault.records().records.count == 1)
        }
    }

    @Test func thePagesSendABrowserToSignInAndTusAnnouncesItself() async throws {
        try await withRoutes { client, _ in
            let page = try await client.execute(uri: "/ui", method: .get)
            #expect(page.status == .seeOther || page.status == .found, "\(page.status)")
            #expect(page.headers[.location] == "/ui/login")
            let tus = try await client.execute(uri: "/files", method: .options)
            #expect(tus.headers[.init("Tus-Version")!] == "1.0.0", "\(tus.headers)")
            // The address a person types leads to the pages, with or without the final slash.
            let root = try await client.execute(uri: "/", method: .get)
            #expect(root.status == .seeOther && root.headers[.location] == "/ui/", "\(root.status) \(root.headers)")
            let slash = try await client.execute(uri: "/ui/", method: .get)
            #expect(slash.headers[.location] == "/ui/login", "\(slash.status) \(slash.headers)")
            let unknown = try await client.execute(uri: "/nothing-here", method: .get)
            #expect(unknown.status == .notFound)
        }
    }
}
