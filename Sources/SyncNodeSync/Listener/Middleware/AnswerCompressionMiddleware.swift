import HTTPTypes
import Hummingbird
import NIOCore

/// Gzip-encodes the protocol's large JSON answers (`_changes`, `_bulk_get`, `_all_docs`,
/// `_revs_diff`, `_find`) for a client whose `Accept-Encoding` takes gzip. A replication's
/// bodies then cross in about a quarter of their bytes.
///
/// Left as they are: answers of a known length under ``minimumLength`` (nothing to gain),
/// continuous and event-source feeds (a client reading a stream line by line may not decode it
/// as it goes), and answers that carry attachment content (`attachments=true`): that content is
/// sent as it is stored, so images, video and archives are never compressed a second time.
/// Runs after routing, and inside ``AnswerWritingMiddleware``, which counts the encoded bytes.
struct AnswerCompressionMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    static let endpoints: Set<String> = ["_changes", "_bulk_get", "_all_docs", "_revs_diff", "_find"]
    static let minimumLength = 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        guard case .literal(let endpoint)? = context.route?.route.pattern.last, Self.endpoints.contains(endpoint) else { return response }
        // Whether or not this one is encoded, the same URL may be: caches keep them apart.
        response.headers.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        guard Self.encodes(response, for: request) else { return response }
        let body = response.body
        response.headers[.contentEncoding] = "gzip"
        response.body = ResponseBody { writer in
            try await body.write(Self.encoding(writer))
        }
        return response
    }

    /// `writer`, taking plain pieces and writing them gzip-encoded.
    static func encoding(_ writer: some ResponseBodyWriter) throws -> some ResponseBodyWriter {
        GzipBodyWriter(parent: writer, encoder: try GzipEncoder())
    }

    /// Whether `response` goes out gzip-encoded.
    static func encodes(_ response: Response, for request: Request) -> Bool {
        guard request.method != .head, response.status == .ok, response.headers[.contentEncoding] == nil,
              response.headers[.contentType]?.hasPrefix(HTTP.json) == true,
              acceptsGzip(request.headers[.acceptEncoding]) else { return false }
        if let length = response.body.contentLength, length < minimumLength { return false }
        let query = request.uri.queryParameters
        let feed = query["feed"] ?? ""
        return feed != "continuous" && feed != "eventsource" && query["attachments"] != "true"
    }

    /// Whether an `Accept-Encoding` value takes gzip: named (or `*`) with a quality above 0.
    static func acceptsGzip(_ value: String?) -> Bool {
        guard let value else { return false }
        var gzip: Bool?, any: Bool?
        for item in value.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            switch coding {
            case "gzip", "x-gzip": gzip = quality > 0
            case "*": any = quality > 0
            default: break
            }
        }
        return gzip ?? any ?? false
    }
}

/// Hands each piece a body writes on gzip-encoded, and the stream's end before the body's.
struct GzipBodyWriter<Parent: ResponseBodyWriter>: ResponseBodyWriter {
    var parent: Parent
    let encoder: GzipEncoder

    mutating func write(_ buffer: ByteBuffer) async throws {
        let encoded = try encoder.encode(buffer)
        if encoded.readableBytes > 0 { try await parent.write(encoded) }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await parent.write(try encoder.finish())
        try await parent.finish(trailingHeaders)
    }
}
