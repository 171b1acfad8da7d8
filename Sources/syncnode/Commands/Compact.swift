import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reclaim space in a database: drop old revisions' bodies, delete unreferenced blobs (older than ten minutes), vacuum; prints {\"database\",\"before\",\"after\",\"seconds\"}.",
        discussion: "Runs beside a running `serve`, whose writes wait for it up to 10 s each (a long compaction of a busy node makes some fail: compact when it is quiet). Without a name, compacts every database.\n\nExample:\n  syncnode compact default")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "The databases (default: all).") var databases: [String] = []

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let names = databases.isEmpty ? directory.databaseNames() : databases
        for (number, name) in names.enumerated() {
            let db = try node.open(database: name, create: false)
            defer { try? db.close() }
            let before = db.size().total
            let start = Date()
            let progress = ProgressLine(label: "compact \(name) (\(number + 1) of \(names.count), \(before / 1_000_000) MB)")
            var steps = 1.0
            try db.compact { step in
                switch step {
                case .collections(let done, let of):
                    // The vacuum is the bar's last share: SQLite tells nothing while it runs.
                    steps = Double(of + 1)
                    progress.show(fraction: Double(done) / steps, counts: "old revisions: \(done)/\(of) collections", settled: done == of)
                case .vacuum:
                    progress.show(fraction: (steps - 1) / steps, counts: "rewriting the file", settled: true)
                }
            }
            progress.finish()
            Output.line([
                "database": .string(name), "before": .int(Int64(before)), "after": .int(Int64(db.size().total)),
                "seconds": .double((Date().timeIntervalSince(start) * 1000).rounded() / 1000),
            ])
        }
    }
}
