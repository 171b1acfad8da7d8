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
        Output.line([
            "node": .string(directory.uuid), "directory": .string(directory.url.path),
            "fingerprint": try directory.existingTLSIdentity().map { .string($0.fingerprint) } ?? .null,
        ])
        for name in directory.databaseNames() {
            let db = try node.open(database: name, create: false)
            defer { try? db.close() }
            let collections: [DocumentValue] = try db.allCollections().map { collection in
                let indexes: [DocumentValue] = try collection.indexDefinitions.map { ["name": .string($0.name), "definition": IndexCommand.describe($0.definition)] }
                return [
                    "collection": .string(collection.fullName), "documents": .int(Int64(try collection.count)),
                    "deleted": .int(Int64(try collection.deletedCount())), "last_sequence": .int(try collection.lastSequence()),
                    "indexes": .array(indexes),
                ]
            }
            let size = db.size()
            Output.line([
                "database": .string(name), "file_bytes": .int(Int64(size.file)), "blob_bytes": .int(Int64(size.blobs)),
                "revs_limit": .int(Int64(db.revsLimit)), "collections": .array(collections),
            ])
        }
    }
}
