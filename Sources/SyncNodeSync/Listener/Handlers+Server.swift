import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncNodeStore

extension Handlers {
    /// `GET /`: the welcome, with the node's stable UUID (clients key checkpoints on it).
    func welcome(_ request: Request) throws -> Response {
        guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
        var welcome: [String: DocumentValue] = [
            "couchdb": "Welcome", "vendor": ["name": "SyncNode", "version": .string(Self.version)], "version": "3.3.3",
            "uuid": .string(directory.uuid), "features": ["access-ready"],
        ]
        // The node's DNS-SD name, for peers that paired by URL (a URL carries none).
        if let name = config.console?.name { welcome["name"] = .string(name) }
        return HTTP.json(.dictionary(welcome))
    }

    /// The version the welcome and `/_node/info` report.
    static let version = "0.1"

    func server(_ request: Request, endpoint: String, rest: [String], principal: Principal, connection: (any Channel)?) async throws -> Response {
        if endpoint == "_node" { return try await node(request, rest: rest, principal: principal) }
        if endpoint == "_scheduler", rest == ["jobs"] { return try schedulerJobs(request, principal: principal) }
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
            return try await replicate(request, principal: principal, connection: connection)
        case "_active_tasks":
            guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
            try requireServerAdmin(principal)
            return HTTP.json(.array(replications.tasks.running.map(\.json)))
        default:
            throw CouchError.notFound()
        }
    }

    /// `GET /_scheduler/jobs`: the running replications in the scheduler's shape.
    private func schedulerJobs(_ request: Request, principal: Principal) throws -> Response {
        guard Self.isRead(request) else { throw Self.methodNotAllowed("GET,HEAD") }
        try requireServerAdmin(principal)
        let iso = ISO8601DateFormatter()
        let jobs: [DocumentValue] = replications.tasks.running.map { task in
            var info = task.json
            if case .dictionary(var fields) = info {
                for key in ["type", "replication_id", "source", "target", "started_on", "updated_on"] { fields[key] = nil }
                info = .dictionary(fields)
            }
            return [
                "database": .null, "id": .string(task.id), "doc_id": .null, "node": .string(directory.uuid),
                "source": .string(task.source), "target": .string(task.target), "user": .null,
                "start_time": .string(iso.string(from: task.startedOn)),
                "last_updated": .string(iso.string(from: task.updatedOn)),
                "history": [["timestamp": .string(iso.string(from: task.startedOn)), "type": "started"]],
                "info": info,
            ]
        }
        return HTTP.json(["total_rows": .int(Int64(jobs.count)), "offset": 0, "jobs": .array(jobs)])
    }

    func requireServerAdmin(_ principal: Principal) throws {
        guard principal.isServerAdmin else {
            throw CouchError.forbidden("This is for server admins; \(principal.description) is not one.")
        }
    }
}
