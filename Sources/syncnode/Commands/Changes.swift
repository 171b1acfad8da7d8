import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the changes feed as JSON lines {\"seq\",\"id\",\"rev\",\"deleted\"}.",
        discussion: "Example:\n  syncnode changes default --since 42")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Option(help: "Only changes after this sequence.") var since: Int64 = 0

    func run() throws {
        try node.withCollection(keyspace, create: false) { _, collection in
            var since = since
            while true {
                let page = try collection.changes(since: since, limit: 1000)
                for change in page {
                    Output.line([
                        "seq": .int(change.sequence), "id": .string(change.id),
                        "rev": .string(change.rev), "deleted": .bool(change.deleted),
                    ])
                }
                guard let last = page.last else { break }
                since = last.sequence
            }
        }
    }
}
