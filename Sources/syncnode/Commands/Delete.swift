import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a document (a tombstone that replicates); prints {\"id\",\"rev\"}.",
        discussion: "Example:\n  syncnode delete default greeting")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The document ID.") var id: String

    func run() throws {
        let (db, collection, doc) = try node.document(keyspace, id: id)
        defer { try? db.close() }
        try collection.delete(doc)
        let rev = try collection.revisionAfterDelete(id: id)
        Output.line(["id": .string(id), "rev": .string(rev)])
    }
}

extension DocumentCollection {
    /// The tombstone's revision ID after a delete.
    func revisionAfterDelete(id: String) throws -> String {
        guard let rev = try revision(id: id)?.rev else { throw CLIError.user("document '\(id)' vanished") }
        return rev
    }
}
