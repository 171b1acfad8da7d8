import NIOCore
import NIOHTTP1

/// Refuses a request body in a transfer coding other than `chunked` (501):
/// NIO's decoder reads `Transfer-Encoding: gzip, chunked` as plain chunks,
/// which would store the compressed bytes as the body.
final class TransferCodingCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var refusing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .head(let head) = part {
            let codings = head.headers[canonicalForm: "transfer-encoding"].map { $0.lowercased() }
            refusing = codings.contains { $0 != "chunked" }
        }
        guard refusing else {
            context.fireChannelRead(data)
            return
        }
        guard case .end = part else { return }
        let body = ByteBuffer(string: #"{"error":"not_implemented","reason":"only the chunked transfer coding is supported"}"#)
        var headers = HTTPHeaders([("Content-Type", "application/json"), ("Connection", "close")])
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .notImplemented, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
