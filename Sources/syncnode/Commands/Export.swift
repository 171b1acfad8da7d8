import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print every document as JSON lines (with _id and _rev), in ID order.",
        discussion: "Example:\n  syncnode export app.work.tasks > tasks.jsonl")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace

    func run() throws {
        let (db, collection) = try node.collection(keyspace, create: false)
        defer { try? db.close() }
        var after: String? = nil
        while true {
            let page = try collection.documents(afterID: after, limit: 1000)
            for doc in page { Output.line(doc.withMetadata()) }
            guard let last = page.last else { break }
            after = last.id
        }
    }
}
