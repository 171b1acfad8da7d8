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
///
/// Requests read before the bad one are answered first: the error waits until
/// their responses have ended (a client may send its next request as soon as it
/// has a response's last byte, before the server has finished writing it). A
/// request that goes bad in its body is answered at once, unless its response
/// has begun; then the connection is only closed.
final class FramingGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart

    private struct Answer {
        let status: HTTPResponseStatus, error: String, reason: String
    }

    private enum State { case passing, refusingCoding, answering(Answer), answered }
    private var state = State.passing
    /// Requests passed on whose responses have not ended.
    private var inFlight = 0
    /// A passed request's body is still arriving.
    private var readingBody = false
    /// A response has begun and not ended.
    private var responding = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .answering, .answered: return
        case .passing, .refusingCoding: break
        }
        if case .head(let head) = part {
            // After CONNECT the parser reads the rest as tunnel bytes, and NIO's encoder strips
            // the answer's body and length: answered here, with the connection closed.
            if head.method == .CONNECT {
                answer(context: context, Answer(status: .methodNotAllowed, error: "method_not_allowed", reason: "CONNECT is not supported"))
                return
            }
            let codings = head.headers[canonicalForm: "transfer-encoding"].map { $0.lowercased() }
            if codings.contains(where: { $0 != "chunked" }) {
                state = .refusingCoding
            } else {
                state = .passing
                inFlight += 1
                readingBody = true
            }
        }
        guard case .refusingCoding = state else {
            if case .end = part { readingBody = false }
            context.fireChannelRead(data)
            return
        }
        guard case .end = part else { return }
        answer(context: context, Answer(status: .notImplemented, error: "not_implemented", reason: "only the chunked transfer coding is supported"))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch (state, error) {
        case (.answering, is HTTPParserError), (.answering, is ByteToMessageDecoderError),
             (.answered, is HTTPParserError), (.answered, is ByteToMessageDecoderError):
            return  // the decoder's complaints about bytes after the bad request
        case (.passing, let parserError as HTTPParserError), (.refusingCoding, let parserError as HTTPParserError):
            answer(context: context, Answer(status: .badRequest, error: "bad_request", reason: "malformed HTTP request (\(parserError))"))
        default:
            context.fireErrorCaught(error)  // I/O and TLS errors end the connection as usual
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        context.write(data, promise: promise)
        switch part {
        case .head(let head) where head.status.code >= 200: responding = true
        case .end:
            responding = false
            inFlight = max(0, inFlight - 1)
            if inFlight == 0, case .answering(let answer) = state { send(answer, context: context) }
        default: break
        }
    }

    private func answer(context: ChannelHandlerContext, _ answer: Answer) {
        state = .answering(answer)
        if readingBody && responding {
            state = .answered
            context.close(promise: nil)
        } else if readingBody || inFlight == 0 {
            send(answer, context: context)
        }
    }

    private func send(_ answer: Answer, context: ChannelHandlerContext) {
        state = .answered
        // Raw bytes below NIO's encoder: it strips the body and length of any answer to CONNECT.
        let body = #"{"error":"\#(answer.error)","reason":"\#(answer.reason)"}"#
        let text = "HTTP/1.1 \(answer.status.code) \(answer.status.reasonPhrase)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            context.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(ByteBuffer(string: text))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
