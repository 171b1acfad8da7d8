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
            let reaping = try tombstones(of: db, directory: directory)
            let collections: [DocumentValue] = try db.allCollections().map { collection in
                let indexes: [DocumentValue] = try collection.indexDefinitions.map { ["name": .string($0.name), "definition": IndexCommand.describe($0.definition)] }
                var entry: [String: DocumentValue] = [
                    "collection": .string(collection.fullName), "documents": .int(Int64(try collection.count)),
                    "deleted": .int(Int64(try collection.deletedCount())), "last_sequence": .int(try collection.lastSequence()),
                    "indexes": .array(indexes),
                ]
                entry["tombstone_reaping"] = reaping[collection.fullName]
                return .dictionary(entry)
            }
            let size = db.size()
            Output.line([
                "database": .string(name), "file_bytes": .int(Int64(size.file)), "blob_bytes": .int(Int64(size.blobs)),
                "revs_limit": .int(Int64(db.revsLimit)), "collections": .array(collections),
            ])
        }
    }

    /// Per collection, under the tombstone TTL the last `serve --tombstone-ttl` set (none: empty):
    /// tombstones past it, those still waiting, and the peers that hold them.
    private func tombstones(of db: Database, directory: NodeDirectory) throws -> [String: DocumentValue] {
        guard let ttl = try db.recordedTombstoneTimeToLive() else { return [:] }
        let policy = TombstonePolicy(timeToLive: ttl, horizon: CheckpointHorizon(trust: try directory.trustedPeers()))
        var out: [String: DocumentValue] = [:]
        for report in try db.tombstoneReport(under: policy) {
            out[report.collection] = [
                "ttl_seconds": .int(ttl.components.seconds), "expired": .int(Int64(report.expired)),
                "waiting": .int(Int64(report.waiting)), "held_by": .array(report.holders.map { .string($0) }),
            ]
        }
        return out
    }
}
