#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// A refusal the receiver answers with: an HTTP status and a JSON error
/// `{"error":{"code","message","document"?}}` (docs/RECEIVE.md).
package struct Refusal: Error, Sendable, Equatable {
    /// The HTTP status (4xx, or 503 while shutting down or full).
    package var status: Int
    /// A stable code (`digest-mismatch`, `unauthorized`, `too-large`, ...).
    package var code: String
    /// What was wrong, in words.
    package var message: String
    /// The document concerned (from 1), when one is.
    package var document: Int?
    /// Seconds to wait before trying again (429, 503, 507).
    package var retryAfter: Int?
    /// For the receiver's log only: what went wrong in its own words (paths of its folder),
    /// which the answer does not carry.
    package var detail: String?

    package init(_ status: Int, _ code: String, _ message: String, document: Int? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.document = document
        self.retryAfter = retryAfter
    }

    /// The answer while the receiver's disk (or quota) is full: 507 Insufficient Storage, try
    /// again in a minute.
    package static func diskFull(_ detail: String) -> Refusal {
        var r = Refusal(
            507, "disk-full", "the back office is out of space: nothing of this batch was kept; send it again later",
            retryAfter: 60)
        r.detail = detail
        return r
    }

    /// The JSON body.
    package var body: [UInt8] {
        var o = Array(#"{"error":{"code":"#.utf8) + JSONString.quoted(code)
        if let document { o += Array(#","document":\#(document)"#.utf8) }
        o += Array(#","message":"#.utf8) + JSONString.quoted(message) + Array("}}".utf8)
        return o
    }

    /// The refusal for an error met while reading or storing a batch.
    static func of(_ error: any Error, document: Int?) -> Refusal {
        if let r = error as? Refusal { return r }
        let e = VaultError.from(error)
        if e.isNoSpace { return .diskFull(e.message) }
        switch e.code {
        case .headerMalformed, .truncated, .trailingData, .digestMismatch:
            return Refusal(400, e.code.rawValue, e.message, document: document)
        case .tooManyDocuments:
            return Refusal(413, e.code.rawValue, e.message, document: document.map { $0 + 1 })
        case .usage:
            return Refusal(415, "unsupported-media-type", e.message)
        case .wrongPassword:
            return Refusal(422, "not-sealed-to-this-receiver", e.message, document: document)
        case .headerAuthenticationFailed, .chunkAuthenticationFailed:
            return Refusal(400, e.code.rawValue, e.message, document: document)
        case .storeUnavailable:
            // A store that serves receivers together failed or did not answer: sending again helps.
            return Refusal(503, "store-unavailable", "the receiver's store did not answer; send again", retryAfter: 5)
        default:
            // The details (paths of the receiver's folder) stay in its log, not in the answer.
            var r = Refusal(500, "internal", "the receiver could not store the batch (\(e.code))")
            r.detail = e.message
            return r
        }
    }
}
