import ArgumentParser
import SyncNodeStore
import SyncNodeSync

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
        try node.withCollection(keyspace, create: false) { _, collection in
            var missing = 0
            for id in ids {
                var purged = true
                do {
                    try collection.purge(id: id)
                } catch StoreError.notFound {
                    purged = false
                    missing += 1
                }
                Output.line(["id": .string(id), "purged": .bool(purged)])
            }
            if missing > 0 { throw CLIError.user("\(missing) of \(ids.count) IDs named no document in \(keyspace)") }
        }
    }
}
