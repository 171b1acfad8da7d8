import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a document's current body with _id and _rev.",
        discussion: "Example:\n  syncnode get default greeting")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The document ID.") var id: String

    func run() throws {
        let (db, _, doc) = try node.document(keyspace, id: id)
        defer { try? db.close() }
        Output.line(doc.withMetadata())
    }
}

extension Document {
    /// The body plus `_id` and `_rev`, as the CLI prints and exports it.
    func withMetadata() -> [String: DocumentValue] {
        var body: [String: DocumentValue] = [:]
        for key in keys { body[key] = documentValue(forKey: key) }
        body["_id"] = .string(id)
        body["_rev"] = .string(revisionID ?? "")
        return body
    }
}
