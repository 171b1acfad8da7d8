import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL

/// HTTP clients for talking to one peer over TLS pinned to its certificate.
package enum PeerClient {
    /// An HTTP client for one peer. With a pinned fingerprint the certificate
    /// is fetched and checked first, so a wrong pin fails in one handshake;
    /// `acceptSelfSigned` pins whatever self-signed certificate is seen.
    /// `clientIdentity` is presented as the client certificate; `readTimeout` bounds each wait for
    /// the peer's next bytes. Returns the fingerprint pinned, if any.
    package static func make(scheme: String, host: String, port: Int, pinnedCertificate: [UInt8]? = nil, pinnedFingerprint: String?,
                           acceptSelfSigned: Bool = false, clientIdentity: TLSIdentity? = nil,
                           connectTimeout: Duration, readTimeout: Duration = .seconds(30)) async throws -> (HTTPClient, pinned: String?) {
        var configuration = HTTPClient.Configuration(
            timeout: .init(connect: .init(connectTimeout), read: .init(readTimeout), write: .init(readTimeout)))
        configuration.httpVersion = .http1Only
        // One retry policy, the replicator's (with backoff and attempt counts), not a second one inside the client.
        configuration.connectionPool.retryConnectionEstablishment = false
        var pinned = pinnedCertificate
        if scheme == "https" {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.minimumTLSVersion = .tlsv12
            // Closing waits this long for the peer's close_notify. A replication stopped during a long
            // poll closes a connection the peer is still holding open, and NIOSSL's 5 s default made
            // every such stop take 5 s; nothing is read after close, so a short wait loses nothing.
            tls.shutdownTimeout = .milliseconds(100)
            try clientIdentity?.presentAsClient(in: &tls)
            if pinned == nil, let expected = pinnedFingerprint {
                let seen = try await CertificateProbe.certificate(host: host, port: port, timeout: connectTimeout)
                let fingerprint = TLSIdentity.fingerprint(der: seen)
                guard fingerprint == expected else {
                    throw SyncError.invalidIdentity("\(host):\(port) presented certificate \(fingerprint), expected the pinned \(expected)")
                }
                pinned = seen
            } else if pinned == nil, acceptSelfSigned {
                let seen = try await CertificateProbe.certificate(host: host, port: port, timeout: connectTimeout)
                guard TLSIdentity.isSelfSigned(der: seen) else {
                    throw SyncError.invalidIdentity("\(host):\(port) presented a certificate that is not self-signed (acceptOnlySelfSignedServerCertificate)")
                }
                pinned = seen
            }
            if let pinned {
                tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: pinned, format: .der)])
                tls.certificateVerification = .noHostnameVerification
            }
            configuration.tlsConfiguration = tls
        } else {
            pinned = nil
        }
        return (HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration),
                pinned.map { TLSIdentity.fingerprint(der: $0) })
    }
}
