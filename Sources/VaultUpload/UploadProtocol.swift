#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3

/// How batches go on the wire, each protocol with the options only it takes.
public enum UploadProtocol: Sendable {
    /// One request per batch, its body the JSON payload `{"Files":[…]}` (base64).
    case json
    /// One `multipart/form-data` request per batch: one file part per document (raw bytes).
    case form(FormOptions)
    /// tus 1.0 resumable uploads: one upload per batch (its JSON payload), sent in checksummed
    /// chunks that survive dropped connections and restarts.
    case tus(TusOptions)
    /// S3 objects: each batch's JSON payload as `PREFIX/<run>/batch-NNNN.json`, by multipart
    /// upload with `Content-MD5` on every part, resumable; the station holds the credentials.
    case s3(S3Target)
    /// The same objects through the back office's presign endpoint (the upload's URL,
    /// docs/UPLOAD.md), which hands out presigned part URLs: the station holds no S3 secret.
    case presignedS3(PresignOptions)

    /// The protocols by name, as commands and destination lists spell them.
    public enum Name: String, CaseIterable, Codable, Sendable {
        /// A JSON body per batch.
        case json
        /// A multipart form per batch.
        case form
        /// tus 1.0 resumable uploads.
        case tus
        /// S3 multipart uploads with the station's credentials.
        case s3
        /// S3 multipart uploads through the back office's presigned URLs.
        case presignedS3 = "presigned-s3"

        /// True for the protocols that send S3 objects (direct or presigned).
        public var sendsS3Objects: Bool { self == .s3 || self == .presignedS3 }
    }

    /// This protocol's name.
    public var name: Name {
        switch self {
        case .json: .json
        case .form: .form
        case .tus: .tus
        case .s3: .s3
        case .presignedS3: .presignedS3
        }
    }
}

/// A text field of a form upload, sent with every batch (`form`).
public struct FormField: Sendable, Equatable {
    /// The field's name.
    public var name: String
    /// Its value.
    public var value: String

    /// A field `name` with `value`.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// `form`: how the parts are named, and the text fields sent with every batch.
public struct FormOptions: Sendable {
    /// The file parts' field name.
    public var fieldName: String
    /// Text fields sent with every batch, in order.
    public var fields: [FormField]

    /// Options with the file parts named `fieldName` and `fields` sent with every batch.
    public init(fieldName: String = "files[]", fields: [FormField] = []) {
        self.fieldName = fieldName
        self.fields = fields
    }
}

/// `tus`: bytes per PATCH.
public struct TusOptions: Sendable {
    /// Bytes per PATCH (halved on 413, down to ``minimumChunkSize``).
    public var chunkSize: Int

    /// Options sending `chunkSize` bytes per PATCH (at least ``minimumChunkSize``).
    public init(chunkSize: Int = 4 << 20) { self.chunkSize = chunkSize }

    /// The smallest PATCH a 413 halves the chunk size down to.
    public static let minimumChunkSize = 256 << 10
}

/// Presigned S3: part size, and whether part URLs may be `http://` to a host that is not loopback.
public struct PresignOptions: Sendable {
    /// Bytes per part.
    public var partSize: UInt64
    /// Allow `http://` part URLs to hosts that are not loopback.
    public var insecureHTTP: Bool

    /// Options with parts of `partSize` bytes; `insecureHTTP` allows `http://` part URLs off loopback.
    public init(partSize: UInt64 = 8 << 20, insecureHTTP: Bool = false) {
        self.partSize = partSize
        self.insecureHTTP = insecureHTTP
    }
}

/// Where S3 uploads put batches, and with which credentials.
public struct S3Target: Sendable {
    /// The store (AWS's regional endpoint, or an S3-compatible one).
    public var endpoint: URL
    /// The region requests are signed for (`us-east-1` for most S3-compatible stores).
    public var region: String
    /// The access key and secret that sign requests (Signature Version 4).
    public var credentials: S3Credentials
    /// Virtual-hosted (`bucket.host`) or path-style (`host/bucket`) addressing.
    public var addressing: S3Addressing
    /// The bucket batches go to.
    public var bucket: String
    /// Key prefix without leading or trailing `/` (may be empty).
    public var prefix: String
    /// Bytes per part (at least 5 MiB; grown so that no batch needs over 10,000 parts).
    public var partSize: UInt64
    /// Parts in flight at once (each holds one part in memory).
    public var parallel: Int

    /// A target: `bucket` at `endpoint`, keys under `prefix`.
    public init(
        endpoint: URL, region: String, credentials: S3Credentials, addressing: S3Addressing, bucket: String,
        prefix: String,
        partSize: UInt64 = 8 << 20, parallel: Int = 2
    ) {
        self.endpoint = endpoint
        self.region = region
        self.credentials = credentials
        self.addressing = addressing
        self.bucket = bucket
        self.prefix = prefix.trimming("/")
        self.partSize = partSize
        self.parallel = max(1, parallel)
    }

    /// S3's smallest part (but the last).
    public static let minimumPartSize: UInt64 = 5 << 20
    /// S3's most parts per upload.
    public static let maximumParts: UInt64 = 10_000

    /// The part size for a payload of `length` bytes: `atLeast`, grown to whole MiB so that
    /// no payload needs more than 10,000 parts.
    static func partSize(for length: UInt64, atLeast: UInt64) -> UInt64 {
        let needed = (length + maximumParts - 1) / maximumParts
        let mib: UInt64 = 1 << 20
        return max(atLeast, (needed + mib - 1) / mib * mib)
    }

    /// The object key of batch `index` of run `run`.
    func key(run: String, index: Int) -> String {
        (prefix.isEmpty ? "" : prefix + "/") + "\(run)/" + ExportBatch.fileName(index: index)
    }

    /// `s3://BUCKET/PREFIX`: what the journal and messages call it (no credentials).
    public var name: String { "s3://\(bucket)/\(prefix)" }
}

extension DestinationEntry {
    /// The protocol the entry names, nil for the default of its URL (the list keeps the name
    /// as text, so lists stay readable by every version; a name no version makes is nil too).
    package var uploadProtocol: UploadProtocol.Name? { wire.flatMap(UploadProtocol.Name.init(rawValue:)) }
}
