#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// What an upload is asked to do.
public struct UploadOptions: Sendable {
    /// Where batches go: the URL (for S3 its `s3://BUCKET/PREFIX` name; presigned, the presign
    /// endpoint), method, headers, credentials and timeout.
    public var target: UploadTarget
    /// How batches go on the wire, with the protocol's own options.
    public var wire: UploadProtocol
    /// Batch limits.
    public var limits = BatchLimits()
    /// Payload shape.
    public var shape = PayloadShape.objects
    /// Cut damaged documents out and go on, instead of stopping.
    public var skipBad = false
    /// Retries and backoff.
    public var policy = RetryPolicy()
    /// Allow `http://` to a host that is not a loopback literal, where documents cross the network
    /// in the clear. Credentials are never sent that way, allowed or not.
    public var allowsCleartext = false
    /// The Ed25519 public key (32 bytes) of a receiver that signs receipts (`vault receive`): a
    /// batch counts as delivered only with a receipt it signed for exactly the batch's documents,
    /// and the receipt is kept in the history. Nil: the key of the destination with this URL, if
    /// it has one; else a 2xx confirms.
    public var receiptKey: [UInt8]?
    /// Seal every document and its metadata to these age recipients (docs/UPLOAD.md, "Sealed
    /// delivery"); none: plaintext payloads.
    package var recipients: [AgeRecipient] = []

    /// Options for `target`, sent by `wire`.
    public init(target: UploadTarget, wire: UploadProtocol = .json) {
        self.target = target
        self.wire = wire
    }

    /// What the wire format depends on besides the documents, for the job id: the JSON shape
    /// alone (so journals of earlier versions still resume), or the protocol's settings.
    /// The settings a run was started with, by name (`batchSize`, `maxBytes`, `shape`,
    /// `method`, `protocol`, `field`, `formFields`, `partSize`): what a later command is told
    /// when it does not match.
    public var settings: [String: String] {
        var out = [
            "batchSize": String(limits.documents), "maxBytes": limits.bytes.map(String.init) ?? "none",
            "shape": shape.rawValue, "method": target.method.rawValue
        ]
        out["protocol"] = wire.name.rawValue
        switch wire {
        case .form(let f):
            out["field"] = f.fieldName
            out["formFields"] = f.fields.map { "\($0.name)=…" }.joined(separator: ",")
        case .s3(let t):
            out["partSize"] = String(t.partSize)
        case .json, .tus, .presignedS3:
            break
        }
        return out
    }

    /// The cleartext rule, the one place it is decided: documents go over plain `http://` only
    /// to a loopback host, unless ``allowsCleartext``; credentials never. Returns true when
    /// documents will cross a network unencrypted (allowed: the caller may say so).
    /// - Throws: `VaultError.Code.usage` (remedy `VaultError.Remedy.useHTTPS`
    ///   or `VaultError.Remedy.dropCredentials`) when the rule refuses.
    public func checkCleartext() throws -> Bool {
        guard target.isCleartextOverNetwork else { return false }
        let host = URLComponents(string: target.address)?.host ?? target.redacted
        guard allowsCleartext else {
            throw VaultError(
                .usage, "refusing to send documents unencrypted over http:// to \(host)", remedy: .useHTTPS)
        }
        if target.authorization != nil {
            throw VaultError(
                .usage, "refusing to send credentials unencrypted over http:// to \(host)", remedy: .dropCredentials)
        }
        return true
    }

    /// What the wire format depends on, for the job id: the recipients too when sealed (so a
    /// journal of a plain run never resumes as a sealed one), else as earlier versions had it.
    var wireDescription: String {
        plainWireDescription
            + (recipients.isEmpty ? "" : "\nsealed\n" + recipients.map(\.description).joined(separator: "\n"))
    }

    private var plainWireDescription: String {
        switch wire {
        case .json: shape.rawValue
        case .form(let f): "form\n\(f.fieldName)\n" + f.fields.map { "\($0.name)=\($0.value)" }.joined(separator: "\n")
        case .tus: "tus\n" + shape.rawValue
        case .s3(let t): "s3\n" + shape.rawValue + "\n\(t.partSize)"
        case .presignedS3: "s3\n" + shape.rawValue + "\n0"
        }
    }
}
