import Foundation
import SyncNodeStore

/// `SyncNodeBenchmarks digest [N]`: what keeping the collection digest costs writes, measured
/// against the same store that stops keeping it (the strongest baseline: the same code doing
/// the same work, without the digest), and how long reading it takes at N documents
/// (default 1,000,000; targets: writes at most 5% slower, a read within 5 ms). Each write
/// figure is the median of paired rounds, and its ratio the median of the rounds' ratios.
enum DigestBenchmark {
    static let rounds = 11

    static func run(count: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let writes = min(count, 50_000), singles = min(writes, 1000)
        let docs = DocumentGenerator.documents(count: writes)
        print("digest benchmark: write overhead on \(writes) documents (batches of 1000, and \(singles) single saves),"
              + " medians of \(rounds) paired rounds; digest read at \(count) documents")

        // Writes with and without the digest, interleaved, each into a fresh database; the last
        // pair stays open for the updates and single saves.
        var serial = 0
        var opened: [(db: SyncNodeStore.Database, digest: Bool)] = []
        func fresh(digest: Bool) throws -> SyncNodeStore.Database {
            serial += 1
            let db = try Database(name: "bench\(serial)", config: DatabaseConfiguration(directory: dir))
            if !digest { db.stopKeepingDigestsForMeasurement() }
            if opened.count == 2 { try opened.removeFirst().db.close() }
            opened.append((db, digest))
            return db
        }
        let bulk = try Report.pairedInterleaved(of: rounds, baseline: {
            try StoreBenchmark.insertAll(docs, into: fresh(digest: false).defaultCollection(), batchSize: 1000)
        }, ours: {
            try StoreBenchmark.insertAll(docs, into: fresh(digest: true).defaultCollection(), batchSize: 1000)
        })
        // Rounds alternate which goes first, so the last two opened are one of each.
        let plain = try opened.first { !$0.digest }.map { try $0.db.defaultCollection() }
        let digested = try opened.first { $0.digest }.map { try $0.db.defaultCollection() }
        guard let plain, let digested else { throw StoreError.storage("benchmark setup failed: no pair of databases") }
        // Updates: every document gets a new revision, so each digest bucket changes twice (the
        // old entry out, the new one in).
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
        let update = try Report.pairedInterleaved(of: rounds, baseline: { try updateAll(plain) }, ours: { try updateAll(digested) })
        // One transaction per save: its digest change goes to the collection's digest log.
        var pass = 0
        func saveOneByOne(_ collection: DocumentCollection) throws {
            pass += 1
            for i in 0..<singles { try collection.save(MutableDocument(id: "single-\(pass)-\(i)", values: docs[i].body)) }
        }
        let single = try Report.pairedInterleaved(of: rounds, baseline: { try saveOneByOne(plain) }, ours: { try saveOneByOne(digested) })
        let entries = try (0..<CollectionDigest.bucketCount).flatMap { try digested.digestEntries(inBucket: $0) }
        guard try digested.digest() == CollectionDigest(entries: entries), try plain.count == digested.count else {
            throw StoreError.storage("benchmark self-check failed: the kept digest differs from a recomputation")
        }
        for (db, _) in opened { try db.close() }
        for (name, measured, n) in [("bulk insert", bulk, writes), ("update all", update, writes), ("single saves", single, singles)] {
            Report.compare(name, count: n, ours: measured.ours, baseline: measured.baseline, target: 1.05, labels: ("digest", "none"), ratio: measured.ratio)
        }

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
