import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Fetches a TLS server's certificate in one handshake, so a pinned
/// fingerprint is checked before any request is sent (and fails in one round
/// trip, not after HTTP-client retries), and so trust-on-first-use can pin it.
enum CertificateProbe {
    /// The DER certificate `host:port` presents.
    static func certificate(host: String, port: Int, timeout: Duration) async throws -> [UInt8] {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .noHostnameVerification  // must not be .none, or the callback never runs
        let context = try NIOSSLContext(configuration: tls)
        let seen = Mutex<[UInt8]?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: nil) { chain, promise in
                        seen.withLock { $0 = try? chain.first?.toDERBytes() }
                        promise.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port).get()
        defer { channel.close(promise: nil) }
        // Wait for the handshake to deliver the chain.
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if let der = seen.withLock({ $0 }) { return der }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw SyncError.invalidIdentity("no TLS certificate from \(host):\(port) within \(timeout)")
    }
}
