import Foundation
import SyncNodeStore

/// Prints benchmark figures and ratios against baselines measured in the same run.
///
///     swift run -c release SyncNodeBenchmarks store [N]      store vs raw SQLite
///     swift run -c release SyncNodeBenchmarks digest [N]     the collection digest: write overhead, read time at N documents
///     swift run -c release SyncNodeBenchmarks digest-saves N on|off [BATCH]  N saves into a new database, BATCH a transaction (default 1; digest's child)
///     swift run -c release SyncNodeBenchmarks listener [N]   _bulk_docs and _changes over HTTPS vs the store
///     swift run -c release SyncNodeBenchmarks replication [N] one-shot pull over HTTPS vs a local insert
///     swift run -c release SyncNodeBenchmarks query [N]       SQL++ queries vs hand-written SQLite SQL, live-query latency
///     swift run -c release SyncNodeBenchmarks codable [N]     save(from:)/document(id:as:) vs MutableDocument and hand mapping
///     swift run -c release SyncNodeBenchmarks mesh [N]        bytes on the wire for N changes between two mesh nodes, pull-only vs push+pull
///     swift run -c release SyncNodeBenchmarks attachments [MB] a MB-sized blob pushed and pulled, 1,000 small ones vs cp, a mixed batch
///     swift run -c release SyncNodeBenchmarks generate N      N documents as JSON lines (for scripts/bench.sh)
@main
enum SyncNodeBenchmarks {
    static func main() async {
        let args = Array(CommandLine.arguments.dropFirst())
        let count = args.count > 1 ? Int(args[1]) : nil
        do {
            switch args.first {
            case "store":
                try StoreBenchmark.run(count: count ?? 100_000)
            case "digest":
                try DigestBenchmark.run(count: count ?? 1_000_000)
            case "listener":
                try await ListenerBenchmark.run(count: count ?? 20_000)
            case "replication":
                try await ReplicationBenchmark.run(count: count ?? 10_000)
            case "query":
                try QueryBenchmark.run(count: count ?? 100_000)
            case "codable":
                try CodableBenchmark.run(count: count ?? 100_000)
            case "mesh":
                try await MeshBenchmark.run(count: count ?? 1000)
            case "attachments":
                try await AttachmentBenchmark.run(megabytes: count ?? 1024)
            case "digest-saves" where (3...4).contains(args.count) && ["on", "off"].contains(args[2]):
                guard let count, count > 0, let batch = args.count == 4 ? Int(args[3]) : 1, batch > 0 else {
                    throw StoreError.storage("digest-saves: N and BATCH must be positive numbers")
                }
                try DigestBenchmark.save(count: count, digests: args[2] == "on", batch: batch)
            case "save-blob" where args.count == 3:
                try AttachmentBenchmark.saveBlob(directory: args[1], file: args[2])
            case "generate":
                for (id, body) in DocumentGenerator.documents(count: count ?? 100_000) {
                    var line = body
                    line["_id"] = .string(id)
                    print(DocumentValue.dictionary(line).toJSON())
                }
            default:
                try? FileHandle.standardError.write(contentsOf: Data("usage: SyncNodeBenchmarks store [N] | digest [N] | digest-saves N on|off [BATCH] | listener [N] | replication [N] | query [N] | codable [N] | attachments [MB] | mesh [N] | generate N\n".utf8))
                exit(2)
            }
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }
}
