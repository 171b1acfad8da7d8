import Foundation
import SyncNodeSync

extension MeshConfiguration {
    /// The hub database a keyspace is replicated with: the database's name for its default
    /// collection (`shop` → `shop`), and `db$scope$collection` for another collection
    /// (`shop.sales.orders` → `shop$sales$orders`), since CouchDB has no collections.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the name is not one CouchDB takes: a
    ///   lowercase letter first, then lowercase letters, digits and `_ $ ( ) + - /`.
    public static func hubDatabase(for keyspace: Keyspace) throws -> String {
        let name = [keyspace.database, keyspace.scope, keyspace.collection].compactMap { $0 }.joined(separator: "$")
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+-/")
        guard let first = name.first, first.isLowercase, first.isASCII, name.allSatisfy(allowed.contains) else {
            throw SyncError.invalidConfiguration(
                "keyspace \(keyspace) would be the hub database '\(name)', which CouchDB refuses: a hub database starts with a lowercase letter and holds only lowercase letters, digits and _$()+-/ (rename the database or collection, or leave it out of `shared`)")
        }
        return name
    }

    /// Refuses a hub URL that names no server (`http(s)://host[:port]`, no database in the path).
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` saying what a hub URL looks like.
    public static func checkHub(_ url: URL) throws {
        guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host?.isEmpty == false,
              url.path.isEmpty || url.path == "/" else {
            throw SyncError.invalidConfiguration(
                "'\(WireURL.redacted(url))' is not a CouchDB server URL like http://admin:secret@10.0.0.5:5984 (no database)")
        }
    }

    /// ``checkHub(_:)`` for each of ``hubs``.
    func checkHubs() throws {
        for url in hubs { try Self.checkHub(url) }
    }
}
