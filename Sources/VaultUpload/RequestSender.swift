#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// `json` and `form`: one request per batch, its body produced while it is sent, with its exact
/// `Content-Length`, an `Idempotency-Key` and `X-Vault-Batch: i/n`. A document that fails
/// authentication aborts the request, so the server never gets a complete body holding it.
final class RequestSender: BatchSender, @unchecked Sendable {
    // @unchecked: immutable after init; the transport is Sendable.
    private let target: UploadTarget
    private let transport: any UploadTransport
    private let shape: PayloadShape
    private let form: FormOptions?

    init(target: UploadTarget, transport: any UploadTransport, shape: PayloadShape, form: FormOptions?) {
        (self.target, self.transport, self.shape, self.form) = (target, transport, shape, form)
    }

    /// JSON, or a form whose boundary is random for each request (40 hex digits from the
    /// system's generator, a fixed length so the body's length does not depend on it): nobody,
    /// not even a document's author, can know it in advance and put it in a document to inject
    /// a part.
    func format(batch: Int, of: Int) -> PayloadFormat {
        guard let form else { return .json(shape) }
        return .raw(
            FormBody(
                boundary: "vault-" + Hex.encode(SystemRandom().bytes(20)), fieldName: form.fieldName,
                fields: form.fields,
                batch: batch, of: of))
    }

    func attempt(_ a: BatchAttempt) async throws -> AttemptOutcome {
        let body = PayloadBody(producer: a.producer(), length: a.length, onSent: a.onSent)
        var headers: [(String, String)] =
            [
                ("Content-Type", a.format.contentType),
                ("Idempotency-Key", a.key),
                ("X-Vault-Batch", a.label)
            ] + a.logHead
        if let auth = target.authorization { headers.append(("Authorization", auth)) }
        headers += target.headers.map { ($0.name, $0.value) }
        let response: UploadResponse
        do {
            response = try await transport.send(body, method: target.method, headers: headers)
        } catch {
            if let f = body.failure { return .skip(f) }
            return try .of(error, timeout: target.idleTimeout)
        }
        a.answered(response.status)
        return .of(response, rejected: "the server rejected batch \(a.label)")
    }
}
