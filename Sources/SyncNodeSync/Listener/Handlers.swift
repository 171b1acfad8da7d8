import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Logging
import SyncNodeStore

/// What answers each route of ``RouteTable/listener``: the CouchDB endpoints and the node's own.
struct Handlers: Sendable {
    let config: ListenerConfiguration
    let environment: ListenerEnvironment
    /// Signs requests in; answers `/_session`.
    let authentication: Authentication
    /// Answers `/_node/redeem`.
    let redemption: InvitationRedemption
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

    // MARK: - Keyspaces

    /// The keyspace `text` names, `NAME` or `NAME.SCOPE.COLLECTION`; 400 otherwise.
    static func keyspace(_ text: String) throws -> Keyspace {
        guard let parsed = Keyspace(text) else {
            throw CouchError(status: 400, error: "illegal_database_name", reason: "'\(text)' is not NAME or NAME.SCOPE.COLLECTION")
        }
        return parsed
    }

    func isServed(_ database: String) -> Bool {
        config.databases.map { $0.contains(database) } ?? true
    }

    /// The collection a keyspace names; 404 when it does not exist.
    func collection(_ keyspace: Keyspace) throws -> DocumentCollection {
        guard isServed(keyspace.database), let db = try directory.database(keyspace.database) else {
            throw CouchError.notFound("Database does not exist.")
        }
        guard let c = try db.collection(name: keyspace.collectionName, scope: keyspace.scope) else {
            throw CouchError.notFound("Database does not exist.")
        }
        return c
    }

    func checkWritable() throws {
        if config.readOnly { throw CouchError.forbidden("This node is read-only.") }
    }

}
