#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3
import VaultUpload

/// The S3 store and credentials from the standard AWS variables, for `upload --protocol s3`
/// and remote vaults: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_REGION` (else `AWS_DEFAULT_REGION`, else us-east-1) and `AWS_ENDPOINT_URL_S3` or
/// `AWS_ENDPOINT_URL` (an S3-compatible store, addressed path-style; without it AWS's
/// regional endpoint, virtual-host style). The secrets were taken out of the environment at
/// start-up (``EnvironmentSecrets``) and never reach argv, logs or messages.
enum S3Environment {
    struct Connection {
        var endpoint: URL
        var region: String
        var credentials: S3Credentials
        var addressing: S3Addressing

        /// A client for this store.
        func client(timeout: Double = 60) -> S3Client {
            S3Client(
                endpoint: endpoint, region: region, credentials: credentials, addressing: addressing, timeout: timeout)
        }
    }

    /// - Parameters:
    ///   - purpose: what needs the credentials, for the message when they are missing.
    /// The endpoint and region `s3://` destinations are reached through (what ``connection(purpose:hint:)``
    /// would use), without the credentials: part of such a destination's identity.
    static func place() -> S3Place {
        let region =
            [environment("AWS_REGION"), environment("AWS_DEFAULT_REGION")].compactMap { $0 }.first { !$0.isEmpty }
            ?? "us-east-1"
        let custom = environment("AWS_ENDPOINT_URL_S3") ?? environment("AWS_ENDPOINT_URL")
        return S3Place(
            endpoint: custom.flatMap { $0.isEmpty ? nil : $0 } ?? "https://s3.\(region).amazonaws.com", region: region)
    }

    static func connection(purpose: String, hint: String? = nil) throws -> Connection {
        func text(_ s: SecretBytes) -> String { s.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        guard let id = environment("AWS_ACCESS_KEY_ID"),
              !id.isEmpty,
              let secret = EnvironmentSecrets.value("AWS_SECRET_ACCESS_KEY"),
              secret.count > 0 else {
            throw VaultError(.usage, "\(purpose) needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", hint: hint)
        }
        let region =
            [environment("AWS_REGION"), environment("AWS_DEFAULT_REGION")].compactMap { $0 }.first { !$0.isEmpty }
            ?? "us-east-1"
        let credentials = S3Credentials(
            accessKeyID: id, secretAccessKey: text(secret),
            sessionToken: EnvironmentSecrets.value("AWS_SESSION_TOKEN").map(text))
        var endpoint = URL(string: "https://s3.\(region).amazonaws.com")!
        var addressing = S3Addressing.virtualHost
        if let custom = environment("AWS_ENDPOINT_URL_S3") ?? environment("AWS_ENDPOINT_URL"), !custom.isEmpty {
            guard let u = URL(string: custom),
                  let scheme = u.scheme?.lowercased(),
                  ["http", "https"].contains(scheme),
                  u.host != nil else {
                throw VaultError(.usage, "AWS_ENDPOINT_URL must be an http:// or https:// URL, not '\(custom)'")
            }
            if scheme == "http" && !UploadTarget.isLoopback(host: u.host!) {
                throw VaultError(
                    .usage, "refusing to send signed requests unencrypted over http:// to \(u.host!)",
                    hint: "use an https:// endpoint")
            }
            endpoint = u
            addressing = .path
        }
        return Connection(endpoint: endpoint, region: region, credentials: credentials, addressing: addressing)
    }
}
