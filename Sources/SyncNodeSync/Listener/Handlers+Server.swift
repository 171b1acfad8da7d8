import Foundation
import HTTPTypes
import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `GET /`: the welcome, with the node's stable UUID (clients key checkpoints on it).
    func welcome(_ request: Request) throws -> Response {
        guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
        return HTTP.json([
            "couchdb": "Welcome", "vendor": ["name": "SyncNode", "version": "0.1"], "version": "3.3.3",
            "uuid": .string(directory.uuid), "features": ["access-ready"],
        ])
    }

    func server(_ request: Request, endpoint: String, rest: [String]) async throws -> Response {
        guard rest.isEmpty else { throw CouchError.notFound() }
        switch endpoint {
        case "_all_dbs":
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            let names = directory.databaseNames().filter(isServed)
            return HTTP.json(.array(names.map { .string($0) }))
        case "_up":
            return HTTP.json(["status": "ok"])
        case "_uuids":
            let count = min(try QueryOptions(request.uri).int("count") ?? 1, 1000)
            return HTTP.json(["uuids": .array((0..<count).map { _ in .string(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")) })])
        case "_session":
            return try await session(request)
        case "_replicate":
            return try await replicate(request)
        default:
            throw CouchError.notFound()
        }
    }

    /// `/_session` as CouchDB answers it for clients that probe it. Auth is
    /// HTTP Basic on every request, so there is no cookie.
    private func session(_ request: Request) async throws -> Response {
        let user: DocumentValue
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
           let data = Data(base64Encoded: String(header.dropFirst(6))), let text = String(data: data, encoding: .utf8),
           let colon = text.firstIndex(of: ":") {
            user = .string(String(text[..<colon]))
        } else {
            user = .null
        }
        switch request.method {
        case .get, .head:
            return HTTP.json([
                "ok": true, "userCtx": ["name": user, "roles": config.authenticator == nil ? ["_admin"] : []],
                "info": ["authentication_handlers": ["basic"], "authenticated": "basic"],
            ])
        case .post:
            // The credentials were checked by the authentication step (or none are required).
            return HTTP.json(["ok": true, "name": user, "roles": []])
        case .delete:
            return HTTP.json(HTTP.ok)
        default:
            throw Self.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }
}
