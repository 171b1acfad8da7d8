import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the documents in conflict as JSON lines {\"id\",\"winner\",\"conflicts\"}.",
        discussion: "A document is in conflict when it has more than one live leaf revision; every node shows the same winner meanwhile. Resolve one with `syncnode resolve`.\n\nExample:\n  syncnode conflicts default")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace

    func run() throws {
        try node.withCollection(keyspace, create: false) { _, collection in
            for id in try collection.conflictedDocumentIDs() {
                let live = try collection.leafDocuments(id: id).filter { !$0.isDeleted }.compactMap(\.revisionID)
                guard let winner = live.first else { continue }
                Output.line(["id": .string(id), "winner": .string(winner), "conflicts": .array(live.dropFirst().map { .string($0) })])
            }
        }
    }
}

struct Resolve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resolve a document's conflict: keep one leaf, or write a merge; prints {\"id\",\"rev\"}.",
        discussion: "--keep REV keeps that live leaf and deletes the others; --merged JSON writes the body as a child of the winner and deletes the other leaves. Nodes that resolve a conflict the same way write the same revisions.\n\nExample:\n  syncnode resolve default greeting --keep 2-7b9e1f0c4d2a8e6b5c3f1a9d7e5b3c1a")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The document ID.") var id: String
    @Option(help: "The live leaf revision to keep (see `syncnode conflicts`).") var keep: String?
    @Option(help: "The merged body as a JSON object, or - to read it from stdin.") var merged: String?

    func run() throws {
        try node.withCollection(keyspace, create: false) { _, collection in
            let result: Document
            switch (keep, merged) {
            case (let keep?, nil): result = try collection.resolveConflict(id: id, keeping: keep)
            case (nil, let merged?): result = try collection.resolveConflict(id: id, merged: try MutableDocument(id: id, json: try JSONArgument.text(merged)))
            default: throw CLIError.usage("give exactly one of --keep REV and --merged JSON")
            }
            Output.line(["id": .string(id), "rev": .string(result.revisionID ?? "")])
        }
    }
}
