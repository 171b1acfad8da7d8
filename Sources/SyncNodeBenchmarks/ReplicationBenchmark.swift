import Foundation
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks replication [N]`: node A (a `syncnode serve` process)
/// -> node B (a `syncnode sync --pull` process), one-shot over loopback HTTPS
/// with Basic auth, against a local bulk insert of the same documents in the
/// same run (each the best of three); then the no-op re-run. Two processes,
/// so each node's peak RSS is its own.
enum ReplicationBenchmark {
    static func run(count: Int) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cli = try NodeProcess.cli()
        print("replication benchmark: \(count) documents, node A (serve process) -> node B (sync --pull process), loopback HTTPS + Basic auth")
        do {
            let docs = DocumentGenerator.documents(count: count)
            var run = 0
            let insert = try Report.best(of: 3) {
                run += 1
                let baselineDB = try Database(name: "baseline", config: DatabaseConfiguration(directory: root.appendingPathComponent("baseline\(run)")))
                try StoreBenchmark.insertAll(docs, into: try baselineDB.defaultCollection(), batchSize: 1000)
                try baselineDB.close()
            }
            let nodeA = try NodeDirectory(url: root.appendingPathComponent("a"))
            guard let source = try nodeA.database("db", create: true)?.defaultCollection() else { throw SyncError.listenerFailed("no source") }
            try StoreBenchmark.insertAll(docs, into: source, batchSize: 1000)
            nodeA.closeAll()
            try await measure(cli: cli, root: root, count: count, insert: insert)
        }
    }

    private static func measure(cli: URL, root: URL, count: Int, insert: Double) async throws {
        let serve = try NodeProcess.Server(cli: cli, dir: root.appendingPathComponent("a"), arguments: ["--db", "db", "--user", "b", "--password", "secret"])
        defer { serve.stop() }
        let url = serve.url

        // Three pulls into fresh nodes, the fastest counted; then a re-run into the last.
        var pulls: [(pulled: Int, seconds: Double, peakRSS: Double)] = []
        for run in 1...3 { pulls.append(try sync(cli: cli, dir: root.appendingPathComponent("b\(run)"), url: url)) }
        let noop = try sync(cli: cli, dir: root.appendingPathComponent("b3"), url: url)
        guard let pull = pulls.min(by: { $0.seconds < $1.seconds }) else { return }
        let peakA = serve.peakRSS
        guard pulls.allSatisfy({ $0.pulled == count }), noop.pulled == 0 else {
            throw SyncError.listenerFailed("self-check: pulled \(pulls.map(\.pulled)), re-run pulled \(noop.pulled)")
        }
        Report.compare("one-shot pull", count: count, ours: pull.seconds, baseline: insert, target: 3.0, labels: ("replication", "local insert"))
        print(String(format: "no-op re-run %.1f ms (target < 50 ms)", noop.seconds * 1000))
        print(String(format: "peak RSS: node A (serving) %.0f MB, node B (pulling) %.0f MB (target <= 100 MB per node: %@)",
                     peakA, pulls.map(\.peakRSS).max() ?? 0, max(peakA, pulls.map(\.peakRSS).max() ?? 0) <= 100 ? "met" : "MISSED"))
    }

    /// Runs `syncnode sync URL --pull` and returns what it reports.
    private static func sync(cli: URL, dir: URL, url: String) throws -> (pulled: Int, seconds: Double, peakRSS: Double) {
        let finished = try NodeProcess.run(cli, ["--dir", dir.path, "sync", url, "--pull"])
        let report = try finished.syncReport()
        return (report.pulled, report.seconds, finished.peakRSS)
    }
}
