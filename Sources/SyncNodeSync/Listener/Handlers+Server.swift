import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncNodeStore

extension Handlers {
    /// `GET /`: the welcome, with the node's stable UUID (clients key checkpoints on it).
    func welcome() -> Response {
        var welcome: [String: DocumentValue] = [
            "couchdb": "Welcome", "vendor": ["name": "SyncNode", "version": .string(Self.version)], "version": "3.3.3",
            "uuid": .string(directory.uuid), "features": ["access-ready", .string(Self.multipartBulkGet)],
        ]
        // The node's DNS-SD name, for peers that paired by URL (a URL carries none).
        if let name = environment.console?.name { welcome["name"] = .string(name) }
        return HTTP.json(.dictionary(welcome))
    }

    /// The feature the welcome names when `_bulk_get` sends attachments as `multipart/mixed`
    /// (``bulkGet(_:collection:)``): a puller asks for a batch's attachments so only then.
    static let multipartBulkGet = "multipart-bulk-get"

    /// The version the welcome and `/_node/info` report.
    static let version = "0.1"

    /// `GET /_all_dbs`: only what the asker may read, since a database's name is not everyone's to know.
    func allDatabases(readableBy principal: Principal) throws -> Response {
        let names = try directory.databaseNames().filter(isServed).filter { try access(of: principal, to: $0) >= .reader }
        return HTTP.json(.array(names.map { .string($0) }))
    }

    /// `GET /_uuids?count=N` (at most 1000).
    func uuids(_ request: Request) throws -> Response {
        let count = min(try QueryOptions(request.uri).int("count") ?? 1, 1000)
        return HTTP.json(["uuids": .array((0..<count).map { _ in .string(WireID.random()) })])
    }

    /// `GET /_active_tasks`: the running replications.
    func activeTasks() -> Response {
        HTTP.json(.array(replications.tasks.running.map(\.json)))
    }

    /// `GET /_scheduler/jobs`: the running replications in the scheduler's shape.
    func schedulerJobs() -> Response {
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
}
