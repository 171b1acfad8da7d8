import NIOCore

/// Closes a connection whose client has taken none of an answer for a while.
///
/// The idle timeout that closes silent connections is off while an answer is
/// written (a feed may rightly send nothing for minutes), so a client that asks
/// for a big answer and then reads nothing would otherwise hold what the answer
/// holds for ever: its share of the ``AnswerBudget``, a read snapshot of the
/// database. Once the connection's outgoing buffer is full, this waits
/// `timeout` for it to drain a little; a client reading, however slowly, makes
/// it writable again long before.
final class WriteStallGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var closing: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            closing?.cancel()
            closing = nil
        } else if closing == nil {
            let channel = context.channel
            closing = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing?.cancel()
        closing = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closing?.cancel()
    }
}
