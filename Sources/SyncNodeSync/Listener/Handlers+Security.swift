import Foundation
import HTTPTypes
import Hummingbird
import SyncNodeStore

/// Per-database access: each request needs the access its endpoint implies
/// (reading, writing, administering the database), which the database's
/// `_security` grants the principal.
extension Handlers {
    /// What `principal` may do with database `name` (a missing database is open, as a new one would be).
    func access(of principal: Principal, to name: String) throws -> DatabaseAccess {
        if principal.isServerAdmin { return .admin }
        if let scope = principal.scope, !scope.allows(database: name) { return .none }
        guard isServed(name), let db = try directory.database(name) else { return DatabaseSecurity().access(of: principal) }
        return try DatabaseSecurity.of(db).access(of: principal)
    }

    /// Throws 403 `forbidden` unless `principal` may make `request` on `keyspace` (`rest`: the path after it).
    func authorize(_ request: Request, keyspace: String, rest: [String], principal: Principal) throws {
        let database = try Self.parse(keyspace: keyspace).database
        if let scope = principal.scope, !scope.allows(keyspace: keyspace) {
            throw CouchError.forbidden("\(principal.description) may reach \(scope), not '\(keyspace)'.")
        }
        let needed = Self.accessNeeded(request.method, rest: rest)
        if needed == .serverAdmin {
            guard principal.isServerAdmin else {
                throw CouchError.forbidden("Only server admins may create or delete databases; \(principal.description) is not one.")
            }
            return
        }
        let granted = try access(of: principal, to: database)
        guard granted < needed.access else { return }
        switch granted {
        case .none: throw CouchError.forbidden("You are not allowed to access this db: \(principal.description) is not a member of '\(database)'.")
        case .reader where principal.scope?.access == .read: throw CouchError.forbidden("\(principal.description) may read '\(database)' but not write it (its scope is \(principal.scope?.description ?? "")).")
        case .reader: throw CouchError.forbidden("\(principal.description) may read '\(database)' but not write it (a reader in its _security).")
        case .writer, .admin: throw CouchError.forbidden("Only admins of '\(database)' may do this; \(principal.description) is not one.")
        }
    }

    /// Whether the asker of an answer that outlives its request (`current`: its sign-in as it
    /// would be now) may still have `needed` access to `keyspace`. Nil `current`: no sign-in to lose.
    func stillAllowed(_ current: (@Sendable () -> Principal?)?, keyspace: String, needed: DatabaseAccess = .reader) -> Bool {
        guard let current else { return true }
        guard let principal = current(), let database = Keyspace(keyspace)?.database else { return false }
        if let scope = principal.scope, !scope.allows(keyspace: keyspace) { return false }
        return ((try? access(of: principal, to: database)) ?? DatabaseAccess.none) >= needed
    }

    enum Needed: Equatable {
        case database(DatabaseAccess)
        case serverAdmin

        var access: DatabaseAccess {
            if case .database(let access) = self { return access }
            return .admin
        }
    }

    /// Database endpoints reached by POST that only read.
    private static let readingPosts: Set<String> = ["_all_docs", "_bulk_get", "_revs_diff", "_find", "_explain", "_query", "_changes", "_ensure_full_commit"]

    static func accessNeeded(_ method: HTTPRequest.Method, rest: [String]) -> Needed {
        let reading = method == .get || method == .head
        guard let first = rest.first else {
            if reading { return .database(.reader) }
            return method == .post ? .database(.writer) : .serverAdmin
        }
        switch first {
        case "_security", "_index", "_design", "_revs_limit", "_compact", "_purge": return .database(reading ? .reader : .admin)
        // Checkpoints are writes, as in CouchDB: a reader's replicator keeps its own (see ReplicationRun).
        case "_local": return .database(reading ? .reader : .writer)
        default:
            if reading || (method == .post && readingPosts.contains(first)) { return .database(.reader) }
            return .database(.writer)
        }
    }

    /// `GET /{db}/_security` and `PUT` (database admins): CouchDB's `admins` and `members`,
    /// plus `readers`, members who may read but not write.
    func security(_ request: Request, keyspace: String) async throws -> Response {
        let name = try Self.parse(keyspace: keyspace).database
        guard isServed(name), let db = try directory.database(name) else { throw CouchError.notFound("Database does not exist.") }
        switch request.method {
        case .get, .head:
            return HTTP.json(try DatabaseSecurity.of(db).json)
        case .put:
            try checkWritable()
            let security = try DatabaseSecurity(json: .dictionary(try await request.jsonObject(limit: bodyLimit)))
            try security.save(to: db)
            // Feeds and jobs of someone it drops end now.
            accessWatch.changed()
            // Whether it is advertised on the LAN may have changed.
            directory.databasesChanged()
            return HTTP.json(HTTP.ok)
        default:
            throw Self.methodNotAllowed("GET,HEAD,PUT")
        }
    }
}
