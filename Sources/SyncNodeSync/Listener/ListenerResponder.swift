import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import SyncNodeStore

/// Answers every request: CORS, then ``RouteTable/listener``'s route for the path's
/// (percent-decoded) segments, signed in and authorized as the route's access says,
/// turning every error into CouchDB's JSON shape.
struct ListenerResponder: HTTPResponder {
    typealias Context = ListenerContext

    let handlers: Handlers
    let allowedOrigins: [String]
    let stats: ListenerStats
    let faultInjector: FaultInjector?
    let logger: Logger

    private var authentication: Authentication { handlers.authentication }

    func respond(to request: Request, context: Context) async throws -> Response {
        // Active until the response is dropped: after its body (a feed, maybe) is written or has failed.
        let active = ActiveRequest(stats)
        let started = ContinuousClock.now
        var response: Response
        do {
            response = try await route(request, context: context)
        } catch let error as CouchError {
            // No challenge for the dashboard (its scripts say X-Requested-With; its event stream and
            // images carry its cookie): the browser would pop up a login dialog and keep what is typed.
            let challenge = error.status == 401 && request.headers[Self.requestedWith] == nil
                && request.headers[.cookie]?.contains("AuthSession=") != true
            response = HTTP.error(error, headers: challenge ? [.wwwAuthenticate: #"Basic realm="syncnode""#] : [:])
        } catch let error as StoreError {
            response = HTTP.error(CouchError(error))
        } catch let error as HTTPParserError {
            throw error
        } catch {
            logger.error("request failed", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(error)"])
            response = HTTP.error(CouchError(status: 500, error: "unknown_error", reason: "\(error)"))
        }
        handlers.metrics.request(method: request.method.rawValue, status: response.status.code, duration: started.duration(to: .now))
        addCORS(to: &response, request: request)
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

    private func route(_ request: Request, context: Context) async throws -> Response {
        if request.method == .options { return preflight(request) }
        try refuseCrossSiteWrite(request)
        if let status = faultInjector?.status(request.method.rawValue, request.uri.path) {
            throw CouchError(status: status, error: "injected_fault", reason: "fault injected for testing")
        }
        let segments = try RouteTable.segments(request.uri.path)
        let (action, parameters): (Route.Action, [Route.Parameter: String])
        switch RouteTable.listener.resolve(request.method, segments) {
        case .notFound:
            throw CouchError.notFound()
        case .methodNotAllowed(let methods):
            let allow = methods.map(\.rawValue).joined(separator: ",")
            return HTTP.error(.methodNotAllowed(allow), headers: [.allow: methods.map(\.rawValue).joined(separator: ", ")])
        case .found(_, let found, let captured):
            (action, parameters) = (found, captured)
        }
        if action.access == .open {
            return try await action.handle(handlers, RoutedRequest(request: request, context: context, parameters: parameters, principal: Authentication.nobody.principal))
        }
        let login = try await authentication.check(request, context: context)
        try handlers.authorize(action.access, keyspace: parameters[.keyspace], principal: login.principal)
        if action.writes { try handlers.checkWritable() }
        let routed = RoutedRequest(request: request, context: context, parameters: parameters, principal: login.principal)
        // The connection is known to the handler too: work only its client waits for can end when it leaves.
        var response = try await Authentication.$ofRequest.withValue(Authentication.CurrentPrincipal(login.current)) {
            try await ClientDeparture.$connection.withValue(context.channel) {
                try await action.handle(handlers, routed)
            }
        }
        if let cookie = login.refreshedCookie { response.headers[.setCookie] = cookie }
        return response
    }

    static let requestedWith = HTTPField.Name("X-Requested-With")!
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// A browser names the page that sends a write in `Origin`; one of another site could be
    /// riding on a signed-in user's cookie (a form that posts JSON as text/plain), so unsafe
    /// methods from origins that are neither this node nor allowed by CORS are refused.
    /// Clients that are not browsers send no `Origin`.
    private func refuseCrossSiteWrite(_ request: Request) throws {
        guard ![.get, .head, .options].contains(request.method), let origin = request.headers[.origin] else { return }
        if allowedOrigin(request) != nil { return }
        let authority = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        if let authority, authority == request.head.authority { return }
        throw CouchError.forbidden("A write from the page at \(origin) is refused: only this node's own pages and origins allowed with --cors-origin may write.")
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
