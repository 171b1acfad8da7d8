import NIOCore

/// Counts a connection as open from the moment its pipeline is set up until
/// it closes, for ``ListenerStatus/activeConnections``. One instance per
/// connection; it passes every message through untouched.
final class ConnectionCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let stats: ListenerStats

    init(stats: ListenerStats) {
        self.stats = stats
    }

    func handlerAdded(context: ChannelHandlerContext) {
        stats.connectionOpened()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stats.connectionClosed()
    }
}
