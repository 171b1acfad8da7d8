import Foundation
import SyncNodeStore

/// `SyncNodeBenchmarks digest [N]`: what keeping the collection digest costs writes, measured
/// against the same store that stops keeping it (the strongest baseline: the same code doing
/// the same work, without the digest), and how long reading it takes at N documents
/// (default 1,000,000; targets: writes at most 5% slower, a read within 5 ms).
enum DigestBenchmark {
    static func run(count: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let writes = min(count, 100_000)
        let docs = DocumentGenerator.documents(count: writes)
        print("digest benchmark: write overhead on \(writes) documents (batches of 1000, and 2,000 single saves), digest read at \(count) documents")

        // Writes with and without the digest, interleaved, each into a fresh database.
        var serial = 0
        func fresh(digest: Bool) throws -> SyncNodeStore.Database {
            serial += 1
            let db = try Database(name: "bench\(serial)", config: DatabaseConfiguration(directory: dir))
            if !digest { db.stopKeepingDigestsForMeasurement() }
            return db
        }
        var opened: [SyncNodeStore.Database] = []
        let bulk = try Report.bestInterleaved(of: 5, baseline: {
            let db = try fresh(digest: false)
            opened.append(db)
            try StoreBenchmark.insertAll(docs, into: db.defaultCollection(), batchSize: 1000)
        }, ours: {
            let db = try fresh(digest: true)
            opened.append(db)
            try StoreBenchmark.insertAll(docs, into: db.defaultCollection(), batchSize: 1000)
        })
        // Updates on the last two: every document gets a new revision, so each digest row
        // changes twice (the old entry out, the new one in).
        let plain = try opened[opened.count - 2].defaultCollection(), digested = try opened[opened.count - 1].defaultCollection()
        var round = 0
        func updateAll(_ collection: DocumentCollection) throws {
            round += 1
            for start in stride(from: 0, to: writes, by: 1000) {
                try collection.database.inBatch {
                    for i in start..<min(start + 1000, writes) {
                        guard let doc = try collection.document(id: docs[i].id)?.toMutable() else { continue }
                        doc.setInt(round, forKey: "round")
                        try collection.save(doc)
                    }
                }
            }
        }
        let update = try Report.bestInterleaved(of: 5, baseline: { try updateAll(plain) }, ours: { try updateAll(digested) })
        // One transaction per save: the digest's row is a page more to write at each commit.
        let singles = min(writes, 2000)
        var pass = 0
        func saveOneByOne(_ collection: DocumentCollection) throws {
            pass += 1
            for i in 0..<singles { try collection.save(MutableDocument(id: "single-\(pass)-\(i)", values: docs[i].body)) }
        }
        let single = try Report.bestInterleaved(of: 5, baseline: { try saveOneByOne(plain) }, ours: { try saveOneByOne(digested) })
        guard try digested.digest().count == digested.count, try plain.count == digested.count else {
            throw StoreError.storage("benchmark self-check failed: the digest does not count every document")
        }
        for db in opened { try db.close() }
        Report.compare("bulk insert", count: writes, ours: bulk.ours, baseline: bulk.baseline, target: 1.05, labels: ("digest", "none"))
        Report.compare("update all", count: writes, ours: update.ours, baseline: update.baseline, target: 1.05, labels: ("digest", "none"))
        Report.compare("single saves", count: singles, ours: single.ours, baseline: single.baseline, target: 1.05, labels: ("digest", "none"))

        // Reading at `count` documents: the whole digest, then one bucket's entries.
        let big = try Database(name: "big", config: DatabaseConfiguration(directory: dir))
        let collection = try big.defaultCollection()
        let generated = DocumentGenerator.documents(count: min(count, 100_000))
        for start in stride(from: 0, to: count, by: generated.count) {
            let chunk = (0..<min(generated.count, count - start)).map { ("\(start + $0)-" + generated[$0].id, generated[$0].body) }
            try StoreBenchmark.insertAll(chunk, into: collection, batchSize: 1000)
        }
        var reads: [Double] = []
        var counted = 0
        for _ in 0..<50 { reads.append(try Report.time { counted = try collection.digest().count }) }
        reads.sort()
        let bucket = try Report.time { _ = try collection.digestEntries(inBucket: 7) }
        try big.close()
        guard counted == count else { throw StoreError.storage("benchmark self-check failed: the digest counts \(counted) of \(count)") }
        let median = reads[reads.count / 2] * 1000
        print(String(format: "digest read        %.2f ms median of 50 at %d documents (target <= 5 ms: %@)", median, count, median <= 5 ? "met" : "MISSED"))
        print(String(format: "one bucket's entries %.0f ms at %d documents (about %d entries)", bucket * 1000, count, count / CollectionDigest.bucketCount))
        print(String(format: "peak RSS %.0f MB", Report.peakRSSMegabytes()))
    }
}
