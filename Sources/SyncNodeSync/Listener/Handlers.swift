import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Logging
import SyncNodeStore

/// The CouchDB endpoints, dispatched on the path's segments:
/// `/`, `/_x`, `/{keyspace}`, `/{keyspace}/_x`, `/{keyspace}/_local/{id}`,
/// `/{keyspace}/{docid}` and `/{keyspace}/{docid}/{attachment}`.
struct Handlers: Sendable {
    let config: ListenerConfiguration
    let replications: ServerReplications
    let compactions: Compactions
    let metrics: NodeMetrics
    /// The listener's bound port (`_replicate` recognizes URLs that name this node).
    let port: @Sendable () -> Int?
    /// The listener's connection counts, for the metrics.
    let status: @Sendable () -> ListenerStatus
    /// The identity the listener serves (nil without TLS), for `/_node/info`.
    let tlsIdentity: @Sendable () -> TLSIdentity?
    /// Tells feeds and jobs that who may do what changed.
    let accessWatch: AccessWatch
    /// What large bodies in answers being written may hold at once.
    let answerBudget: AnswerBudget
    /// The disk that `_query` results being written hold.
    let querySpills = QuerySpill.Usage()
    let logger: Logger

    var directory: NodeDirectory { config.directory }
    var bodyLimit: Int { config.maxRequestBodySize }

    /// `connection` is the request's, for work that stops when its client leaves (see ``ClientDeparture``).
    func handle(_ request: Request, segments: [String], principal: Principal, connection: (any Channel)? = nil) async throws -> Response {
        guard let first = segments.first else { return try welcome(request) }
        if first.hasPrefix("_") {
            return try await server(request, endpoint: first, rest: Array(segments.dropFirst()), principal: principal, connection: connection)
        }
        let keyspace = first
        try authorize(request, keyspace: keyspace, rest: Array(segments.dropFirst()), principal: principal)
        // What a collection's validator is told about who writes.
        let author = WriteAuthor(name: principal.name, roles: principal.roles, origin: .client)
        guard segments.count > 1 else { return try await database(request, keyspace: keyspace, author: author) }
        let second = segments[1]
        if second == "_local" {
            guard segments.count > 2 else { throw CouchError.notFound() }
            return try await localDocument(request, keyspace: keyspace, id: segments.dropFirst(2).joined(separator: "/"))
        }
        // `/{db}/_index/{ddoc}/json/{name}`, the ddoc with or without its `_design/`.
        if second == "_index", segments.count >= 5, segments[segments.count - 2] == "json",
           segments.count == 5 || (segments.count == 6 && segments[2] == "_design") {
            return try deleteIndex(request, keyspace: keyspace, name: segments[segments.count - 1])
        }
        if second == "_security" {
            guard segments.count == 2 else { throw CouchError.notFound() }
            return try await security(request, keyspace: keyspace)
        }
        if second.hasPrefix("_") {
            guard segments.count == 2 else { throw CouchError.notFound() }
            return try await databaseEndpoint(request, keyspace: keyspace, endpoint: second, author: author, scope: principal.scope)
        }
        if segments.count == 2 { return try await document(request, keyspace: keyspace, id: second, author: author) }
        return try await attachment(request, keyspace: keyspace, id: second, name: segments.dropFirst(2).joined(separator: "/"), author: author)
    }

    // MARK: - Keyspaces

    /// `NAME` or `NAME.SCOPE.COLLECTION`.
    static func parse(keyspace: String) throws -> (database: String, scope: String?, collection: String?) {
        guard let parsed = Keyspace(keyspace) else {
            throw CouchError(status: 400, error: "illegal_database_name", reason: "'\(keyspace)' is not NAME or NAME.SCOPE.COLLECTION")
        }
        return (parsed.database, parsed.scope, parsed.collection)
    }

    func isServed(_ database: String) -> Bool {
        config.databases.map { $0.contains(database) } ?? true
    }

    /// The collection a keyspace names; 404 when it does not exist.
    func collection(_ keyspace: String) throws -> DocumentCollection {
        let (name, scope, collection) = try Self.parse(keyspace: keyspace)
        guard isServed(name), let db = try directory.database(name) else {
            throw CouchError.notFound("Database does not exist.")
        }
        guard let c = try db.collection(name: collection ?? Names.defaultCollection, scope: scope) else {
            throw CouchError.notFound("Database does not exist.")
        }
        return c
    }

    func checkWritable() throws {
        if config.readOnly { throw CouchError.forbidden("This node is read-only.") }
    }

    static func methodNotAllowed(_ allowed: String) -> CouchError { .methodNotAllowed(allowed) }

    static func isRead(_ request: Request) -> Bool { request.method == .get || request.method == .head }
}
