import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypesHTTP1

/// The listener's HTTP/1 connections: ``HTTP1Channel`` with a ``ClientDeparture``, a
/// ``PeerPresenceHandler`` (and TCP keep-alive), a ``WriteStallGuard`` and a
/// ``FlushCoalescingHandler`` below its HTTP codec (directly above NIOSSL
/// when wrapped with TLS) and a ``FramingGuard`` before its heads
/// become HTTPTypes.
struct ListenerHTTP1Channel: HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value
    let base: HTTP1Channel
    let writeStallTimeout: TimeAmount
    let connectedPeers: ConnectedPeers
    var responder: Responder { base.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ClientDeparture())
            PeerPresenceHandler.keepAlive(channel)
            try channel.pipeline.syncOperations.addHandler(PeerPresenceHandler(peers: connectedPeers))
            try channel.pipeline.syncOperations.addHandler(WriteStallGuard(timeout: writeStallTimeout))
            try channel.pipeline.syncOperations.addHandler(FlushCoalescingHandler())
        }.flatMap { base.setup(channel: channel, logger: logger) }.flatMapThrowing { value in
            // Transfer-Encoding is gone once heads become HTTPTypes: it is checked before that.
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(FramingGuard(), position: .before(try operations.handler(type: HTTP1ToHTTPServerCodec.self)))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
