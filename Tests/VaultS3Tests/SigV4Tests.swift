import Foundation
import Testing
@testable import VaultS3

/// The SigV4 signer against AWS's published S3 examples and against botocore's signer.
@Suite struct SigV4Tests {
    /// The credentials and clock of AWS's examples ("Signature Calculations in AWS Signature
    /// Version 4", S3 API reference): examplebucket, us-east-1, 2013-05-24T00:00:00Z.
    static let example = SigV4(
        credentials: S3Credentials(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    static let exampleDate = Date(timeIntervalSince1970: 1_369_353_600)
    static let host = "examplebucket.s3.amazonaws.com"

    static func signature(_ r: S3Request) -> String? {
        r.headers.first { $0.0 == "Authorization" }?.1.components(separatedBy: "Signature=").last
    }

    @Test func awsExampleGetObjectWithRange() {
        let r = Self.example.sign(
            S3Request(method: "GET", host: Self.host, path: "/test.txt", headers: [("Range", "bytes=0-9")]),
            payload: .empty, date: Self.exampleDate)
        // AWS's example writes the parts with "," and botocore (as vault) with ", "; S3 takes both.
        #expect(
            r.headers.first { $0.0 == "Authorization" }?.1.replacingOccurrences(of: ", ", with: ",")
                == """
                    AWS4-HMAC-SHA256 \
                    Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
                    SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
                    Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41
                    """
        )
    }

    @Test func awsExamplePutObject() {
        let r = Self.example.sign(
            S3Request(
                method: "PUT", host: Self.host, path: "/test$file.text",
                headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")]),
            payload: .hashing(Array("Welcome to Amazon S3.".utf8)), date: Self.exampleDate)
        #expect(
            r.headers.first { $0.0 == "x-amz-content-sha256" }?.1
                == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        #expect(Self.signature(r) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func awsExampleGetBucketLifecycleAndListObjects() {
        let lifecycle = Self.example.sign(
            S3Request(method: "GET", host: Self.host, path: "/", query: [("lifecycle", "")]),
            payload: .empty, date: Self.exampleDate)
        #expect(Self.signature(lifecycle) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        let list = Self.example.sign(
            S3Request(method: "GET", host: Self.host, path: "/", query: [("prefix", "J"), ("max-keys", "2")]),
            payload: .empty, date: Self.exampleDate)
        #expect(Self.signature(list) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func awsExamplePresignedGet() {
        let url = Self.example.presign(
            S3Request(method: "GET", host: Self.host, path: "/test.txt"), expires: 86_400, date: Self.exampleDate)
        #expect(
            url
                == """
                    https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&\
                    X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&\
                    X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&\
                    X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404
                    """
        )
    }

    @Test func addressingPutsTheBucketInThePathOrTheHost() throws {
        let endpoint = try #require(URL(string: "http://127.0.0.1:8333"))
        let path = S3Addressing.path.request(
            method: "PUT", endpoint: endpoint, bucket: "b", key: "runs/x y/batch-0001.json")
        #expect(path.url == "http://127.0.0.1:8333/b/runs/x%20y/batch-0001.json")
        let virtual = S3Addressing.virtualHost.request(
            method: "GET", endpoint: try #require(URL(string: "https://s3.eu-west-1.amazonaws.com")),
            bucket: "b", key: "k", query: [("uploadId", "a/b+c")])
        #expect(virtual.url == "https://b.s3.eu-west-1.amazonaws.com/k?uploadId=a%2Fb%2Bc")
    }

    /// A table of requests signed by botocore (1.43.11, installed by `make test` into
    /// .build-peers/) at a frozen clock, compared byte for byte: header signing with a payload
    /// hash or UNSIGNED-PAYLOAD, session tokens, odd keys and query values, path-style and
    /// virtual-host addressing, and presigned URLs with and without a signed Content-MD5.
    // Long: botocore's cases, a table read down the page.
    @Test func matchesBotocoreByteForByte() throws {
        struct Case: Codable {
            var method, url: String
            var headers: [String: String]
            var body: String
            var unsigned: Bool
            var token: String?
            var presign: Int?
            var region: String
        }
        let cases: [Case] = [
            Case(
                method: "PUT", url: "http://127.0.0.1:8333/bucket/runs/2026/batch-0001.json",
                headers: ["Content-Type": "application/json"],
                body: "{\"Files\":[]}", unsigned: false, token: nil, presign: nil, region: "us-east-1"),
            Case(
                method: "PUT",
                url: "https://bucket.s3.eu-central-1.amazonaws.com/a%20key/with%2Bplus%26amp.json"
                    + "?partNumber=3&uploadId=Xy%2F9%2B%3D",
                headers: ["Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="], body: "", unsigned: true,
                token: "FQoGZXIvYXdzE//token+with/specials=",
                presign: nil, region: "eu-central-1"),
            Case(
                method: "POST", url: "http://localhost:9000/bucket/obj?uploads",
                headers: ["x-amz-meta-batch": "  1 /  3  ", "Content-Type": "application/json"],
                body: "", unsigned: false, token: nil, presign: nil, region: "us-west-2"),
            Case(
                method: "GET",
                url: "https://s3.amazonaws.com/bucket/?list-type=2&prefix=runs%2F&continuation-token=abc%3D%3D",
                headers: [:],
                body: "", unsigned: false, token: nil, presign: nil, region: "us-east-1"),
            Case(
                method: "GET", url: "https://s3.amazonaws.com/bucket/%C3%BCber/%E6%97%A5%E6%9C%AC.txt",
                headers: ["Range": "bytes=0-65535"],
                body: "", unsigned: false, token: nil, presign: nil, region: "us-east-1"),
            Case(
                method: "PUT", url: "http://127.0.0.1:8333/bucket/obj?partNumber=1&uploadId=abc", headers: [:],
                body: "", unsigned: true,
                token: nil, presign: 604_800, region: "us-east-1"),
            Case(
                method: "PUT", url: "https://bucket.s3.amazonaws.com/k%20ey?partNumber=2&uploadId=u",
                headers: ["Content-MD5": "XrY7u+Ae7tCTyyK7j1rNww=="],
                body: "", unsigned: true, token: "session/token", presign: 3600, region: "ap-southeast-2")
        ]
        let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent(".build-peers/venv/bin/python").path
        let script = """
            import datetime, json, sys, types
            from unittest import mock
            import botocore.auth, botocore.awsrequest, botocore.credentials
            fixed = datetime.datetime(2026, 11, 22, 12, 34, 56)
            out = []
            with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
                for c in json.load(sys.stdin):
                    creds = botocore.credentials.Credentials(
                        "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", c.get("token"))
                    req = botocore.awsrequest.AWSRequest(
                        method=c["method"], url=c["url"], headers=c["headers"], data=c["body"].encode())
                    req.context["client_config"] = types.SimpleNamespace(
                        s3={"payload_signing_enabled": not c["unsigned"]})
                    if c.get("presign"):
                        botocore.auth.S3SigV4QueryAuth(creds, "s3", c["region"], expires=c["presign"]).add_auth(req)
                        out.append(req.url)
                    else:
                        botocore.auth.S3SigV4Auth(creds, "s3", c["region"]).add_auth(req)
                        out.append(req.headers["Authorization"])
            print(json.dumps(out))
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", script]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = errors
        try p.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(cases))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "botocore failed: \(stderr)")
        let expected = try JSONDecoder().decode([String].self, from: data)
        let date = Date(timeIntervalSince1970: 1_795_350_896)  // 2026-11-22T12:34:56Z
        for (c, want) in zip(cases, expected) {
            let url = try #require(URLComponents(string: c.url))
            let query = (url.percentEncodedQueryItems ?? []).map {
                ($0.name.removingPercentEncoding!, $0.value?.removingPercentEncoding ?? "")
            }
            let port = url.port.map { ":\($0)" } ?? ""
            let request = S3Request(
                method: c.method, scheme: url.scheme!, host: url.host! + port,
                path: url.percentEncodedPath.removingPercentEncoding!,
                query: query, headers: c.headers.map { ($0.key, $0.value) })
            let signer = SigV4(
                credentials: S3Credentials(
                    accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    sessionToken: c.token), region: c.region)
            if let expires = c.presign {
                #expect(signer.presign(request, expires: expires, date: date) == want, "\(c.method) \(c.url)")
            } else {
                let signed = signer.sign(
                    request, payload: c.unsigned ? .unsigned : .hashing(Array(c.body.utf8)), date: date)
                #expect(signed.headers.first { $0.0 == "Authorization" }?.1 == want, "\(c.method) \(c.url)")
            }
        }
    }
}
