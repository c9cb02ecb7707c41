#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// Checks that a destination taken from state (a journal) or from a server (a tus Location, an
/// S3 key, a presigned URL) stays within what the command line named, before a byte or a
/// credential goes there. Independent of the journal's seal: a server can be hostile too.
enum Destinations {
    /// Scheme, host and port (the default port of the scheme made explicit), lower-cased.
    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(),
              let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }

    /// True when `url` has the same origin as `target` (RFC 6454: scheme, host and port).
    static func sameOrigin(_ url: URL, as target: String) -> Bool {
        guard let a = origin(url),
              let t = URL(string: target),
              let b = origin(t) else { return false }
        return a == b
    }

    /// A tus upload URL from the journal: it must be on the upload URL's origin (the server's
    /// Location is checked the same way when the upload is created).
    static func checkTusJournalURL(_ url: String, target: String, batch: Int) throws -> String {
        guard let parsed = URL(string: url),
              sameOrigin(parsed, as: target) else {
            throw VaultError(
                .vaultDamaged,
                """
                    the upload journal gives batch \(batch) an upload URL on another origin than the upload's URL \
                    (\(URL(string: url).flatMap(origin) ?? "unparseable")); nothing was sent
                    """,
                remedy: .pruneUploadJournal)
        }
        return parsed.absoluteString
    }

    /// A run id as vault makes them (a lower-case UUID): nothing else goes into a key.
    static func checkRunID(_ run: String) throws {
        guard run.count == 36,
              run.allSatisfy({ $0.isHexDigit && !$0.isUppercase || $0 == "-" }),
              UUID(uuidString: run) != nil else {
            throw VaultError(
                .vaultDamaged, "the upload journal's run id is not one vault makes; nothing was sent",
                remedy: .pruneUploadJournal)
        }
    }

    /// The S3 key of batch `index`: the one vault makes under the prefix the command line named,
    /// whatever the journal says.
    static func checkS3Key(_ journaled: String?, expected: String, batch: Int) throws -> String {
        guard let journaled else { return expected }
        guard journaled == expected else {
            throw VaultError(
                .vaultDamaged,
                """
                    the upload journal gives batch \(batch) the key '\(journaled.prefix(200))', not '\(expected)' \
                    under the prefix the command names; nothing was sent
                    """,
                remedy: .pruneUploadJournal)
        }
        return journaled
    }

    /// The key a presign endpoint chose for a requested key: it must end with the requested
    /// `<run>/batch-NNNN.json` (the office may put a prefix before it, docs/UPLOAD.md) and hold
    /// no empty, `.` or `..` segment.
    static func checkPresignedKey(_ key: String, requested: String) throws {
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        guard key == requested || key.hasSuffix("/" + requested),
              !segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw VaultError(
                .uploadRejected,
                """
                    the presign endpoint chose the key '\(key.prefix(200))' for '\(requested)': it must end with it \
                    (the presign protocol in UPLOAD.md)
                    """
            )
        }
    }

    /// A presigned part URL must be for that part of that upload: its query names `partNumber`
    /// and `uploadId`, and its path ends with the key.
    static func checkPresignedPart(_ url: URLComponents, number: Int, uploadID: String, key: String) throws {
        let query = Dictionary(
            (url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        let path = url.path
        guard query["partNumber"] == String(number),
              query["uploadId"] == uploadID,
              path.hasSuffix("/" + key) else {
            throw VaultError(
                .uploadRejected,
                """
                    the presign endpoint gave part \(number) a URL that is not for that part of upload \
                    \(uploadID.prefix(16)) of '\(key.prefix(200))' (the presign protocol in UPLOAD.md); nothing was \
                    sent to it
                    """
            )
        }
    }
}

extension UploadOptions {
    /// The destination's identity (``DestinationIdentity``): for S3 through the endpoint and
    /// region of the options' own ``S3Target``, so that an app's run is recorded where the
    /// command line's is, with nothing set for the process; nil when the target is no destination.
    package var destinationIdentity: DestinationIdentity? {
        if case .s3(let t) = wire {
            return DestinationIdentity(
                url: target.address, s3: S3Place(endpoint: t.endpoint.absoluteString, region: t.region))
        }
        return DestinationIdentity(url: target.address)
    }

    /// The age recipients of the named destination whose identity is the target's (none if none).
    func destinationRecipients(in vault: Vault) throws -> [AgeRecipient] {
        guard let here = destinationIdentity?.value,
            let entry = try DestinationList.load(vault).destinations.first(where: { $0.identity == here })
        else { return [] }
        return try (entry.recipients ?? []).map { text in
            do { return try AgeRecipient(parsing: text) } catch {
                throw VaultError(.vaultDamaged, "destination '\(entry.name)' holds a recipient that is not valid")
            }
        }
    }

    /// The receipt key of the named destination whose identity is the target's, if any.
    func destinationReceiptKey(in vault: Vault) throws -> [UInt8]? {
        guard let here = destinationIdentity?.value,
            let hex = try DestinationList.load(vault).destinations.first(where: { $0.identity == here })?.receiptKey
        else { return nil }
        guard let key = Hex.decode(hex), key.count == SigningKey.publicKeySize else {
            throw VaultError(.vaultDamaged, "the destination's receipt key is not 64 hex digits")
        }
        return key
    }
}
