import SyncNodeStore

/// A collection's address on a node, as URLs, DNS-SD records, `GET /_node/keyspaces`, peer
/// scopes and the CLI write it: `NAME`, the default collection of database `NAME` (and, in a
/// share or a scope, all its collections), or `NAME.SCOPE.COLLECTION`.
///
/// Text is parsed into a keyspace once, where it comes in; inside, keyspaces travel as this type.
///
/// ```swift
/// let notes = Keyspace("default.app.notes")   // database "default", scope "app", collection "notes"
/// let whole = Keyspace.database("default")     // written "default"
/// ```
public struct Keyspace: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The database's name.
    public let database: String
    /// The scope's name; nil when only a database is named.
    public let scope: String?
    /// The collection's name; nil when only a database is named.
    public let collection: String?

    /// The keyspace written `text`; nil when it is neither `NAME` nor `NAME.SCOPE.COLLECTION`.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: (database, scope, collection) = (parts[0], nil, nil)
        case 3: (database, scope, collection) = (parts[0], parts[1], parts[2])
        default: return nil
        }
    }

    /// The keyspace that names `collection`: its database alone for a default collection.
    public init(_ collection: DocumentCollection) {
        let isDefault = collection.scopeName == Names.defaultScope && collection.name == Names.defaultCollection
        self.init(database: collection.database.name, scope: isDefault ? nil : collection.scopeName,
                  collection: isDefault ? nil : collection.name)
    }

    /// The keyspace of database `name` alone.
    public static func database(_ name: String) -> Keyspace {
        Keyspace(database: name, scope: nil, collection: nil)
    }

    /// As it is written: `default`, or `default.app.notes`.
    public var name: String { scope == nil ? database : qualifiedName }

    /// ``name``.
    public var description: String { name }

    /// Ordered by ``name``.
    public static func < (lhs: Keyspace, rhs: Keyspace) -> Bool { lhs.name < rhs.name }

    /// The default collection of the database `default`, which a node always serves.
    package static let defaultDatabase = Keyspace.database("default")

    private init(database: String, scope: String?, collection: String?) {
        (self.database, self.scope, self.collection) = (database, scope, collection)
    }

    /// Whether one of `entries` names this keyspace: a database alone covers all its collections,
    /// a full keyspace that collection alone. Compared as collections, not text:
    /// `db._default._default` is `db`'s default collection.
    public func isCovered(by entries: [Keyspace]) -> Bool {
        entries.contains { named in
            named.scope == nil ? named.database == database : named.qualifiedName == qualifiedName
        }
    }

    package var scopeName: String { scope ?? Names.defaultScope }
    package var collectionName: String { collection ?? Names.defaultCollection }
    /// `database.scope.collection`, the default collection's too.
    package var qualifiedName: String { "\(database).\(scopeName).\(collectionName)" }
}
