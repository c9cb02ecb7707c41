// Family `upload`: what servers answer an upload — statuses, `Retry-After`, tus's
// `Upload-Offset` and `Location`, the presign endpoint's JSON, error bodies. A real Uploader
// sends a scratch vault's two documents through a transport that answers each request with the
// next part of the input (`STATUS\nName: value\n…\n\nbody`); when the parts run out the
// connection drops. The first byte picks the protocol (JSON, form, tus, presigned S3), or (4)
// feeds the input to the `Retry-After` parser alone. Properties:
//  - the upload ends: an error or a summary, within a bounded number of requests;
//  - nothing goes anywhere the user did not name: every request of the JSON, form and tus
//    protocols is to the target's origin (a tus Location elsewhere is refused), and the
//    credentials only ever go to the target's origin (never to a presigned part URL);
//  - nothing goes over http:// off loopback;
//  - every wait is finite, not negative and at most the policy's `Retry-After` cap;
//  - errors are VaultErrors.
import Foundation
import NIOCore
import NIOHTTP1
import VaultCore
import VaultS3
@preconcurrency import VaultUpload

enum UploadFamily {
    static let sandbox = ScratchVault()
    static let target = "http://127.0.0.1:9/in"
    static let secret = "fuzz-secret-token"
    static let maxAnswers = 16
    /// Enough for every answer plus every retry after the answers ran out, with room to spare.
    static let maxRequests = maxAnswers + 200

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = bytes.dropFirst()
        let wire: UploadProtocol
        switch mode % 5 {
        case 0: wire = .json
        case 1: wire = .form(FormOptions())
        case 2: wire = .tus(TusOptions(chunkSize: 1024))
        case 3: wire = .presignedS3(PresignOptions())
        default:
            if let s = RetryPolicy.parseRetryAfter(
                String(decoding: rest, as: UTF8.self), now: Date(timeIntervalSince1970: 1_700_000_000))
            {
                expect(s.isFinite && s >= 0, "Retry-After gave a wait of \(s)")
            }
            return
        }
        let transport = FuzzTransport(answers: parts(rest, limit: maxAnswers), presign: mode % 5 == 3)
        var options = UploadOptions(
            target: UploadTarget(address: target, authorization: "Bearer " + secret)!, wire: wire)
        let waits = Waits()
        options.policy = RetryPolicy(retries: 2, baseDelay: 0.001, maxDelay: 0.01, maxRetryAfter: 30)
        options.policy.clock = RetryPolicy.Clock(sleep: { waits.add($0) }, sleepBlocking: { waits.add($0) })
        let (vault, _) = sandbox.fresh()
        let records = sandbox.records
        let chosen = options
        waitFor {
            do {
                let uploader = try Uploader(
                    vault: vault, records: records, options: chosen, transport: transport, onEvent: { _ in })
                _ = try await uploader.run()
            } catch is VaultError {
            } catch {
                preconditionFailure("property violated: the upload ended with a non-VaultError: \(error)")
            }
        }
        expect(waits.all.allSatisfy { $0.isFinite && $0 >= 0 && $0 <= 30 }, "a wait of \(waits.all) seconds")
    }
}

final class Waits: @unchecked Sendable {
    // @unchecked: the uploader waits from one task at a time.
    private(set) var all: [Double] = []
    func add(_ s: Double) { all.append(s) }
}

struct Dropped: Error, CustomStringConvertible { var description: String { "connection reset by peer" } }

/// Answers each request with the next scripted answer, checking where it goes and what it carries.
final class FuzzTransport: UploadTransport, @unchecked Sendable {
    // @unchecked: the uploader makes one request at a time.
    private var answers: [[UInt8]]
    private let presign: Bool
    /// The answer once the scripted ones ran out (nil: the connection drops).
    private let always: UploadResponse?
    private var requests = 0

    init(answers: [[UInt8]], presign: Bool, always: UploadResponse? = nil) {
        self.answers = answers
        self.presign = presign
        self.always = always
    }

    func request(
        _ method: RequestMethod, url: String?, headers: [(String, String)], body: RequestBody?
    ) async throws -> UploadResponse {
        requests += 1
        expect(requests <= UploadFamily.maxRequests, "the upload does not end: \(requests) requests")
        let to = url ?? UploadFamily.target
        let c = URLComponents(string: to)
        let sameOrigin = c?.scheme == "http" && c?.host == "127.0.0.1" && c?.port == 9
        let carriesSecret = headers.contains { $0.1.contains(UploadFamily.secret) } || to.contains(UploadFamily.secret)
        expect(presign || sameOrigin, "a request to \(to), which the user did not name")
        expect(!carriesSecret || sameOrigin, "the credentials went to \(to)")
        if c?.scheme?.lowercased() == "http" {
            expect(
                ["127.0.0.1", "localhost", "::1", "[::1]"].contains(c?.host ?? ""), "documents over http:// to \(to)")
        }
        if case .stream(let b) = body { for try await _ in b {} }  // the server reads the whole body
        guard !answers.isEmpty else { if let always { return always }; throw Dropped() }
        return Self.response(answers.removeFirst())
    }

    func shutdown() async {}

    /// `STATUS\nName: value\n…\n\nbody` (a status that does not parse is a 200).
    static func response(_ bytes: [UInt8]) -> UploadResponse {
        let text = String(decoding: bytes, as: UTF8.self)
        let (head, body) =
            text.range(of: "\n\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) } ?? (
                text, ""
            )
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let status = Int(lines.first?.prefix(3) ?? "") ?? 200
        if !lines.isEmpty { lines.removeFirst() }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            )
        }
        let retryAfter = headers.first { $0.0.lowercased() == "retry-after" }?.1
        return UploadResponse(
            status: status, reason: "fuzz", retryAfter: retryAfter, body: body, headers: HTTPHeaders(headers))
    }
}
