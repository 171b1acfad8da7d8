import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Fetches a TLS server's certificate in one handshake, so a pinned
/// fingerprint is checked before any request is sent (and fails in one round
/// trip, not after HTTP-client retries), and so trust-on-first-use can pin it.
enum CertificateProbe {
    /// The DER certificate `host:port` presents.
    /// - Throws: ``SyncError/connectionFailed(_:)`` (or NIO's error when connecting fails)
    ///   when the connection closes or times out before a certificate arrives: a
    ///   replicator retries these. ``SyncError/invalidIdentity(_:)`` when the server
    ///   presents no usable certificate.
    static func certificate(host: String, port: Int, timeout: Duration) async throws -> [UInt8] {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .noHostnameVerification  // must not be .none, or the callback never runs
        let context = try NIOSSLContext(configuration: tls)
        let limit = TimeAmount.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let seen = Outcome(eventLoop.makePromise(of: [UInt8].self))
        let connecting = ClientBootstrap(group: eventLoop)
            .connectTimeout(limit)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: nil) { chain, promise in
                        if let der = try? chain.first?.toDERBytes() {
                            seen.succeed(der)
                        } else {
                            seen.fail(SyncError.invalidIdentity("\(host):\(port) presented no usable certificate"))
                        }
                        promise.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port)
        let channel: any Channel
        do {
            channel = try await connecting.get()
        } catch {
            seen.fail(error)  // NIO traps on a promise never completed
            throw error
        }
        defer { channel.close(promise: nil) }
        // The handshake delivers the chain; a connection that closes first, or the deadline, ends the wait.
        channel.closeFuture.whenComplete { _ in
            seen.fail(SyncError.connectionFailed("\(host):\(port) closed the connection before presenting a TLS certificate (is it an https peer?)"))
        }
        let deadline = eventLoop.scheduleTask(in: limit) {
            seen.fail(SyncError.connectionFailed("no TLS certificate from \(host):\(port) within \(timeout)"))
        }
        defer { deadline.cancel() }
        return try await seen.result.get()
    }

    /// A promise completed by whichever outcome comes first (NIO forbids completing one twice).
    private final class Outcome: Sendable {
        private let promise: EventLoopPromise<[UInt8]>
        private let done = Mutex(false)

        init(_ promise: EventLoopPromise<[UInt8]>) { self.promise = promise }

        var result: EventLoopFuture<[UInt8]> { promise.futureResult }

        func succeed(_ der: [UInt8]) { if first() { promise.succeed(der) } }
        func fail(_ error: any Error) { if first() { promise.fail(error) } }

        private func first() -> Bool {
            done.withLock { done in
                defer { done = true }
                return !done
            }
        }
    }
}
