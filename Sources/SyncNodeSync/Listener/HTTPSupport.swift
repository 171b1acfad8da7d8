import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOSSL
import SyncNodeStore

/// The per-request context: the client's address, for auth rate limiting, and its connection,
/// for the certificate a peer signs in with; then, as the middleware learns them, the route
/// and who asks.
struct ListenerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: String
    let channel: any Channel
    /// Set by ``RoutingMiddleware``.
    var route: RouteMatch?
    /// Set by ``AuthenticationMiddleware``; nobody on an open route.
    var principal = Authentication.nobody.principal

    /// A route of the table and what the path gave its parameters.
    struct RouteMatch: Sendable {
        let route: Route
        let action: Route.Action
        let parameters: [Route.Parameter: String]
        /// `{db}`, parsed once.
        let keyspace: Keyspace?
    }

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        channel = source.channel
    }

    /// The fingerprint of the certificate the client presented in the TLS handshake; nil without one (or without TLS).
    /// The connection's ``PeerPresenceHandler`` computed it once, before its first request.
    func clientFingerprint() async -> String? {
        let channel = channel
        return try? await channel.eventLoop.submit { () -> String? in
            try channel.pipeline.syncOperations.handler(type: PeerPresenceHandler.self).fingerprint
        }.get()
    }
}

extension CouchError {
    var httpStatus: HTTPResponse.Status { HTTPResponse.Status(code: status) }
}

enum HTTP {
    static let json = "application/json"

    /// A JSON response; CouchDB clients insist on the content type, on errors too.
    static func json(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = json
        return Response(status: status, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ value: DocumentValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(value.toJSON(), status: status, headers: headers)
    }

    static func error(_ e: CouchError, headers: HTTPFields = [:]) -> Response {
        json(e.body, status: e.httpStatus, headers: headers)
    }

    static let ok: DocumentValue = ["ok": true]

    /// An HTTP date (RFC 9110's IMF-fixdate), as `Expires` and CouchDB's replication history write it.
    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// Query-string options with CouchDB's conventions: booleans as
/// `true`/`false` (any case), JSON-encoded keys.
struct QueryOptions {
    let parameters: [String: String]

    init(_ uri: URI) {
        var p: [String: String] = [:]
        for (k, v) in uri.queryParameters {
            let key = String(k).removingPercentEncoding ?? String(k)
            p[key] = String(v)
        }
        parameters = p
    }

    subscript(_ name: String) -> String? { parameters[name] }

    func bool(_ name: String, default value: Bool = false) throws -> Bool {
        guard let raw = parameters[name] else { return value }
        switch raw.lowercased() {
        case "true", "1", "": return true
        case "false", "0": return false
        default: throw CouchError.badRequest("Invalid boolean parameter: \(name)=\(raw)")
        }
    }

    func int(_ name: String) throws -> Int? {
        guard let raw = parameters[name] else { return nil }
        guard let i = Int(raw), i >= 0 else { throw CouchError.badRequest("Invalid integer parameter: \(name)=\(raw)") }
        return i
    }

    /// A JSON-valued parameter (`startkey`, `keys`, `open_revs`, ...).
    func json(_ name: String) throws -> DocumentValue? {
        guard let raw = parameters[name] else { return nil }
        do {
            return try DocumentValue(json: raw)
        } catch {
            throw CouchError.badRequest("Invalid JSON in parameter \(name): \(error)")
        }
    }
}

extension Request {
    /// The body as JSON, at most `limit` bytes (413 beyond).
    func jsonBody(limit: Int) async throws -> DocumentValue {
        let text = try await textBody(limit: limit)
        guard !text.isEmpty else { throw CouchError.badRequest("Request body is empty; expected JSON") }
        do {
            return try DocumentValue(json: text)
        } catch let e as StoreError {
            throw CouchError.badRequest("invalid UTF-8 JSON: \(e)")
        }
    }

    func jsonObject(limit: Int) async throws -> [String: DocumentValue] {
        guard case .dictionary(let d) = try await jsonBody(limit: limit) else {
            throw CouchError.badRequest("Request body must be a JSON object")
        }
        return d
    }

    /// The body as text; invalid UTF-8 is refused (decoding would store U+FFFD in its place).
    func textBody(limit: Int) async throws -> String {
        let bytes = try await bytesBody(limit: limit)
        guard let text = String(validating: bytes.readableBytesView, as: UTF8.self) else {
            throw CouchError.badRequest("the request body is not valid UTF-8")
        }
        return text
    }

    /// The body, decoded when it is gzip-encoded: at most `limit` bytes either way (413 beyond).
    /// - Throws: 415 for another `Content-Encoding`; 400 for gzip data that cannot be decoded.
    func bytesBody(limit: Int) async throws -> ByteBuffer {
        let coding = try ContentCoding(self)
        let bytes: ByteBuffer
        do {
            bytes = try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw CouchError.tooLarge("Request body is larger than \(limit) bytes")
        }
        return coding == .gzip ? try GzipDecoder.decode(bytes, limit: limit) : bytes
    }
}

extension SocketAddress {
    var ipAddress: String? {
        switch self {
        case .v4(let a): return a.host
        case .v6(let a): return a.host
        default: return nil
        }
    }
}
