import Foundation
import Testing

/// A store or a server that cannot be reached, through the built binary: a host that does not
/// resolve is named and refused at once (it will not resolve on a retry), a closed port is a
/// failure that may pass; neither message names a Swift type or an errno.
struct UnreachableCLITests {
    /// A host no lookup finds, decided on this machine: glibc refuses a label longer than 63
    /// characters before it asks any server, so no query leaves the machine.
    static let nowhere = String(repeating: "a", count: 64) + ".invalid"

    static let storeVariables: [String: String?] = [
        "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"
    ]

    static func expectNoInternals(_ r: CLIResult, _ what: String) {
        for word in ["SocketAddressError", "NIOConnectionError", "errno", "error set"] {
            #expect(!r.stderr.contains(word), "\(what): \(r.stderr)")
        }
    }

    @Test func aStoreWhoseHostDoesNotResolveIsNamedAndRefusedAtOnce() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("a document".utf8))
        #expect(s.run("add", s.path("a.txt"), "-q").status == 0)
        var env = Self.storeVariables
        env["AWS_ENDPOINT_URL"] = "https://\(Self.nowhere):9000"
        let hint = "vault: hint: check the bucket's name and AWS_ENDPOINT_URL (without it, s3:// is AWS)\n"
        let message = "cannot find the host '\(Self.nowhere)' (name or service not known)"
        let clone = s.run(["--vault", s.path("replica"), "clone", "s3://bucket/p"], env: env)
        #expect(clone.status == 69 && clone.stderr == "vault: S3 GET bucket/: \(message)\n" + hint, "\(clone.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("replica")))
        #expect(s.run(["remote", "add", "office", "s3://bucket/p"], env: env).status == 0)
        let push = s.run(["push", "office"], env: env)
        #expect(push.status == 69 && push.stderr.contains(message) && push.stderr.hasSuffix(hint), "\(push.stderr)")
        let upload = s.run(["upload", "--protocol", "s3", "--url", "s3://bucket/p"], env: env)
        #expect(upload.status == 69 && upload.stderr.contains(message), "\(upload.stderr)")
        #expect(upload.stderr.hasSuffix(hint), "\(upload.stderr)")
        #expect(s.run("list").out.contains("a.txt"))
        for r in [clone, push, upload] { Self.expectNoInternals(r, "store") }
    }

    @Test func anUploadToAHostThatDoesNotResolveSendsNothingAndSaysWhy() throws {
        let s = Sandbox()
        s.initVault()
        s.write("a.txt", Array("a document".utf8))
        #expect(s.run("add", s.path("a.txt"), "-q").status == 0)
        let r = s.run("upload", "--url", "https://\(Self.nowhere)/in", "--no-credentials")
        #expect(r.status == 69, "\(r.stderr)")
        #expect(
            r.stderr
                == """
                    vault: cannot find the host '\(Self.nowhere)' (name or service not known); nothing was sent
                    vault: hint: check the host name in the URL (or the destination's, 'vault destination')

                    """, "\(r.stderr)")
        Self.expectNoInternals(r, "upload")
    }

    @Test func aStoreOnAClosedPortIsAFailureThatMayPass() throws {
        let s = Sandbox()
        var env = Self.storeVariables
        // Port 1 (tcpmux): nothing on this machine listens there.
        env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"
        let r = s.run(["--vault", s.path("replica"), "clone", "s3://bucket/p"], env: env)
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("vault: S3 GET bucket/: connection error: connection refused\n"), "\(r.stderr)")
        Self.expectNoInternals(r, "closed port")
    }
}
