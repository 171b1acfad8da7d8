#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import AsyncHTTPClient
import NIOCore
import NIOPosix

/// The limits on waiting for a peer (see ``ReplicatorConfiguration/connectTimeout`` and
/// ``ReplicatorConfiguration/readTimeout``), and what a peer that exceeded one did, said
/// in words.
struct PeerTimeouts: Sendable {
    let connect: Duration
    let read: Duration

    /// The HTTP client's timeouts, lost connections and failed connects as ``SyncError/connectionFailed(_:)``
    /// (retried, and shown to users as they are): which peer, what it did not do, in how long.
    /// Other errors are returned as they are.
    func describe(_ error: any Error, peer: String) -> any Error {
        // A failed connect arrives as NIO's socket error, which reads "connection reset (error set): ...";
        // to a host name, inside the error of NIO's connection attempts to each of its addresses.
        if let error = error as? NIOConnectionError {
            if let socket = error.connectionErrors.lazy.compactMap({ $0.error as? IOError }).first {
                return SyncError.connectionFailed("\(peer) \(Self.words(socket))")
            }
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return SyncError.connectionFailed("\(peer) could not be found: its name does not resolve")
            }
            return error
        }
        if let error = error as? IOError { return SyncError.connectionFailed("\(peer) \(Self.words(error))") }
        guard let error = error as? HTTPClientError else { return error }
        let what: String
        switch error {
        case .connectTimeout: what = "did not accept a connection within \(Self.text(connect))"
        case .tlsHandshakeTimeout: what = "did not complete a TLS handshake within \(Self.text(connect))"
        case .readTimeout: what = "sent nothing for \(Self.text(read)) (read timeout)"
        case .writeTimeout: what = "took nothing of what was sent for \(Self.text(read)) (write timeout)"
        case .deadlineExceeded: what = "did not answer before the request's deadline"
        case .remoteConnectionClosed: what = "closed the connection before answering"
        default: return error
        }
        return SyncError.connectionFailed("\(peer) \(what)")
    }

    /// What a peer did, from the socket error its connection ended with.
    private static func words(_ error: IOError) -> String {
        switch error.errnoCode {
        case ECONNREFUSED: "refused the connection (nothing listens on that port)"
        case ECONNRESET, EPIPE: "reset the connection"
        default: "could not be reached: \(String(cString: strerror(error.errnoCode)))"
        }
    }

    static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}
