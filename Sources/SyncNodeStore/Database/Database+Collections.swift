import Foundation
import GRDB

/// A database's scopes and collections: the default one, made, looked up, listed and deleted.
extension Database {
    /// The `_default` collection of the `_default` scope, which always exists.
    /// - Throws: ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``, or
    ///   ``StoreError/notFound(_:_:)`` (``StoreError/Subject/collection``) should the schema lack it.
    public func defaultCollection() throws -> DocumentCollection {
        guard let c = try collection(name: Names.defaultCollection, scope: Names.defaultScope) else {
            throw StoreError.notFound(.collection, "the default collection")
        }
        return c
    }

    /// Creates a collection (and its scope) or returns the existing one.
    /// - parameters:
    ///   - name: the collection's name.
    ///   - scope: its scope; nil means `_default`.
    /// - Throws: ``StoreError/invalidName(_:reason:)`` when the collection or scope name breaks Couchbase's
    ///   rules (1-251 characters from `A-Z a-z 0-9 _ - %`, not starting with `_` or `%` except `_default`);
    ///   ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    @discardableResult
    public func createCollection(name: String, scope: String? = nil) throws -> DocumentCollection {
        let scope = scope ?? Names.defaultScope
        try Names.validateCollectionOrScope(name, kind: "collection")
        try Names.validateCollectionOrScope(scope, kind: "scope")
        if let existing = try collection(name: name, scope: scope) { return existing }
        try write { db in
            try Schema.createCollection(db, scope: scope, name: name)
            schemaChanges(db)
        }
        guard let created = try collection(name: name, scope: scope) else {
            throw StoreError.storage("collection \(scope).\(name) vanished after creation")
        }
        logger.info("created collection", metadata: ["collection": "\(scope).\(name)"])
        return created
    }

    /// The collection, or nil when it does not exist.
    ///
    /// The database hands out one object per collection, so repeated calls return the same instance.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func collection(name: String, scope: String? = nil) throws -> DocumentCollection? {
        let scope = scope ?? Names.defaultScope
        let key = "\(scope).\(name)"
        try checkOpen()
        while true {
            let (cached, generation) = state.withLock { ($0.collections[key], $0.schemaGeneration) }
            if let cached { return cached }
            guard let id = try read({ db in try Schema.collectionID(db, scope: scope, name: name) }) else { return nil }
            let collection = DocumentCollection(database: self, scope: scope, name: name, tableID: id)
            let kept = state.withLock { s -> DocumentCollection? in
                if let cached = s.collections[key] { return cached }
                // The schema changed since the read (a deletion committed): what it found may be
                // gone, and cached it would stand for the name for good. Read again.
                guard s.schemaGeneration == generation else { return nil }
                s.collections[key] = collection
                return collection
            }
            if let kept { return kept }
        }
    }

    /// The collections of a scope (nil: `_default`), sorted by name; empty for an unknown scope.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func collections(scope: String? = nil) throws -> [DocumentCollection] {
        let scope = scope ?? Names.defaultScope
        let names = try read { db in try Schema.collectionNames(db, scope: scope) }
        return try names.compactMap { try collection(name: $0, scope: scope) }
    }

    /// Deletes a collection with all its documents. The default collection cannot be deleted.
    ///
    /// Objects for the deleted collection then throw ``StoreError/collectionDeleted(_:)``.
    /// - Throws: ``StoreError/invalidName(_:reason:)`` for the default collection;
    ///   ``StoreError/notFound(_:_:)`` (``StoreError/Subject/collection``) when it does not exist;
    ///   ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func deleteCollection(name: String, scope: String? = nil) throws {
        let scope = scope ?? Names.defaultScope
        if scope == Names.defaultScope, name == Names.defaultCollection {
            throw StoreError.invalidName(name, reason: "the default collection cannot be deleted")
        }
        guard let collection = try collection(name: name, scope: scope) else {
            throw StoreError.notFound(.collection, "collection \(scope).\(name)")
        }
        try write { db in
            try Schema.dropCollection(db, id: collection.tableID)
            digests.forget(collectionID: collection.tableID)
            // Uncached before the commit announces it, so queries compiling then do not find it
            // (after a rollback the next lookup only reads it again).
            _ = state.withLock { $0.collections.removeValue(forKey: "\(scope).\(name)") }
            schemaChanges(db)
        }
        // A lookup that read the collection before the commit may have cached another object for it meanwhile.
        let raced = state.withLock { s -> DocumentCollection? in
            guard let cached = s.collections["\(scope).\(name)"], cached.tableID == collection.tableID else { return nil }
            return s.collections.removeValue(forKey: "\(scope).\(name)")
        }
        raced?.markDeleted()
        collection.markDeleted()
        logger.info("deleted collection", metadata: ["collection": "\(scope).\(name)"])
    }

    /// The scopes that hold at least one collection (`_default` always).
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func scopes() throws -> [Scope] {
        try read { db in try Schema.scopeNames(db) }.map { Scope(name: $0, database: self) }
    }

    /// Every collection of every scope, scope by scope.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func allCollections() throws -> [DocumentCollection] {
        try scopes().flatMap { try $0.collections() }
    }

    /// The scope, or nil when it holds no collection.
    /// - Throws: ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func scope(name: String) throws -> Scope? {
        try scopes().first { $0.name == name }
    }
}
