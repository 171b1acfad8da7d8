import Foundation
import GRDB
import Testing
@testable import SyncNodeStore

/// The digest the store keeps must equal one computed from scratch from every document's
/// (id, winning revision, deleted), whatever wrote them.
@Suite struct DigestTests {
    /// What the digest should be: every document's winner, read through the changes feed.
    private func recomputed(_ collection: DocumentCollection) throws -> CollectionDigest {
        CollectionDigest(entries: try collection.changes(since: 0).map {
            CollectionDigest.Entry(id: $0.id, revisionID: $0.rev, isDeleted: $0.deleted)
        })
    }

    @Test func theHashesFollowTheirPublishedDefinition() {
        // Computed independently: Python's hashlib.sha256(b"a\x001-x\x000").hexdigest()[:32],
        // and hashlib.sha256(b"a").digest()[0].
        #expect(Hex.string(CollectionDigest.Entry(id: "a", revisionID: "1-x", isDeleted: false).hash) == "0d6140c05caba4d7d925b1f22bfc70fb")
        #expect(CollectionDigest.bucket(of: "a") == 202)
        // An entry over one SHA-256 block (64 bytes), not ASCII, deleted; and the empty ID.
        let long = String(repeating: "é", count: 40), rev = "3-" + String(repeating: "f", count: 32)
        #expect(Hex.string(CollectionDigest.Entry(id: long, revisionID: rev, isDeleted: true).hash) == "06628b70b21bfc09571cdbe91eaceefd")
        #expect(CollectionDigest.bucket(of: long) == 132 && CollectionDigest.subBucket(of: long) == 254)
        #expect(CollectionDigest.bucket(of: "") == 227)
        let empty = CollectionDigest(entries: [])
        #expect(empty.count == 0 && empty.buckets.allSatisfy { $0.hash == String(repeating: "0", count: 32) })
    }

    @Test func anEmptyCollectionHasTheEmptyDigest() throws {
        let f = try TasksFixture()
        let digest = try f.tasks.digest()
        #expect(digest == CollectionDigest(entries: []))
    }

    @Test func everyKindOfWriteKeepsItEqualToARecomputation() throws {
        let f = try TasksFixture()
        let c = f.tasks
        var random = SeededGenerator(seed: 20261129)
        var generation: [String: Int] = [:]
        for step in 0..<600 {
            let id = "d\(Int.random(in: 0..<60, using: &random))"
            switch Int.random(in: 0..<8, using: &random) {
            case 0, 1:
                let doc = MutableDocument(id: id)
                doc.setInt(step, forKey: "n")
                try c.save(doc)
            case 2:
                try? c.delete(id: id)
            case 3:
                try? c.purge(id: id)
            case 4:
                // A replicated revision on a branch of its own: a conflict, maybe a new winner.
                let g = generation[id, default: 0] + 1
                generation[id] = g
                let rev = "\(g)-" + String(format: "%032x", Int.random(in: 0..<Int.max, using: &random))
                try c.insertRevision(id: id, history: [rev], deleted: Bool.random(using: &random), body: ["r": .int(Int64(step))])
            case 5:
                if let conflicted = try c.conflictedDocumentIDs().first {
                    let leaves = try c.leafDocuments(id: conflicted)
                    if let keep = leaves.last(where: { !$0.isDeleted })?.revisionID { _ = try c.resolveConflict(id: conflicted, keeping: keep) }
                }
            case 6:
                // Writes inside a batch that fails leave nothing behind, the digest's part included.
                let before = try c.digest()
                #expect(throws: (any Error).self) {
                    try f.db.inBatch {
                        let doc = MutableDocument(id: "batch-\(step)")
                        try c.save(doc)
                        throw CancellationError()
                    }
                }
                let after = try c.digest()
                #expect(after == before)
            default:
                try? c.setDocumentExpiration(id: id, expiration: Date(timeIntervalSinceNow: -1))
                _ = try f.db.purgeExpired(now: Date())
            }
            if step % 100 == 99 {
                // More buckets than the digest log holds: the log and this batch fold into the table.
                try f.db.inBatch {
                    for i in 0..<80 { try c.save(MutableDocument(id: "bulk-\(step)-\(i)")) }
                }
            }
            // After every step: a digest remembered from the step before (``DigestMemo``) must
            // not outlive the write.
            let kept = try c.digest(), expected = try recomputed(c)
            #expect(kept == expected, "after step \(step)")
        }
        try f.db.compact()
        let digest = try c.digest(), expected = try recomputed(c)
        #expect(digest == expected)
        #expect(digest.count > 0)
    }

    /// A digest remembered by one connection to the file is not taken for the file's after
    /// another writes to it (as another process would: through its own connections).
    @Test func aWriteThroughAnotherOpeningIsSeen() throws {
        let f = try TasksFixture()
        try f.tasks.save(MutableDocument(id: "a"))
        let before = try f.tasks.digest()
        #expect(try f.tasks.digest() == before)
        let other = try f.dir.open()
        try #require(try other.collection(name: "tasks")).save(MutableDocument(id: "b"))
        try other.close()
        let after = try f.tasks.digest()
        #expect(after.count == 2 && after != before)
        #expect(after == (try recomputed(f.tasks)))
    }

    /// One transaction writing to two collections, and one that creates a collection, writes to it
    /// and deletes it: each collection's digest (and log) takes exactly its own writes.
    @Test func aBatchOverSeveralCollectionsKeepsEachDigest() throws {
        let f = try TasksFixture()
        let other = try f.db.createCollection(name: "other")
        try f.db.inBatch {
            for i in 0..<5 { try f.tasks.save(MutableDocument(id: "t\(i)")) }
            for i in 0..<100 { try other.save(MutableDocument(id: "o\(i)")) }
        }
        try f.db.inBatch {
            let brief = try f.db.createCollection(name: "brief")
            try brief.save(MutableDocument(id: "gone"))
            try f.tasks.save(MutableDocument(id: "t-last"))
            try f.db.deleteCollection(name: "brief")
        }
        for collection in [f.tasks, other] {
            #expect(try collection.digest() == recomputed(collection))
        }
        #expect(try f.tasks.digest().count == 6 && other.digest().count == 100)
        let brief = try f.db.createCollection(name: "brief")
        #expect(try brief.digest() == CollectionDigest(entries: []))
    }

    /// A tombstone counts as no document: a node that reaped it and one that keeps it agree.
    @Test func tombstonesAreLeftOut() throws {
        let f = try TasksFixture()
        try f.tasks.save(MutableDocument(id: "kept"))
        let before = try f.tasks.digest()
        try f.tasks.save(MutableDocument(id: "gone"))
        #expect(try f.tasks.digest() != before)
        try f.tasks.delete(id: "gone")
        #expect(try f.tasks.digest() == before)
    }

    @Test func bucketsListTheirEntries() throws {
        let f = try TasksFixture()
        for i in 0..<300 { try f.tasks.save(MutableDocument(id: "doc-\(i)")) }
        try f.tasks.delete(id: "doc-7")
        let digest = try f.tasks.digest()
        var all: [CollectionDigest.Entry] = []
        for bucket in 0..<CollectionDigest.bucketCount {
            let entries = try f.tasks.digestEntries(inBucket: bucket)
            #expect(entries.allSatisfy { CollectionDigest.bucket(of: $0.id) == bucket })
            #expect(entries.map(\.id) == entries.map(\.id).sorted())
            #expect(entries.count == digest.buckets[bucket].count)
            all += entries
        }
        // The tombstone is left out.
        #expect(all.count == 299 && digest.count == 299 && digest.deletedCount == 0)
        #expect(CollectionDigest(entries: all) == digest)
        #expect(throws: StoreError.self) { try f.tasks.digestEntries(inBucket: 256) }
    }

    @Test func anOlderFileGetsItsDigestBuiltWhenOpened() throws {
        let dir = try TempDirectory()
        var expected: CollectionDigest
        do {
            let db = try dir.open()
            let c = try db.defaultCollection()
            for i in 0..<200 { try c.save(MutableDocument(id: "old-\(i)")) }
            try c.delete(id: "old-3")
            expected = try c.digest()
            try db.close()
        }
        // The file as a version before digests left it: no table, no triggers, no migration record.
        let queue = try DatabaseQueue(path: dir.url.appendingPathComponent("db.syncnode/db.sqlite3").path)
        try queue.write { db in
            try db.execute(sql: """
                DROP TABLE c1_buckets;
                ALTER TABLE collections DROP COLUMN digest_log;
                DELETE FROM grdb_migrations WHERE identifier IN ('v6-digests', 'v7-digest-log')
                """)
        }
        try queue.close()
        let db = try dir.open()
        let rebuilt = try db.defaultCollection().digest()
        #expect(rebuilt == expected)
        try db.close()
    }

    /// A file whose digest counted tombstones in (before v9) gets it counted again without them.
    @Test func aDigestThatCountedTombstonesIsCountedAgain() throws {
        let dir = try TempDirectory()
        var expected: CollectionDigest
        do {
            let db = try dir.open()
            let c = try db.defaultCollection()
            for i in 0..<50 { try c.save(MutableDocument(id: "d-\(i)")) }
            try c.delete(id: "d-3")
            expected = try c.digest()
            // As the earlier version kept it: a row per bucket, the tombstone in its bucket's figures.
            let tombstone = (bucket: CollectionDigest.bucket(of: "d-3"), change: CollectionDigest.Accumulator(count: 1, deleted: 1))
            try db.write { try makeRowPerBucketDigest($0, c, adding: tombstone, forgetting: ["v9-live-digests", "v10-packed-digests"]) }
            try db.close()
        }
        let db = try dir.open()
        defer { try? db.close() }
        #expect(try db.defaultCollection().digest() == expected)
        #expect(try db.read { try $0.tableExists("c1_digest") } == false)
    }

    /// A digest kept a row per bucket, as files before v10 kept it (`v10` forgotten), or as a
    /// binary from before v10 made it for a new collection since (`v10` recorded), is packed as
    /// it stands, with the log that adds to it; a damaged one is counted again from the documents.
    @Test(arguments: [false, true], [false, true])
    func aDigestKeptARowPerBucketIsPacked(damaged: Bool, madeSinceV10: Bool) throws {
        let dir = try TempDirectory()
        var expected: CollectionDigest
        // A change only the moved table carries: a recount would lose it.
        let marker = (bucket: 5, change: CollectionDigest.Accumulator(count: 1, hash: .init(high: 1, low: 2)))
        do {
            let db = try dir.open()
            let c = try db.defaultCollection()
            // Enough single saves for a fold and a log after it.
            for i in 0..<150 { try c.save(MutableDocument(id: "old-\(i)")) }
            try c.delete(id: "old-7")
            expected = try c.digest()
            try db.write { db in
                #expect(try Data.fetchOne(db, sql: "SELECT digest_log FROM collections WHERE id = 1") != nil)
                try makeRowPerBucketDigest(db, c, adding: marker, leavingOut: damaged ? 9 : nil,
                                           forgetting: madeSinceV10 ? [] : ["v10-packed-digests"])
            }
            try db.close()
        }
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let packed = try c.digest()
        #expect(try db.read { try $0.tableExists("c1_digest") } == false)
        if damaged {
            #expect(packed == expected)
            try c.save(MutableDocument(id: "new"))
            #expect(try c.digest() == recomputed(c))
        } else {
            // The marker moved with the table, and the log still adds to it.
            for i in expected.buckets.indices {
                let want = expected.buckets[i], got = packed.buckets[i]
                if i == marker.bucket {
                    #expect(got.count == want.count + 1 && got.hash != want.hash)
                } else {
                    #expect(got == want, "bucket \(i)")
                }
            }
        }
    }

    /// Replaces the collection's packed digest table by a row-per-bucket one holding the same
    /// figures plus `change`, leaving out bucket `leftOut` (damage), and forgets `migrations`.
    private func makeRowPerBucketDigest(_ db: GRDB.Database, _ c: DocumentCollection, adding change: (bucket: Int, change: CollectionDigest.Accumulator),
                                        leavingOut leftOut: Int? = nil, forgetting migrations: [String]) throws {
        var sums = try DigestTable.stored(db, c.tables)
        sums[change.bucket].add(change.change)
        try db.execute(sql: "CREATE TABLE c1_digest(bucket INTEGER PRIMARY KEY, count INTEGER NOT NULL, deleted INTEGER NOT NULL, hash BLOB NOT NULL)")
        for (bucket, sum) in sums.enumerated() where bucket != leftOut {
            try db.execute(sql: "INSERT INTO c1_digest VALUES(?, ?, ?, ?)",
                           arguments: [bucket, sum.count, sum.deleted, Data(CollectionDigest.bytes(of: sum.hash))])
        }
        try db.execute(sql: "DROP TABLE c1_buckets")
        for migration in migrations { try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = ?", arguments: [migration]) }
    }

    /// A damaged digest log is said, on reading the digest and on the next write, and never
    /// overwritten: the write that would have changed it rolls back whole.
    @Test(arguments: ["x'0001'", "x'0005\(String(repeating: "00", count: 32))0003\(String(repeating: "00", count: 32))'",
                      "x'0100\(String(repeating: "00", count: 32))'"])
    func aDamagedDigestLogIsRefused(log: String) throws {
        let f = try TasksFixture()
        try f.tasks.save(MutableDocument(id: "kept"))
        // A part of an entry, two entries out of bucket order, an entry of bucket 256.
        try f.db.write { db in try db.execute(sql: "UPDATE collections SET digest_log = \(log) WHERE id = \(f.tasks.tableID)") }
        #expect(throws: StoreError.self) { try f.tasks.digest() }
        #expect(throws: StoreError.self) { try f.tasks.save(MutableDocument(id: "refused")) }
        #expect(try f.tasks.document(id: "refused") == nil)
        let stored = try f.db.read { db in try Data.fetchOne(db, sql: "SELECT digest_log FROM collections WHERE id = ?", arguments: [f.tasks.tableID]) }
        #expect(stored.map { Hex.string(Array($0)) } == log.dropFirst(2).dropLast().lowercased())
    }
}

/// A deterministic generator (SplitMix64), so a failure replays.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
