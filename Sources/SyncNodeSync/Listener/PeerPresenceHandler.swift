import NIOCore
import NIOSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps a connection alive by TCP and counts it in ``ConnectedPeers`` under its client
/// certificate's fingerprint, from its first bytes until it closes. The fingerprint is
/// computed once here, and each request's sign-in reads it (`clientFingerprint()`).
final class PeerPresenceHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// The kernel's keep-alive: an ask after 1 s without traffic, so a live peer is heard from
    /// each second (``ConnectedPeers/recent``); closed after 3 unanswered.
    static let keepAliveOptions: [(NIOBSDSocket.OptionLevel, NIOBSDSocket.Option, SocketOptionValue)] = [
        (.socket, .so_keepalive, 1),
        (.tcp, NIOBSDSocket.Option(rawValue: idleOption), 1),
        (.tcp, NIOBSDSocket.Option(rawValue: TCP_KEEPINTVL), 1),
        (.tcp, NIOBSDSocket.Option(rawValue: TCP_KEEPCNT), 3),
    ]

    #if canImport(Darwin)
    private static let idleOption = TCP_KEEPALIVE
    #else
    private static let idleOption = TCP_KEEPIDLE
    #endif

    private let peers: ConnectedPeers
    /// The client certificate's fingerprint; nil without one (or before the first bytes).
    private(set) var fingerprint: String?
    private var looked = false

    init(peers: ConnectedPeers) {
        self.peers = peers
    }

    /// Turns on TCP keep-alive for `channel` (best effort: without it, a quiet peer is not heard
    /// from, so it is not counted as connected and discovery probes it as before).
    static func keepAlive(_ channel: any Channel) {
        guard let options = channel.syncOptions else { return }
        for (level, name, value) in keepAliveOptions {
            try? options.setOption(ChannelOptions.Types.SocketOption(level: level, name: name), value: value)
        }
    }

    /// The first bytes to come through TLS come after its handshake: the certificate is known then.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !looked {
            looked = true
            count(context)
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let fingerprint { peers.closed(fingerprint, context.channel) }
        fingerprint = nil
    }

    private func count(_ context: ChannelHandlerContext) {
        guard let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
              let der = try? certificate.toDERBytes() else { return }
        let fingerprint = TLSIdentity.fingerprint(der: der)
        self.fingerprint = fingerprint
        peers.opened(fingerprint, context.channel)
    }
}
