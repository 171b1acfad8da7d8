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

    func server(_ request: Request, endpoint: String, rest: [String], principal: Principal) async throws -> Response {
        guard rest.isEmpty else { throw CouchError.notFound() }
        switch endpoint {
        case "_all_dbs":
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            // Only what the asker may read: a database's name is not everyone's to know.
            let names = try directory.databaseNames().filter(isServed).filter { try access(of: principal, to: $0) >= .reader }
            return HTTP.json(.array(names.map { .string($0) }))
        case "_up":
            return HTTP.json(["status": "ok"])
        case "_uuids":
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            let count = min(try QueryOptions(request.uri).int("count") ?? 1, 1000)
            return HTTP.json(["uuids": .array((0..<count).map { _ in .string(WireID.random()) })])
        case "_replicate":
            return try await replicate(request, principal: principal)
        default:
            throw CouchError.notFound()
        }
    }
}
