import NIOCore

/// Sends everything written between two flushes as one buffer, so TLS makes
/// one write of it (records filled from its start) instead of one per buffer.
///
/// NIO's HTTP/1 encoder writes each body chunk as three buffers (`<size>\r\n`,
/// the data, `\r\n`), and NIOSSL gave each a TLS record of its own, so a
/// chunk-size line could travel alone. CouchDB's replicator reads `_changes`
/// through ibrowse over Erlang's ssl, which hands over whole records: given
/// the size line's record alone, ibrowse passes on an empty body part and
/// waits for a `stream_next` the replicator never sends for an empty part, so
/// the request hung until its 30 s timeout (3 of 4 pulls over HTTPS). Chunks
/// now start a record with their data after the size line, as CouchDB's own
/// server sends them.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var pending: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(let buffer) = unwrapOutboundIn(data) else {
            // File regions (not used by the listener) pass through, in order.
            writePending(context: context)
            context.write(data, promise: promise)
            return
        }
        if pending == nil { pending = buffer } else { pending?.writeImmutableBuffer(buffer) }
        if let promise { promises.append(promise) }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        writePending(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // Writes never flushed (the connection went away first) fail, as they would have below.
        pending = nil
        let waiting = promises
        promises.removeAll()
        for promise in waiting { promise.fail(ChannelError.ioOnClosedChannel) }
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        pending = nil
        let waiting = promises
        promises.removeAll()
        var promise: EventLoopPromise<Void>?
        if waiting.count == 1 {
            promise = waiting[0]
        } else if waiting.count > 1 {
            let all = context.eventLoop.makePromise(of: Void.self)
            for p in waiting { all.futureResult.cascade(to: p) }
            promise = all
        }
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
