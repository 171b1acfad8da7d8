import Foundation
import Hummingbird
import SyncNodeStore

/// `/{db}/_security`: CouchDB's `admins` and `members`, plus `readers`, members who may read
/// but not write. Each route's ``Route/Access`` is checked against it.
extension Handlers {
    /// `GET /{db}/_security`.
    func security(of keyspace: Keyspace) throws -> Response {
        HTTP.json(try DatabaseSecurity.of(securedDatabase(keyspace)).json)
    }

    /// `PUT /{db}/_security` (database admins).
    func setSecurity(_ request: Request, of keyspace: Keyspace) async throws -> Response {
        let db = try securedDatabase(keyspace)
        let security = try DatabaseSecurity(json: .dictionary(try await request.jsonObject(limit: bodyLimit)))
        try security.save(to: db)
        // Feeds and jobs of someone it drops end now.
        accessWatch.changed()
        // Whether it is advertised on the LAN may have changed.
        directory.databasesChanged()
        return HTTP.json(HTTP.ok)
    }

    private func securedDatabase(_ keyspace: Keyspace) throws -> SyncNodeStore.Database {
        let name = keyspace.database
        guard isServed(name), let db = try directory.database(name) else { throw CouchError.notFound("Database does not exist.") }
        return db
    }
}
