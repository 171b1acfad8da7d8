import Foundation
import GRDB

/// Where a collection's ``CollectionDigest`` lives: `c<id>_digest`, one row per bucket
/// (`bucket`, `count`, `deleted`, `hash`). Every write transaction changes it, or the short
/// ``DigestLog`` of changes not yet folded into it, once before it commits, by what its writes
/// changed (``DigestLedger``), so it commits or rolls back with them. An SQL function
/// registered on every connection of the store, `sn_digest_bucket(id)`, lists a bucket.
enum DigestTable {
    static func registerFunctions(_ db: GRDB.Database) {
        db.add(function: DatabaseFunction("sn_digest_bucket", argumentCount: 1, pure: true) { args in
            guard var id = String.fromDatabaseValue(args[0]) else { return nil }
            return id.withUTF8 { CollectionDigest.bucket(ofUTF8: UnsafeRawBufferPointer($0)) }
        })
    }

    /// The table and its empty buckets, for a new collection.
    static func create(_ db: GRDB.Database, _ t: CollectionTables) throws {
        try db.execute(sql: """
            CREATE TABLE \(t.digest)(
                bucket INTEGER PRIMARY KEY,
                count INTEGER NOT NULL,
                deleted INTEGER NOT NULL,
                hash BLOB NOT NULL);
            WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM b WHERE n < \(CollectionDigest.bucketCount - 1))
            INSERT INTO \(t.digest)(bucket, count, deleted, hash) SELECT n, 0, 0, zeroblob(16) FROM b;
            """)
    }

    /// Creates the table for a collection made before digests, and counts its documents in
    /// (reading IDs, revisions and flags, never bodies into memory). A collection made by this
    /// version (a new file's default one, made by an earlier migration) has it already.
    static func build(_ db: GRDB.Database, _ t: CollectionTables) throws {
        guard try !db.tableExists(t.digest) else { return }
        try create(db, t)
        var sums = [CollectionDigest.Accumulator](repeating: .init(), count: CollectionDigest.bucketCount)
        let rows = try Row.fetchCursor(db, sql: "SELECT id, rev, deleted FROM \(t.docs) WHERE deleted = 0")
        while let row = try rows.next() {
            let entry = CollectionDigest.Entry(id: row[0], revisionID: row[1], isDeleted: row[2])
            sums[CollectionDigest.bucket(of: entry.id)].add(entry.words, deleted: entry.isDeleted)
        }
        try apply(db, collectionID: t.id, sums.enumerated().lazy.filter { $0.element.count > 0 }.map { ($0.offset, $0.element) })
    }

    /// Adds each of `changes` (by bucket) to a collection's rows: read, combined here, written back,
    /// with raw cached statements. Through GRDB's arguments and an SQL function, each bucket's
    /// update cost a single save about a tenth of its time.
    static func apply(_ db: GRDB.Database, collectionID: Int64, _ changes: some Sequence<(bucket: Int, change: CollectionDigest.Accumulator)>) throws {
        let read = try SQLiteStatement.cached(db, "SELECT count, deleted, hash FROM c\(collectionID)_digest WHERE bucket = ?")
        let write = try SQLiteStatement.cached(db, "UPDATE c\(collectionID)_digest SET count = ?, deleted = ?, hash = ? WHERE bucket = ?")
        for (bucket, change) in changes {
            read.bind(1, Int64(bucket))
            guard try read.step() else {
                read.reset()
                throw StoreError.storage("the digest table c\(collectionID)_digest has no bucket \(bucket)")
            }
            let stored = read.withBlob(2, CollectionDigest.Words.init(bytes:))
            // A damaged row is said, as reading the digest says it, never overwritten with a guess.
            guard var hash = stored else {
                read.reset()
                throw StoreError.storage("the digest table c\(collectionID)_digest is damaged (bucket \(bucket))")
            }
            hash ^= change.hash
            let count = read.int64(0) + Int64(change.count), deleted = read.int64(1) + Int64(change.deleted)
            // The row is let go before it is written.
            read.reset()
            write.bind(1, count)
            write.bind(2, deleted)
            withUnsafeBytes(of: (hash.high.bigEndian, hash.low.bigEndian)) { write.bind(3, blob: $0) }
            write.bind(4, Int64(bucket))
            defer { write.reset() }
            _ = try write.step()
        }
    }

    /// The digest: the table's rows plus the changes logged since they were last written (``DigestLog``).
    static func read(_ db: GRDB.Database, _ t: CollectionTables) throws -> CollectionDigest {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT count, deleted, hash FROM \(t.digest) ORDER BY bucket"))
        let damaged = StoreError.storage("the digest table \(t.digest) is damaged")
        var sums = try rows.map { row in
            guard let hash = ((row[2] as Data?) ?? Data()).withUnsafeBytes(CollectionDigest.Words.init(bytes:)) else { throw damaged }
            return CollectionDigest.Accumulator(count: row[0], deleted: row[1], hash: hash)
        }
        guard sums.count == CollectionDigest.bucketCount else { throw damaged }
        for (bucket, change) in try DigestLog.read(db, collectionID: t.id) { sums[bucket].add(change) }
        guard let digest = CollectionDigest(buckets: sums.map(\.bucket)) else { throw damaged }
        return digest
    }

    /// The live entries of one bucket, by ID. It computes each ID's bucket (a scan of the ID index:
    /// about 0.4 s per million documents); comparisons ask only for the buckets that differ.
    static func entries(_ db: GRDB.Database, _ t: CollectionTables, bucket: Int) throws -> [CollectionDigest.Entry] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, rev, deleted FROM \(t.docs) WHERE id IN (SELECT id FROM \(t.docs) WHERE sn_digest_bucket(id) = ?) AND deleted = 0 ORDER BY id
            """), arguments: [bucket]).map { CollectionDigest.Entry(id: $0[0], revisionID: $0[1], isDeleted: $0[2]) }
    }
}
