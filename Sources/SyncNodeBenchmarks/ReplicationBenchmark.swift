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
        let cli = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("syncnode")
        guard FileManager.default.isExecutableFile(atPath: cli.path) else {
            throw SyncError.invalidConfiguration("\(cli.path) is missing: build the syncnode product too (scripts/bench.sh does)")
        }
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
        let serve = Process()
        serve.executableURL = cli
        serve.arguments = ["--dir", root.appendingPathComponent("a").path, "serve", "--db", "db", "--host", "127.0.0.1",
                           "--user", "b", "--password", "secret", "--no-advertise", "--no-browse", "--qr", "none"]
        let out = Pipe()
        serve.standardOutput = out
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        defer { serve.terminate(); serve.waitUntilExit() }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).prefix { $0 != "\n" }
        guard let start = text.range(of: "listening on ") else { throw SyncError.listenerFailed("serve printed \(text.debugDescription)") }
        let url = text[start.upperBound...].trimmingCharacters(in: .whitespaces)

        // Three pulls into fresh nodes, the fastest counted; then a re-run into the last.
        var pulls: [(pulled: Int, seconds: Double, peakRSS: Double)] = []
        for run in 1...3 { pulls.append(try sync(cli: cli, dir: root.appendingPathComponent("b\(run)"), url: url)) }
        let noop = try sync(cli: cli, dir: root.appendingPathComponent("b3"), url: url)
        guard let pull = pulls.min(by: { $0.seconds < $1.seconds }) else { return }
        let peakA = Report.peakRSSMegabytes(pid: serve.processIdentifier)
        guard pulls.allSatisfy({ $0.pulled == count }), noop.pulled == 0 else {
            throw SyncError.listenerFailed("self-check: pulled \(pulls.map(\.pulled)), re-run pulled \(noop.pulled)")
        }
        Report.compare("one-shot pull", count: count, ours: pull.seconds, baseline: insert, target: 3.0, labels: ("replication", "local insert"))
        print(String(format: "no-op re-run %.1f ms (target < 50 ms)", noop.seconds * 1000))
        print(String(format: "peak RSS: node A (serving) %.0f MB, node B (pulling) %.0f MB (target <= 100 MB per node: %@)",
                     peakA, pulls.map(\.peakRSS).max() ?? 0, max(peakA, pulls.map(\.peakRSS).max() ?? 0) <= 100 ? "met" : "MISSED"))
    }

    /// Runs `syncnode sync URL --pull` and returns what it reports, with its
    /// peak RSS polled from /proc while it runs (getrusage's figure for
    /// children would include this process's memory, copied at fork).
    private static func sync(cli: URL, dir: URL, url: String) throws -> (pulled: Int, seconds: Double, peakRSS: Double) {
        let process = Process()
        process.executableURL = cli
        process.arguments = ["--dir", dir.path, "sync", url, "--pull"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let peak = Shared(0.0)
        let poller = Thread {
            while process.isRunning {
                let now = Report.peakRSSMegabytes(pid: pid)
                if now.isFinite { peak.set(max(peak.value, now)) }
                usleep(2000)
            }
        }
        poller.start()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, case .dictionary(let result) = try DocumentValue(json: String(decoding: data, as: UTF8.self)),
              case .int(let pulled)? = result["pulled"], let seconds = result["seconds"] else {
            throw SyncError.listenerFailed("sync exited \(process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        let s: Double
        switch seconds {
        case .double(let d): s = d
        case .int(let i): s = Double(i)
        default: s = 0
        }
        return (Int(pulled), s, peak.value)
    }
}

/// A value written by one thread and read by another.
private final class Shared<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func set(_ value: T) { lock.withLock { stored = value } }
}
