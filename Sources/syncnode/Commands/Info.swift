import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe the node as JSON lines: its identity, then each database with its size, revision limit and collections (counts, last sequence, indexes).",
        discussion: "Reads only; safe beside a running `serve`.\n\nExample:\n  syncnode --dir ~/notes info")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        // The identity is made by the first serve: info does not make one.
        let hasIdentity = FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(".node/tls").path)
        Output.line([
            "node": .string(directory.uuid), "directory": .string(directory.url.path),
            "fingerprint": hasIdentity ? .string(try directory.tlsIdentity().fingerprint) : .null,
        ])
        for name in directory.databaseNames() {
            let db = try node.open(database: name, create: false)
            defer { try? db.close() }
            var collections: [DocumentValue] = []
            for scope in try db.scopes() {
                for collection in try scope.collections() {
                    let indexes: [DocumentValue] = try collection.indexDefinitions.map { ["name": .string($0.name), "definition": IndexCommand.describe($0.definition)] }
                    collections.append([
                        "collection": .string(collection.fullName), "documents": .int(Int64(try collection.count)),
                        "deleted": .int(Int64(try collection.deletedCount())), "last_sequence": .int(try collection.lastSequence()),
                        "indexes": .array(indexes),
                    ])
                }
            }
            let size = db.size()
            Output.line([
                "database": .string(name), "file_bytes": .int(Int64(size.file)), "blob_bytes": .int(Int64(size.blobs)),
                "revs_limit": .int(Int64(db.revsLimit)), "collections": .array(collections),
            ])
        }
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reclaim space in a database: drop old revisions' bodies, delete unreferenced blobs (older than ten minutes), vacuum; prints {\"database\",\"before\",\"after\",\"seconds\"}.",
        discussion: "Runs beside a running `serve`, whose writes wait for it up to 10 s each (a long compaction of a busy node makes some fail: compact when it is quiet). Without a name, compacts every database.\n\nExample:\n  syncnode compact default")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "The databases (default: all).") var databases: [String] = []

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let names = databases.isEmpty ? directory.databaseNames() : databases
        for (number, name) in names.enumerated() {
            let db = try node.open(database: name, create: false)
            defer { try? db.close() }
            let before = db.size().total
            let start = Date()
            Output.progress("compact: \(name) (\(number + 1) of \(names.count)), \(before / 1_000_000) MB...")
            try db.compact()
            Output.line([
                "database": .string(name), "before": .int(Int64(before)), "after": .int(Int64(db.size().total)),
                "seconds": .double((Date().timeIntervalSince(start) * 1000).rounded() / 1000),
            ])
        }
    }
}

struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forget documents entirely, as if never written: no tombstone is kept, so the purge does not replicate; prints {\"id\",\"purged\"} per ID.",
        discussion: "To remove a document everywhere, delete it (`syncnode delete`): deletions replicate, purges do not.\n\nExample:\n  syncnode purge default draft-1 draft-2")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The document IDs.") var ids: [String]

    func validate() throws {
        if ids.isEmpty { throw ValidationError("name at least one document ID") }
    }

    func run() throws {
        let (db, collection) = try node.collection(keyspace, create: false)
        defer { try? db.close() }
        var missing = 0
        for id in ids {
            let exists = try !collection.leafDocuments(id: id).isEmpty
            if exists { try collection.purge(id: id) } else { missing += 1 }
            Output.line(["id": .string(id), "purged": .bool(exists)])
        }
        if missing > 0 { throw CLIError.user("\(missing) of \(ids.count) IDs named no document in \(keyspace)") }
    }
}
