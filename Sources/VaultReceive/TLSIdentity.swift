import NIOSSL
import Synchronization
import VaultCore

/// The certificate chain and private key a receiver serves TLS with, read from their PEM files
/// when it starts and again when asked (`vault receive` on SIGHUP): each new connection's
/// handshake takes the pair read last (NIOSSL's per-handshake context callback), so a renewed
/// certificate is served without a restart and without dropping a connection.
package final class TLSIdentity: Sendable {
    package let certificatePath: String
    let keyPath: String
    private let current: Mutex<Pair>

    struct Pair: Sendable {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
    }

    /// Reads and checks the pair.
    /// - Throws: ``VaultError/Code/usage`` with a sentence: a file that is not PEM, a key
    ///   that is not the certificate's.
    package init(certificate: String, key: String) throws {
        (certificatePath, keyPath) = (certificate, key)
        current = Mutex(try Self.load(certificate, key))
    }

    /// Reads the files again; the pair in use stays when they do not make a pair.
    package func reload() throws {
        let pair = try Self.load(certificatePath, keyPath)
        current.withLock { $0 = pair }
    }

    /// The server's TLS configuration: the pair read last, for every handshake.
    var configuration: TLSConfiguration {
        let pair = current.withLock { $0 }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: pair.chain.map { .certificate($0) }, privateKey: .privateKey(pair.key))
        tls.sslContextCallback = { [self] _, promise in
            let now = current.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = now.chain.map { .certificate($0) }
            override.privateKey = .privateKey(now.key)
            promise.succeed(override)
        }
        return tls
    }

    private static func load(_ certificate: String, _ key: String) throws -> Pair {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificate) } catch {
            throw VaultError(.usage, "cannot read the TLS certificate \(certificate): it is not a PEM certificate")
        }
        guard !chain.isEmpty else {
            throw VaultError(.usage, "cannot read the TLS certificate \(certificate): it holds no certificate")
        }
        let privateKey: NIOSSLPrivateKey
        do { privateKey = try NIOSSLPrivateKey(file: key, format: .pem) } catch {
            throw VaultError(
                .usage, "cannot read the TLS key \(key): it is not an unencrypted PEM private key")
        }
        // BoringSSL checks that the key is the certificate's when a context is made of them.
        do {
            _ = try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey)))
        } catch {
            throw VaultError(
                .usage, "the TLS key \(key) is not the private key of the certificate \(certificate)",
                hint: "give the private key the certificate was issued for")
        }
        return Pair(chain: chain, key: privateKey)
    }
}
