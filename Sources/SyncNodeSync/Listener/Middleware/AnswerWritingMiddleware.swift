import HTTPTypes
import Hummingbird

/// The outermost step: counts the request as active until its answer is written (a feed's may
/// take hours), paces and counts the bytes written, and adds the headers every answer carries.
struct AnswerWritingMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let stats: ListenerStats

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Active until the response is dropped: after its body (a feed, maybe) is written or has failed.
        let active = ActiveRequest(stats)
        var response = try await next(request, context)
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "must-revalidate" }
        // A browser takes each answer for the type it is said to be (JSON is never sniffed into a page).
        response.headers[Self.contentTypeOptions] = "nosniff"
        // Counts bytes as written, keeping the body's length (`ResponseBody.map` drops it: chunked).
        let stats = stats, body = response.body, channel = context.channel, pacer = WritePacer(channel: channel)
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            withExtendedLifetime(active) {}
            try await ClientDeparture.$connection.withValue(channel) {
                try await body.write(writer.map { buffer in
                    stats.sent(buffer.readableBytes)
                    try await pacer.pace(buffer)
                    return buffer
                })
            }
        }
        return response
    }

    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
