import SyncNodeStore
/// What a URL's first path segment (or the CLI's keyspace argument) names:
/// `NAME`, a database's default collection, or `NAME.SCOPE.COLLECTION`.
package struct Keyspace: Sendable, Equatable, CustomStringConvertible {
    package let database: String
    /// Nil when only a database is named.
    package let scope: String?
    /// Nil when only a database is named.
    package let collection: String?

    /// Nil when `text` is neither form.
    package init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: (database, scope, collection) = (parts[0], nil, nil)
        case 3: (database, scope, collection) = (parts[0], parts[1], parts[2])
        default: return nil
        }
    }

    /// The keyspace that names `collection`: its database alone for a default collection.
    package init(_ collection: DocumentCollection) {
        let isDefault = collection.scopeName == Names.defaultScope && collection.name == Names.defaultCollection
        self.init(database: collection.database.name, scope: isDefault ? nil : collection.scopeName,
                  collection: isDefault ? nil : collection.name)
    }

    /// As it is written: `default`, or `default.app.notes`.
    package var name: String { scope == nil ? database : description }

    /// The default collection of the database `default`, which a node always serves.
    package static let defaultDatabase = Keyspace(database: "default", scope: nil, collection: nil)

    private init(database: String, scope: String?, collection: String?) {
        (self.database, self.scope, self.collection) = (database, scope, collection)
    }

    /// Whether one of `entries` names this keyspace: a database name covers all its collections,
    /// a full keyspace that collection alone. Compared as keyspaces, not text:
    /// `db._default._default` is `db`'s default collection.
    package func isCovered(by entries: [String]) -> Bool {
        entries.contains { entry in
            guard let named = Keyspace(entry) else { return false }
            return named.scope == nil ? named.database == database : named.description == description
        }
    }

    package var scopeName: String { scope ?? Names.defaultScope }
    package var collectionName: String { collection ?? Names.defaultCollection }
    package var description: String { "\(database).\(scopeName).\(collectionName)" }
}
