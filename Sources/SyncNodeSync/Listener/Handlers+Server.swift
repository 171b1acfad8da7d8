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
        if endpoint == "_node", rest == ["peers"], let presence = config.peerPresence {
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            return HTTP.json(presence())
        }
        if endpoint == "_node", rest == ["keyspaces"] {
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            var listed = try keyspaces(readableBy: principal)
            if let offered = config.offeredKeyspaces.map({ Set($0()) }) { listed = listed.filter(offered.contains) }
            return HTTP.json(.array(listed.map { .string($0) }))
        }
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

    /// What a peer may replicate here (`GET /_node/keyspaces`, for peers whose DNS-SD record
    /// cannot list them all or who paired by URL): each database the asker may read, and
    /// `db.scope.collection` for its other collections.
    private func keyspaces(readableBy principal: Principal) throws -> [String] {
        var out: [String] = []
        for name in directory.databaseNames().filter(isServed) where try access(of: principal, to: name) >= .reader {
            out.append(name)
            guard let db = try directory.database(name) else { continue }
            for scope in try db.scopes() {
                for collection in try scope.collections() where collection.fullName != "_default._default" {
                    out.append("\(name).\(collection.fullName)")
                }
            }
        }
        return out
    }
}
