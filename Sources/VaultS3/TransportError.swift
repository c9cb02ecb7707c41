import AsyncHTTPClient
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOPosix
import VaultCore

/// A transport failure kept as the cause of a store error whose message says it in words
/// already (``TransportError/describe(_:timeout:)``): what a caller can still ask of it, such as
/// whether a connection was made at all.
package struct StatedTransportFailure: Error, CauseStatedInMessage {
    package let error: any Error
    package init(_ error: any Error) { self.error = error }
}

/// A transport failure (the connection, not a server's answer) in words a user reads. The
/// clients' own descriptions name Swift types and repeat the errno: an unknown host read
/// "DNS error: SocketAddressError.UnknownHost: Name or service not known (error -2) for host …",
/// a closed port "connection reset (error set): Connection refused) (errno: 111)".
package enum TransportError {
    /// The host a name lookup did not find and the resolver's reason, when the lookup will not
    /// find it on a retry either (`EAI_NONAME`: a typo, or a store named without its endpoint);
    /// nil for anything else, the resolver's temporary `EAI_AGAIN` included.
    package static func unknownHost(_ error: any Error) -> (host: String, reason: String)? {
        let dns = (error as? NIOConnectionError).flatMap { $0.dnsAError ?? $0.dnsAAAAError } ?? error
        guard let h = dns as? SocketAddressError.UnknownHost, h.errorCode != Int(EAI_AGAIN) else { return nil }
        return (h.host, h.errorDescription.lowercased())
    }

    /// True when `error` says no connection was made, so nothing was sent: refused, an
    /// unreachable network or host, a connect timeout, a name that does not resolve.
    package static func neverConnected(_ error: any Error) -> Bool {
        if error is NIOConnectionError || unknownHost(error) != nil { return true }
        if let io = error as? IOError { return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(io.errnoCode) }
        if let h = error as? HTTPClientError, h == .connectTimeout { return true }
        if let c = error as? ChannelError, case .connectTimeout = c { return true }
        return false
    }

    /// `error` in words, naming `timeout` (seconds) for the client's timeouts; at most 200
    /// characters of a description this does not know.
    package static func describe(_ error: any Error, timeout: Double) -> String {
        let seconds = Seconds.text(timeout) + " s"
        if let host = unknownHost(error) { return "cannot find the host '\(host.host)' (\(host.reason))" }
        if let connection = error as? NIOConnectionError,
           let first = connection.connectionErrors.first?.error ?? connection.dnsAError ?? connection.dnsAAAAError {
            return describe(first, timeout: timeout)
        }
        if let io = error as? IOError {
            return "connection error: " + String(cString: strerror(io.errnoCode)).lowercased()
        }
        if let h = error as? HTTPClientError {
            switch h {
            case .readTimeout: return "no answer within \(seconds)"
            case .writeTimeout: return "the server stopped reading for \(seconds)"
            case .connectTimeout: return "could not connect within \(seconds)"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: break
            }
        }
        if let n = error as? ChannelError, case .connectTimeout = n { return "could not connect within \(seconds)" }
        let text = String(describing: error)
        if text.contains("Connection refused") || text.contains("connectionRefused") { return "connection refused" }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
