import HTTPTypes
import Hummingbird

/// The routes of the HTTP API, tried in order. CouchDB's path grammar is not a tree of fixed
/// names: `{db}` and `{doc}` are any names that do not start with `_`, IDs and attachment names
/// keep their percent-encoded slashes, and a known path asked with another method is a 405
/// that lists the methods it takes.
struct RouteTable: Sendable {
    let routes: [Route]

    init(_ routes: [Route]) { self.routes = routes }

    /// Where a request goes.
    enum Resolution {
        case found(Route, Route.Action, [Route.Parameter: String])
        /// The path is routed, but not for this method.
        case methodNotAllowed([HTTPRequest.Method])
        case notFound
    }

    func resolve(_ method: HTTPRequest.Method, _ segments: [String]) -> Resolution {
        for route in routes {
            guard let parameters = route.match(segments) else { continue }
            guard let action = route.action(for: method) else { return .methodNotAllowed(route.allowedMethods) }
            return .found(route, action, parameters)
        }
        return .notFound
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
}
