import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import SyncNodeStore

/// `SyncNodeBenchmarks query [N]`: queries against hand-written SQLite SQL
/// doing the same work (same tables, same indexes, columns read into the
/// same values) in the same run, then live-query latency.
enum QueryBenchmark {
    static func run(count: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        print("query benchmark: \(count) documents of about 1 KB, release build expected; best of 3 runs each")

        let db = try SyncNodeStore.Database(name: "bench", config: DatabaseConfiguration(directory: dir))
        defer { try? db.close() }
        let collection = try db.defaultCollection()
        let docs = DocumentGenerator.documents(count: count)
        try StoreBenchmark.insertAll(docs, into: collection, batchSize: 1000)
        try collection.createIndex(ValueIndexConfiguration(["sku"]), name: "sku")
        try collection.createIndex(ValueIndexConfiguration(["price"]), name: "price")
        try collection.createIndex(FullTextIndexConfiguration(["name"]), name: "names")
        // Hand-written SQL reads the same file through its own connection pool.
        let raw = try DatabasePool(path: db.path.appendingPathComponent("db.sqlite3").path)
        defer { try? raw.close() }
        let table = "c1_docs"

        var rng = SeededRandom(seed: 11)
        let skus: [String] = (0..<1000).map { _ in docs[Int(rng.next() % UInt64(docs.count))].body["sku"]?.stringValueForBenchmark ?? "" }

        // (a) Selective equality on an indexed property, 1000 lookups.
        let equality = try db.createQuery("SELECT meta().id, name, price FROM _ WHERE sku = $sku")
        try compare("(a) equality x1000", runs: skus.count,
                ours: {
                    var n = 0
                    for sku in skus {
                        equality.parameters = Parameters().setString(sku, forName: "sku")
                        n += try equality.execute().count
                    }
                    return n
                },
                baseline: {
                    var n = 0
                    for sku in skus {
                        n += try raw.unsafeReentrantRead { db in
                            try rows(db, "SELECT id, json_extract(body, '$.name'), json_extract(body, '$.price') FROM \(table) WHERE json_extract(body, '$.sku') = ? AND deleted = 0", [sku]).count
                        }
                    }
                    return n
                })

        // (b) Range with ORDER BY and LIMIT 20.
        let range = try db.createQuery("SELECT meta().id, name, price FROM _ WHERE price BETWEEN 100 AND 400 ORDER BY price LIMIT 20")
        try compare("(b) range x200", runs: 200,
                ours: { var n = 0; for _ in 0..<200 { n += try range.execute().count }; return n },
                baseline: {
                    var n = 0
                    for _ in 0..<200 {
                        n += try raw.unsafeReentrantRead { db in try rows(db, "SELECT id, json_extract(body, '$.name'), json_extract(body, '$.price') FROM \(table) WHERE json_extract(body, '$.price') BETWEEN 100 AND 400 AND deleted = 0 ORDER BY json_extract(body, '$.price') LIMIT 20", []).count }
                    }
                    return n
                })

        // (c) GROUP BY with COUNT over every document.
        let group = try db.createQuery("SELECT category, COUNT(*) AS n FROM _ GROUP BY category")
        try compare("(c) group by x5", runs: 5,
                ours: { var n = 0; for _ in 0..<5 { n += try group.execute().count }; return n },
                baseline: {
                    var n = 0
                    for _ in 0..<5 {
                        n += try raw.unsafeReentrantRead { db in try rows(db, "SELECT json_extract(body, '$.category'), count(*) FROM \(table) WHERE deleted = 0 GROUP BY json_extract(body, '$.category')", []).count }
                    }
                    return n
                })

        // (d) Full-text search.
        let ftsTable = try raw.read { db in try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'c1_fts%' AND type = 'table' ORDER BY length(name) LIMIT 1") } ?? ""
        let fts = try db.createQuery("SELECT meta().id, name FROM _ WHERE MATCH(names, 'alpha AND bravo')")
        try compare("(d) full-text x20", runs: 20,
                ours: { var n = 0; for _ in 0..<20 { n += try fts.execute().count }; return n },
                baseline: {
                    var n = 0
                    for _ in 0..<20 {
                        n += try raw.unsafeReentrantRead { db in try rows(db, "SELECT d.id, json_extract(d.body, '$.name') FROM \(ftsTable) AS f JOIN \(table) AS d ON d.key = f.rowid WHERE f.\(ftsTable) MATCH 'alpha AND bravo' AND d.deleted = 0", []).count }
                    }
                    return n
                })

        try liveLatency(db: db, collection: collection)
    }

    /// Times both sides three times each (alternating) and prints the best of
    /// each; a failure or a row-count mismatch makes the whole benchmark fail.
    private static func compare(_ name: String, runs: Int, ours: () throws -> Int, baseline: () throws -> Int) throws {
        var best = (ours: Double.infinity, baseline: Double.infinity)
        var counts = (ours: 0, baseline: 0)
        do {
            for _ in 0..<3 {
                best.baseline = min(best.baseline, try Report.time { counts.baseline = try baseline() })
                best.ours = min(best.ours, try Report.time { counts.ours = try ours() })
            }
        } catch {
            throw BenchmarkFailure("\(name): \(error)")
        }
        guard counts.ours == counts.baseline else {
            throw BenchmarkFailure("\(name): INVALID, the query returned \(counts.ours) rows, the SQL \(counts.baseline)")
        }
        let ratio = best.ours / best.baseline
        print("\(name.padding(toLength: 20, withPad: " ", startingAt: 0)) query \(String(format: "%8.3f ms", best.ours * 1000 / Double(runs)))/run   sql \(String(format: "%8.3f ms", best.baseline * 1000 / Double(runs)))/run   rows \(counts.ours)   ratio \(String(format: "%.2f", ratio)) (target <= 1.5: \(ratio <= 1.5 ? "met" : "MISSED"))")
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs hand-written SQL and reads every column into a document value.
    private static func rows(_ db: GRDB.Database, _ sql: String, _ arguments: [String]) throws -> [[DocumentValue]] {
        let statement = try db.cachedStatement(sql: sql)
        try statement.setArguments(StatementArguments(arguments))
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        var out: [[DocumentValue]] = []
        let width = sqlite3_column_count(handle)
        while sqlite3_step(handle) == SQLITE_ROW {
            var row: [DocumentValue] = []
            for i in 0..<width {
                switch sqlite3_column_type(handle, i) {
                case SQLITE_INTEGER: row.append(.int(sqlite3_column_int64(handle, i)))
                case SQLITE_FLOAT: row.append(.double(sqlite3_column_double(handle, i)))
                case SQLITE_NULL: row.append(.null)
                default:
                    let bytes = sqlite3_column_text(handle, i)
                    row.append(.string(bytes.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(sqlite3_column_bytes(handle, i))), as: UTF8.self) } ?? ""))
                }
            }
            out.append(row)
        }
        return out
    }

    /// (e) From the commit of one document to the live query listener's call.
    private static func liveLatency(db: SyncNodeStore.Database, collection: DocumentCollection) throws {
        let query = try db.createQuery("SELECT COUNT(*) AS n FROM _ WHERE sku = 'LIVE'")
        let signal = DispatchSemaphore(value: 0)
        let arrivals = Arrivals()
        let token = query.addChangeListener(on: DispatchQueue(label: "bench.live")) { change in
            arrivals.record(change.results?.allResults().first?.int(forKey: "n") ?? -1)
            signal.signal()
        }
        defer { token.remove() }
        signal.wait()  // the first results
        var latencies: [Double] = []
        for i in 1...1000 {
            let doc = MutableDocument(id: "live-\(i)")
            doc.setString("LIVE", forKey: "sku")
            // From before the save: the commit happens inside it.
            let committed = DispatchTime.now().uptimeNanoseconds
            try collection.save(doc)
            guard signal.wait(timeout: .now() + 5) == .success, let (n, at) = arrivals.last, n == i else {
                throw BenchmarkFailure("(e) live query: no notification for commit \(i)")
            }
            latencies.append(Double(at - committed) / 1e6)
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2], p99 = latencies[latencies.count * 99 / 100]
        print(String(format: "(e) live query        p50 %.3f ms   p99 %.3f ms over 1000 commits (target p50 <= 5 ms: %@)", p50, p99, p50 <= 5 ? "met" : "MISSED"))
    }

    private final class Arrivals: @unchecked Sendable {
        private let lock = NSLock()
        private var value: (Int, UInt64)?
        func record(_ n: Int) { lock.withLock { value = (n, DispatchTime.now().uptimeNanoseconds) } }
        var last: (Int, UInt64)? { lock.withLock { value } }
    }
}

private extension DocumentValue {
    var stringValueForBenchmark: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
