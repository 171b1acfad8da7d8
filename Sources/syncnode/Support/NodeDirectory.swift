import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

/// The `--dir` option shared by every command: the node's data directory.
struct NodeOptions: ParsableArguments {
    @Option(name: .customLong("dir"), help: "The node's data directory (default: $SYNCNODE_DIR, else ./syncnode-data).")
    var directory: String?

    var directoryURL: URL {
        let path = directory ?? ProcessInfo.processInfo.environment["SYNCNODE_DIR"] ?? "syncnode-data"
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    func open(database name: String, create: Bool = true) throws -> Database {
        try Self.open(database: name, in: directoryURL, create: create)
    }

    /// Opens database `name` in the data directory `directory` (a compared directory, not only
    /// --dir's); exit 1 when it is missing and `create` is not set.
    static func open(database name: String, in directory: URL, create: Bool = false) throws -> Database {
        if !create, !Database.exists(name: name, directory: directory) {
            throw CLIError.user("no database '\(name)' in \(directory.path)")
        }
        return try Database(name: name, config: DatabaseConfiguration(directory: directory))
    }

    /// Opens the keyspace's collection and the document `id` in it; exit 1 when it is missing.
    func document(_ keyspace: Keyspace, id: String) throws -> (Database, DocumentCollection, Document) {
        let (db, collection) = try self.collection(keyspace, create: false)
        guard let doc = try collection.document(id: id) else {
            try? db.close()
            throw CLIError.user("no document '\(id)' in \(keyspace)")
        }
        return (db, collection, doc)
    }

    /// Runs `body` on the keyspace's collection (made only when `create` is set), and closes its
    /// database after, however `body` ends.
    func withCollection<T>(_ keyspace: Keyspace, create: Bool, _ body: (Database, DocumentCollection) throws -> T) throws -> T {
        let (db, collection) = try self.collection(keyspace, create: create)
        defer { try? db.close() }
        return try body(db, collection)
    }

    /// Opens the keyspace's collection; creates it only when `create` is set.
    func collection(_ keyspace: Keyspace, create: Bool) throws -> (Database, DocumentCollection) {
        let db = try open(database: keyspace.database, create: create)
        if create {
            return (db, try db.createCollection(name: keyspace.collectionName, scope: keyspace.scopeName))
        }
        return (db, try Self.collection(keyspace, in: db))
    }

    /// The keyspace's existing collection in `db` (closed when it has none); exit 1 when missing.
    static func collection(_ keyspace: Keyspace, in db: Database) throws -> DocumentCollection {
        guard let c = try db.collection(name: keyspace.collectionName, scope: keyspace.scopeName) else {
            try? db.close()
            throw CLIError.user("no collection '\(keyspace.scopeName).\(keyspace.collectionName)' in database '\(keyspace.database)'")
        }
        return c
    }
}
