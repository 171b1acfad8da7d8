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
        if !create, !Database.exists(name: name, directory: directoryURL) {
            throw CLIError.user("no database '\(name)' in \(directoryURL.path)")
        }
        return try Database(name: name, config: DatabaseConfiguration(directory: directoryURL))
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

    /// Opens the keyspace's collection; creates it only when `create` is set.
    func collection(_ keyspace: Keyspace, create: Bool) throws -> (Database, DocumentCollection) {
        let db = try open(database: keyspace.database, create: create)
        if create {
            return (db, try db.createCollection(name: keyspace.collectionName, scope: keyspace.scopeName))
        }
        guard let c = try db.collection(name: keyspace.collectionName, scope: keyspace.scopeName) else {
            try? db.close()
            throw CLIError.user("no collection '\(keyspace.scopeName).\(keyspace.collectionName)' in database '\(keyspace.database)'")
        }
        return (db, c)
    }
}
