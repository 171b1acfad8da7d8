import NIOCore
import NIOHTTP1

/// Answers requests whose framing the node cannot read with a JSON error,
/// then closes the connection (what follows such a request cannot be trusted):
/// - CONNECT gets 405;
/// - a body in a transfer coding other than `chunked` gets 501, because NIO's
///   decoder reads `Transfer-Encoding: gzip, chunked` as plain chunks, which
///   would store the compressed bytes as the body;
/// - bytes the HTTP parser rejects get 400 `bad_request` naming the parser's
///   complaint, where NIO and Hummingbird would send an empty 400.
final class FramingGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart

    private enum State { case passing, refusingCoding, answered }
    private var state = State.passing
    /// A response has begun and not ended: an error answer now would corrupt it.
    private var responding = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if state == .answered { return }
        if case .head(let head) = part {
            // After CONNECT the parser reads the rest as tunnel bytes, and NIO's encoder strips
            // the answer's body and length: answered here, with the connection closed.
            if head.method == .CONNECT {
                answer(context: context, status: .methodNotAllowed, error: "method_not_allowed", reason: "CONNECT is not supported")
                return
            }
            let codings = head.headers[canonicalForm: "transfer-encoding"].map { $0.lowercased() }
            state = codings.contains { $0 != "chunked" } ? .refusingCoding : .passing
        }
        guard state == .refusingCoding else {
            context.fireChannelRead(data)
            return
        }
        guard case .end = part else { return }
        answer(context: context, status: .notImplemented, error: "not_implemented", reason: "only the chunked transfer coding is supported")
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        answer(context: context, status: .badRequest, error: "bad_request", reason: "malformed HTTP request (\(parserError))")
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responding = true
        case .end: responding = false
        default: break
        }
        context.write(data, promise: promise)
    }

    /// Writes the error and closes; only closes when a response is under way or an answer was given.
    private func answer(context: ChannelHandlerContext, status: HTTPResponseStatus, error: String, reason: String) {
        guard !responding, state != .answered else {
            state = .answered
            context.close(promise: nil)
            return
        }
        state = .answered
        // Raw bytes below NIO's encoder: it strips the body and length of any answer to CONNECT.
        let body = #"{"error":"\#(error)","reason":"\#(reason)"}"#
        let text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            context.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(ByteBuffer(string: text))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
