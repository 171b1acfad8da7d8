import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or update a document (last write wins); prints {\"id\",\"rev\"}.",
        discussion: "Example:\n  syncnode put default greeting '{\"text\":\"hello\"}'")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The document ID.") var id: String
    @Argument(help: "The body as a JSON object, or - to read it from stdin.") var json: String

    func run() throws {
        let text = try JSONArgument.text(json)
        let doc = MutableDocument(id: id)
        try doc.setJSON(text)
        try node.withCollection(keyspace, create: true) { _, collection in
            try collection.save(doc)
            Output.line(["id": .string(doc.id), "rev": .string(doc.revisionID ?? "")])
        }
    }
}
