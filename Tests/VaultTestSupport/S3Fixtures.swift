import Foundation
import VaultS3

/// The shared SeaweedFS as the S3 tests use it: a station's environment for it, a client of
/// it, and a new bucket per test.
package enum S3Fixtures {
    package static func env(_ sw: SeaweedFS, secret: String = SeaweedFS.secretKey) -> [String: String?] {
        [
            "AWS_ACCESS_KEY_ID": SeaweedFS.accessKey, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_ENDPOINT_URL": sw.endpoint.absoluteString,
            "AWS_REGION": "us-east-1"
        ]
    }

    package static func client(_ sw: SeaweedFS) -> S3Client {
        // The shared store serves every test at once on two cores, so a whole-object read back can
        // wait long between bytes: the checks' client waits up to five minutes, not one.
        S3Client(
            endpoint: sw.endpoint, region: "us-east-1",
            credentials: S3Credentials(accessKeyID: SeaweedFS.accessKey, secretAccessKey: SeaweedFS.secretKey),
            timeout: 300)
    }

    /// The shared SeaweedFS, a client of it, and a new bucket named `prefix-<random>`.
    package static func freshBucket(_ prefix: String) async throws -> (SeaweedFS, S3Client, String) {
        let sw = try SeaweedFS.shared.get()
        let s3 = client(sw)
        let bucket = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        // The shared store serves every test at once; a connection it drops under that load is retried.
        for attempt in 1...4 {
            do {
                try await s3.createBucket(bucket)
                break
            } catch  where attempt < 4 {
                try await Task.sleep(nanoseconds: 500_000_000 << attempt)
                if (try? await s3.bucketExists(bucket)) == true { break }  // made, though the answer was lost
            }
        }
        return (sw, s3, bucket)
    }
}
