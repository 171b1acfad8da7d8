import Foundation
import SyncNodeStore

/// `SyncNodeBenchmarks digest [N]`: what keeping the collection digest costs writes, measured
/// against the same store that stops keeping it (the strongest baseline: the same code doing
/// the same work, without the digest), and how long reading it takes at N documents
/// (default 1,000,000; targets: writes at most 5% slower, a read within 5 ms). Each write
/// figure is the median of paired rounds, and its ratio the median of the rounds' ratios.
enum DigestBenchmark {
    /// Rounds of batches: with 11, runs of one build gave bulk inserts' medians from 1.05 to 1.13
    /// while processes of their own, 20 pairs, measured 1.02.
    static let rounds = 21
    /// Rounds of single saves, which are short (0.1 s, and 0.5 s in processes) and move the
    /// most from one round to the next: with 11 pairs, five runs of one build gave medians from
    /// 0.99 to 1.23 for the processes; with 31, from 0.99 to 1.07.
    static let singleRounds = 61

    /// `SyncNodeBenchmarks digest-saves N on|off [BATCH]`: N saves into a fresh database,
    /// `batch` to a transaction (1: single saves), keeping digests or not; prints the seconds
    /// the saves took. Run in turn, one side per process, it compares the two sides without
    /// their sharing caches or a disk's checkpoints.
    static func save(count: Int, digests: Bool, batch: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try Database(name: "saves", config: DatabaseConfiguration(directory: dir))
        if !digests { db.stopKeepingDigestsForMeasurement() }
        let collection = try db.defaultCollection()
        let docs = DocumentGenerator.documents(count: count)
        let seconds = try Report.time {
            if batch == 1 {
                for (id, body) in docs { try collection.save(MutableDocument(id: id, values: body)) }
            } else {
                try StoreBenchmark.insertAll(docs, into: collection, batchSize: batch)
            }
        }
        guard try collection.count == count else { throw StoreError.storage("benchmark self-check failed: \(count) saves left \(try collection.count) documents") }
        try db.close()
        print(seconds)
    }

    private static func savesInChild(_ count: Int, digests: Bool) throws -> Double {
        let child = try NodeProcess.run(URL(fileURLWithPath: CommandLine.arguments[0]), ["digest-saves", "\(count)", digests ? "on" : "off"])
        let printed = String(decoding: child.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard child.status == 0, let seconds = Double(printed) else {
            throw StoreError.storage("digest-saves \(count) exited \(child.status) and printed \(printed.debugDescription)")
        }
        return seconds
    }

    static func run(count: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let writes = min(count, 50_000), singles = min(writes, 1000)
        let docs = DocumentGenerator.documents(count: writes)
        print("digest benchmark: write overhead on \(writes) documents (batches of 1000, and \(singles) single saves; then"
              + " \(min(count, 5000)) single saves in processes of their own), medians of \(rounds) paired rounds"
              + " (\(singleRounds) for single saves);"
              + " digest read at \(count) documents")

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
        // Opening one (and closing the one before, which checkpoints it) is not timed.
        func insertAll(digest: Bool) throws -> Double {
            let collection = try fresh(digest: digest).defaultCollection()
            return try Report.time { try StoreBenchmark.insertAll(docs, into: collection, batchSize: 1000) }
        }
        let bulk = try Report.pairedMeasurements(of: rounds, baseline: { try insertAll(digest: false) }, ours: { try insertAll(digest: true) })
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
        let single = try Report.pairedInterleaved(of: singleRounds, baseline: { try saveOneByOne(plain) }, ours: { try saveOneByOne(digested) })
        let entries = try (0..<CollectionDigest.bucketCount).flatMap { try digested.digestEntries(inBucket: $0) }
        guard try digested.digest() == CollectionDigest(entries: entries), try plain.count == digested.count else {
            throw StoreError.storage("benchmark self-check failed: the kept digest differs from a recomputation")
        }
        for (db, _) in opened { try db.close() }
        // Single saves again, each side alone in a process of its own (timed A B A B): two files
        // in one process share caches and interleave their background checkpoints.
        let processSaves = min(count, 5000)
        let alone = try Report.pairedMeasurements(of: singleRounds, baseline: { try savesInChild(processSaves, digests: false) },
                                                  ours: { try savesInChild(processSaves, digests: true) })
        for (name, measured, n) in [("bulk insert", bulk, writes), ("update all", update, writes), ("single saves", single, singles),
                                    ("saves, processes", alone, processSaves)] {
            Report.compare(name, count: n, ours: measured.ours, baseline: measured.baseline, target: 1.05, labels: ("digest", "none"), ratio: measured.ratio)
        }

        // Reading at `count` documents: the whole digest (after a write), again, then one bucket's entries.
        let big = try Database(name: "big", config: DatabaseConfiguration(directory: dir))
        let collection = try big.defaultCollection()
        let generated = DocumentGenerator.documents(count: min(count, 100_000))
        for start in stride(from: 0, to: count, by: generated.count) {
            let chunk = (0..<min(generated.count, count - start)).map { ("\(start + $0)-" + generated[$0].id, generated[$0].body) }
            try StoreBenchmark.insertAll(chunk, into: collection, batchSize: 1000)
        }
        // A read after a write reads the digest whole; a read with nothing written since, one row.
        var reads: [Double] = [], again: [Double] = []
        var counted = 0
        let touched = "0-" + generated[0].id
        for n in 0..<50 {
            guard let doc = try collection.document(id: touched)?.toMutable() else {
                throw StoreError.storage("benchmark setup failed: no document \(touched)")
            }
            doc.setInt(n, forKey: "touched")
            try collection.save(doc)
            reads.append(try Report.time { counted = try collection.digest().count })
            again.append(try Report.time { _ = try collection.digest() })
        }
        reads.sort()
        again.sort()
        let bucket = try Report.time { _ = try collection.digestEntries(inBucket: 7) }
        try big.close()
        guard counted == count else { throw StoreError.storage("benchmark self-check failed: the digest counts \(counted) of \(count)") }
        let median = reads[reads.count / 2] * 1000
        print(String(format: "digest read        %.2f ms median of 50 at %d documents (target <= 5 ms: %@)", median, count, median <= 5 ? "met" : "MISSED"))
        print(String(format: "digest read again  %.3f ms median of 50, nothing written since", again[again.count / 2] * 1000))
        print(String(format: "one bucket's entries %.0f ms at %d documents (about %d entries)", bucket * 1000, count, count / CollectionDigest.bucketCount))
        print(String(format: "peak RSS %.0f MB", Report.peakRSSMegabytes()))
    }
}
