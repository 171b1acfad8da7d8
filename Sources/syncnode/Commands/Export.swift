import Foundation
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
        try node.withCollection(keyspace, create: false) { _, collection in
            var after: String? = nil
            let total = try collection.count
            var exported = 0
            // Documents go to stdout; the count to stderr, which a redirect to a file leaves on the
            // terminal. Printed to the terminal, the documents show their own progress.
            let progress = isatty(STDOUT_FILENO) == 1 ? nil : ProgressLine(label: "export")
            defer { progress?.finish() }
            while true {
                let page = try collection.documents(afterID: after, limit: 1000)
                for doc in page { Output.line(doc.withMetadata()) }
                exported += page.count
                progress?.show(fraction: Double(exported) / Double(max(total, 1)), counts: "\(exported)/\(total) documents", settled: page.isEmpty)
                guard let last = page.last else { break }
                after = last.id
            }
        }
    }
}
