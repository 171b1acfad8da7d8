import Foundation
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks replication [N]`: node A -> node B one-shot pull over
/// loopback HTTPS with Basic auth, against a local bulk insert of the same
/// documents in the same run; then the no-op re-run.
enum ReplicationBenchmark {
    static func run(count: Int) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let docs = DocumentGenerator.documents(count: count)
        print("replication benchmark: \(count) documents, one-shot pull over loopback HTTPS with Basic auth")

        let baselineDB = try Database(name: "baseline", config: DatabaseConfiguration(directory: root.appendingPathComponent("baseline")))
        let insert = try Report.time { try StoreBenchmark.insertAll(docs, into: try baselineDB.defaultCollection(), batchSize: 1000) }
        try baselineDB.close()

        let nodeA = try NodeDirectory(url: root.appendingPathComponent("a"))
        let source = try nodeA.database("db", create: true)?.defaultCollection()
        guard let source else { throw SyncError.listenerFailed("no source") }
        try StoreBenchmark.insertAll(docs, into: source, batchSize: 1000)
        let listener = Listener(config: ListenerConfiguration(directory: nodeA, host: "127.0.0.1", authenticator: .users(["b": "secret"])))
        try await listener.start()
        guard let port = listener.port, let fingerprint = listener.tlsIdentity?.fingerprint,
              let base = URL(string: "https://127.0.0.1:\(port)/") else { throw SyncError.listenerFailed("no port") }
        let url = PairingURL(base: base, database: "db", user: "b", password: "secret", uuid: nodeA.uuid, fingerprint: fingerprint).url

        let target = try Database(name: "db", config: DatabaseConfiguration(directory: root.appendingPathComponent("b")))
        var config = ReplicatorConfiguration(collection: try target.defaultCollection(), target: .url(url))
        config.replicatorType = .pull
        let rssBefore = Report.peakRSSMegabytes()
        var result = ReplicationResult()
        let pull = try await Report.timeAsync { result = try await Replicator(config: config).runOnce() }
        let rssAfter = Report.peakRSSMegabytes()
        var again = ReplicationResult()
        let noop = try await Report.timeAsync { again = try await Replicator(config: config).runOnce() }
        let stored = try target.defaultCollection().count
        try target.close()
        await listener.stop()
        nodeA.closeAll()
        guard result.pulled == count, stored == count, again == ReplicationResult() else {
            throw SyncError.listenerFailed("self-check: pulled \(result.pulled), stored \(stored), re-run \(again)")
        }
        Report.compare("one-shot pull", count: count, ours: pull, baseline: insert, target: 3.0, labels: ("replication", "local insert"))
        print(String(format: "no-op re-run %.1f ms (target < 50 ms)", noop * 1000))
        print(String(format: "peak RSS %.0f MB before the pull, %.0f MB after (both nodes share this process; target <= 100 MB per node)", rssBefore, rssAfter))
    }
}
