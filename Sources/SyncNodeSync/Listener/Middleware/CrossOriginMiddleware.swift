import HTTPTypes
import Hummingbird

/// CORS for the origins `--cors-origin` allows: preflights, the headers on every answer to
/// them, and a refusal of writes that pages of any other site send.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    /// Origins allowed one by one, or `*` for any (then without credentials).
    let allowedOrigins: [String]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        if request.method == .options {
            response = preflight(request)
        } else if let refusal = crossSiteWriteRefusal(request) {
            response = HTTP.error(refusal)
        } else {
            response = try await next(request, context)
        }
        addCORS(to: &response, request: request)
        return response
    }

    /// A browser names the page that sends a write in `Origin`; one of another site could be
    /// riding on a signed-in user's cookie (a form that posts JSON as text/plain), so unsafe
    /// methods from origins that are neither this node nor allowed by CORS are refused.
    /// Clients that are not browsers send no `Origin`.
    private func crossSiteWriteRefusal(_ request: Request) -> CouchError? {
        guard ![.get, .head, .options].contains(request.method), let origin = request.headers[.origin] else { return nil }
        if allowedOrigin(request) != nil { return nil }
        let authority = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        if let authority, authority == request.head.authority { return nil }
        return .forbidden("A write from the page at \(origin) is refused: only this node's own pages and origins allowed with --cors-origin may write.")
    }

    private func allowedOrigin(_ request: Request) -> String? {
        guard let origin = request.headers[.origin] else { return nil }
        if allowedOrigins.contains("*") || allowedOrigins.contains(origin) { return origin }
        return nil
    }

    private func preflight(_ request: Request) -> Response {
        var headers: HTTPFields = [:]
        if allowedOrigin(request) != nil {
            headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, DELETE, OPTIONS"
            headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders] ?? "Accept, Authorization, Content-Type, Origin, Referer"
            headers[.accessControlMaxAge] = "600"
        }
        return Response(status: .noContent, headers: headers)
    }

    private func addCORS(to response: inout Response, request: Request) {
        guard let origin = allowedOrigin(request) else { return }
        response.headers[.accessControlAllowOrigin] = origin
        // Credentials only for origins named one by one: with "*" any site could act as the user.
        if allowedOrigins.contains(origin) { response.headers[.accessControlAllowCredentials] = "true" }
        response.headers[.accessControlExposeHeaders] = "Cache-Control, Content-Type, ETag, Server, X-Couch-Request-ID"
    }
}
