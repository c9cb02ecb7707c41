import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultS3
import VaultUpload

/// `vault upload`'s checks of its options, before anything is opened: which options belong to
/// which protocol, and what a URL and a header must look like.
extension VaultCommand.Upload {
    static let reserved = [
        "authorization", "content-length", "content-type", "idempotency-key", "x-vault-batch", "host",
        "transfer-encoding"
    ]

    func validate() throws {
        if retries < 0 { throw ValidationError("--retries cannot be negative.") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds.") }
        if ![.post, .put].contains(method) { throw ValidationError("--method must be POST or PUT.") }
        if resume && newRun { throw ValidationError("--resume and --new-run contradict each other.") }
        if resume && all { throw ValidationError("--resume and --all contradict each other.") }
        if to != nil {
            // The named destination's URL and protocol are checked once the vault names them.
            if urlOption != nil || presignURL != nil {
                throw ValidationError("Give --to or --url (--presign-url), not both.")
            }
            return
        }
        // Options that belong to one protocol.
        let s3: Set<UploadProtocol.Name> = [.s3, .presignedS3]
        let belonging: [(given: Bool, to: Set<UploadProtocol.Name>, message: String)] = [
            (field != "files[]" || !formFields.isEmpty, [.form], "--field and --form-field need --protocol form."),
            (chunkSize != nil, [.tus], "--chunk-size needs --protocol tus."),
            (partSize != nil, s3, "--part-size needs --protocol s3."),
            (parallel != nil, s3, "--parallel needs --protocol s3."),
            (presignURL != nil, s3, "--presign-url is for --protocol s3.")
        ]
        if let wrong = belonging.first(where: { $0.given && !$0.to.contains(wire) }) {
            throw ValidationError(wrong.message)
        }
        if (urlOption == nil) == (presignURL == nil) {
            throw ValidationError(
                presignURL == nil
                    ? "Give --url (or, for S3 through the back office, --presign-url)."
                    : "Give --url or --presign-url, not both.")
        }
        switch wire {
        case .json: try validateHTTP()
        case .form: try validateForm(); try validateHTTP()
        case .tus: try validateTus(); try validateHTTP()
        case .s3, .presignedS3: try validateS3()
        }
    }

    func validateForm() throws {
        if field.isEmpty { throw ValidationError("--field needs a name.") }
        for f in formFields where !f.contains("=") || f.hasPrefix("=") {
            throw ValidationError("--form-field must look like 'name=value', not '\(f)'.")
        }
        if formFields.contains(where: { $0.split(separator: "=", maxSplits: 1)[0] == "manifest" }) {
            throw ValidationError("--form-field cannot be named 'manifest': vault sends that part.")
        }
    }

    func validateTus() throws {
        if let c = chunkSize, c.value < 1024 || c.value > 1 << 30 {
            throw ValidationError("--chunk-size must be between 1K and 1G.")
        }
        if method != .post {
            throw ValidationError("--method does not apply to tus (it creates with POST and sends with PATCH).")
        }
    }

    func validateS3() throws {
        if let p = partSize, p.value < S3Target.minimumPartSize || p.value > 5 << 30 {
            throw ValidationError("--part-size must be between 5M and 5G (S3's part limits).")
        }
        if let p = parallel, p < 1 || p > 16 { throw ValidationError("--parallel must be between 1 and 16.") }
        guard wire == .s3 else { return try validateHTTP() }
        guard let c = URLComponents(string: url),
              c.scheme?.lowercased() == "s3",
              let bucket = c.host,
              !bucket.isEmpty else {
            throw ValidationError("--protocol s3 needs --url s3://BUCKET/PREFIX.")
        }
        if !headers.isEmpty || method != .post {
            throw ValidationError("--header and --method do not apply to s3.")
        }
    }

    /// The URL (or presign endpoint) and the headers of a protocol over HTTP.
    func validateHTTP() throws {
        if let why = Terminal.urlControlProblem(url) { throw ValidationError("--url cannot be used: \(why).") }
        guard let c = URLComponents(string: url),
              let scheme = c.scheme?.lowercased(),
              ["http", "https"].contains(scheme),
              let host = c.host,
              !host.isEmpty else {
            throw ValidationError(
                url.lowercased().hasPrefix("s3://")
                    ? "--url s3://… needs --protocol s3."
                    : """
                        --url must be an http:// or https:// URL with a host, or s3://BUCKET/PREFIX with \
                        --protocol s3.
                        """
            )
        }
        if c.user != nil || c.password != nil {
            throw ValidationError(
                "Put no credentials in --url; use VAULT_UPLOAD_TOKEN or VAULT_UPLOAD_USER/VAULT_UPLOAD_PASSWORD.")
        }
        for h in headers {
            let parts = h.split(separator: ":", maxSplits: 1)
            guard parts.count == 2,
                  !parts[0].trimmingSpaces().isEmpty,
                  parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                throw ValidationError("--header must look like 'Name: value', not '\(h)'.")
            }
            // A value the HTTP client would refuse, with its value in the error: refused here, unshown.
            if parts[1].unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                throw ValidationError("--header \(parts[0]): its value holds a control character.")
            }
            if Self.reserved.contains(parts[0].lowercased()) {
                throw ValidationError(
                    parts[0].lowercased() == "authorization"
                        ? """
                            Credentials never go on the command line; use VAULT_UPLOAD_TOKEN or \
                            VAULT_UPLOAD_USER/VAULT_UPLOAD_PASSWORD.
                            """
                        : "--header cannot set \(parts[0]); vault sets it.")
            }
        }
    }

    /// `s3://BUCKET/PREFIX`, the store and credentials from the standard AWS variables:
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (else
    /// `AWS_DEFAULT_REGION`, else us-east-1) and `AWS_ENDPOINT_URL` (an S3-compatible store,
    /// addressed path-style; without it AWS's regional endpoint, virtual-host style).
    static func s3Target(url: String, partSize: UInt64?, parallel: Int) throws -> S3Target {
        let c = URLComponents(string: url)!
        let s3 = try S3Environment.connection(
            purpose: "--protocol s3", hint: "or ask the back office for presigned URLs")
        return S3Target(
            endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, addressing: s3.addressing,
            bucket: c.host!,
            prefix: c.path, partSize: partSize ?? 8 << 20, parallel: parallel)
    }
}
