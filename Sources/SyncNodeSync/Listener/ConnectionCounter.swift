import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Counts a connection as open from the moment its pipeline is set up until
/// it closes (``ListenerStatus/activeConnections``), and admits it only
/// within the listener's limits, in total and per client address. A
/// connection beyond them gets `503` with a JSON error to its first request
/// and is closed, so a client (or a flood of stalled connections from one
/// address) learns why rather than hanging.
final class ConnectionCounter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let stats: ListenerStats
    private let limits: ConnectionLimits
    private var address = "unknown"
    private var admitted = true

    init(stats: ListenerStats, limits: ConnectionLimits) {
        self.stats = stats
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        admitted = stats.connectionOpened(address: address, limits: limits)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stats.connectionClosed(address: address, admitted: admitted)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !admitted else {
            if case .body(let bytes) = unwrapInboundIn(data) { stats.received(bytes.readableBytes) }
            context.fireChannelRead(data)
            return
        }
        // Refused: answer the first request, read nothing more, close.
        guard case .head = unwrapInboundIn(data) else { return }
        let body = ByteBuffer(string: #"{"error":"service_unavailable","reason":"too many connections; try again later"}"#)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = "\(body.readableBytes)"
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .serviceUnavailable, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

/// How many connections a listener takes (``ListenerConfiguration``).
struct ConnectionLimits: Sendable {
    var total: Int
    var perAddress: Int
}
