/// A namespace of collections inside a database (`_default` always exists).
public struct Scope: Sendable {
    /// The scope's name.
    public let name: String
    let database: Database

    /// The collection, or nil when it does not exist in this scope.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func collection(name: String) throws -> DocumentCollection? {
        try database.collection(name: name, scope: self.name)
    }

    /// The scope's collections, sorted by name.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func collections() throws -> [DocumentCollection] {
        try database.collections(scope: name)
    }
}
