import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import SyncNodeStore

/// Answers every request: CORS, authentication, then dispatch on the path's
/// (percent-decoded) segments, turning every error into CouchDB's JSON shape.
struct ListenerResponder: HTTPResponder {
    typealias Context = ListenerContext

    let handlers: Handlers
    let authentication: Authentication
    let allowedOrigins: [String]
    let stats: ListenerStats
    let faultInjector: FaultInjector?
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        // Active until the response is dropped: after its body (a feed, maybe) is written or has failed.
        let active = ActiveRequest(stats)
        var response: Response
        do {
            response = try await route(request, context: context)
        } catch let error as CouchError {
            response = HTTP.error(error, headers: error.status == 401 ? [.wwwAuthenticate: #"Basic realm="syncnode""#] : [:])
        } catch let error as StoreError {
            response = HTTP.error(CouchError(error))
        } catch let error as HTTPParserError {
            throw error
        } catch {
            logger.error("request failed", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(error)"])
            response = HTTP.error(CouchError(status: 500, error: "unknown_error", reason: "\(error)"))
        }
        addCORS(to: &response, request: request)
        response.headers[.cacheControl] = "must-revalidate"
        // Counts bytes as written, keeping the body's length (`ResponseBody.map` drops it: chunked).
        let stats = stats, body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            withExtendedLifetime(active) {}
            try await body.write(writer.map { buffer in
                stats.sent(buffer.readableBytes)
                return buffer
            })
        }
        return response
    }

    private func route(_ request: Request, context: Context) async throws -> Response {
        if request.method == .options { return preflight(request) }
        if let status = faultInjector?.status(request.method.rawValue, request.uri.path) {
            throw CouchError(status: status, error: "injected_fault", reason: "fault injected for testing")
        }
        // Logging in needs no login.
        if request.uri.path == "/_session" || request.uri.path == "/_session/" {
            return try await authentication.session(request, context: context)
        }
        let login = try await authentication.check(request, context: context)
        let segments = try Self.segments(request.uri.path)
        var response = try await handlers.handle(request, segments: segments, principal: login.principal)
        if let cookie = login.refreshedCookie { response.headers[.setCookie] = cookie }
        return response
    }

    /// Splits the raw path on `/` and percent-decodes each segment, so `%2F`
    /// inside a document ID stays part of it.
    static func segments(_ path: String) throws -> [String] {
        // One trailing slash is common (`/db/`); an empty segment elsewhere would shift the
        // others into other meanings (`/db//etc/x` read as attachment `x` of document `etc`).
        let trimmed = path.hasSuffix("/") ? path.dropLast() : Substring(path)
        if trimmed.dropFirst().contains("//") || trimmed.hasPrefix("//") {
            throw CouchError.badRequest("empty path segment in '\(path)'")
        }
        return try trimmed.split(separator: "/", omittingEmptySubsequences: true).map { raw in
            // Clients and proxies resolve `.` and `..` before sending, so a raw one means another
            // resource than the one written (`/db/../x` as document `..`); an ID spelled so is percent-encoded.
            if raw == "." || raw == ".." {
                throw CouchError.badRequest("'\(raw)' path segment in '\(path)': percent-encode it (%2E) when it is part of an ID")
            }
            guard let decoded = raw.removingPercentEncoding else {
                throw CouchError.badRequest("invalid percent-encoding in path segment '\(raw)'")
            }
            return decoded
        }
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

/// What a listener has done since it started.
public struct ListenerStatus: Sendable, Equatable {
    /// Client connections open now (TLS handshakes in progress included).
    public var activeConnections = 0
    /// Connections accepted since start.
    public var totalConnections = 0
    /// Connections refused (503) for being beyond the listener's limits, since start.
    public var refusedConnections = 0
    /// Requests being answered now.
    public var activeRequests = 0
    /// Requests answered since start.
    public var totalRequests = 0
    /// Response body bytes written since start.
    public var bytesSent = 0
}

/// Counts connections, requests and bytes, for ``Listener/status`` and the connection limits.
final class ListenerStats: Sendable {
    private let counts = Mutex(ListenerStatus())
    /// Admitted connections open now: in all, and by client address.
    private let admitted = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))

    /// Records a new connection; false when it is beyond `limits` (it is counted, not admitted).
    func connectionOpened(address: String, limits: ConnectionLimits) -> Bool {
        let admitted = self.admitted.withLock { open in
            guard open.total < limits.total, open.byAddress[address, default: 0] < limits.perAddress else { return false }
            open.total += 1
            open.byAddress[address, default: 0] += 1
            return true
        }
        counts.withLock { $0.activeConnections += 1; $0.totalConnections += 1; if !admitted { $0.refusedConnections += 1 } }
        return admitted
    }

    func connectionClosed(address: String, admitted: Bool) {
        counts.withLock { $0.activeConnections -= 1 }
        guard admitted else { return }
        self.admitted.withLock { open in
            let left = open.byAddress[address, default: 1] - 1
            open.byAddress[address] = left > 0 ? left : nil
            open.total -= 1
        }
    }
    func requestStarted() { counts.withLock { $0.activeRequests += 1; $0.totalRequests += 1 } }
    func requestFinished() { counts.withLock { $0.activeRequests -= 1 } }
    func sent(_ bytes: Int) { counts.withLock { $0.bytesSent += bytes } }
    var snapshot: ListenerStatus { counts.withLock { $0 } }
}

/// One request in ``ListenerStatus/activeRequests``, for as long as it lives.
private final class ActiveRequest: Sendable {
    private let stats: ListenerStats

    init(_ stats: ListenerStats) {
        self.stats = stats
        stats.requestStarted()
    }

    deinit { stats.requestFinished() }
}
