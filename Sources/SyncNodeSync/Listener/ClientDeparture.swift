import NIOCore

/// Notices a client leaving while its request is being worked on: its side of the connection
/// ends (the server allows half-closed connections, so the channel itself stays open until the
/// answer is written) or the connection closes.
final class ClientDeparture: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    /// Completes when the client left.
    let departed: EventLoopPromise<Void>

    init(eventLoop: any EventLoop) {
        departed = eventLoop.makePromise()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { departed.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        departed.succeed()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        departed.succeed()
    }

    /// When the client of `channel` leaves (its ``ClientDeparture``'s future); nil when it has none.
    static func of(_ channel: any Channel) async -> EventLoopFuture<Void>? {
        try? await channel.pipeline.handler(type: ClientDeparture.self).map(\.departed.futureResult).get()
    }
}
