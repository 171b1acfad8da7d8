import Foundation
import GRDB

/// Where a collection's ``CollectionDigest`` lives: `c<id>_digest`, one row per bucket
/// (`bucket`, `count`, `deleted`, `hash`). Every write transaction changes it once, before it
/// commits, by what its writes changed (``DigestLedger``), so it commits or rolls back with
/// them. Two SQL functions, registered on every connection of the store, serve it:
/// `sn_digest_bucket(id)` (listing a bucket) and `sn_digest_merge(hash, hash)` (the exclusive
/// or of two 16-byte hashes).
enum DigestTable {
    static func registerFunctions(_ db: GRDB.Database) {
        db.add(function: DatabaseFunction("sn_digest_bucket", argumentCount: 1, pure: true) { args in
            guard var id = String.fromDatabaseValue(args[0]) else { return nil }
            return id.withUTF8 { CollectionDigest.bucket(ofUTF8: UnsafeRawBufferPointer($0)) }
        })
        db.add(function: DatabaseFunction("sn_digest_merge", argumentCount: 2, pure: true) { args in
            let a = Data.fromDatabaseValue(args[0]) ?? Data(), b = Data.fromDatabaseValue(args[1]) ?? Data()
            return Data((0..<16).map { i in (i < a.count ? a[a.startIndex + i] : 0) ^ (i < b.count ? b[b.startIndex + i] : 0) })
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
        let rows = try Row.fetchCursor(db, sql: "SELECT id, rev, deleted FROM \(t.docs)")
        while let row = try rows.next() {
            let entry = CollectionDigest.Entry(id: row[0], revisionID: row[1], isDeleted: row[2])
            sums[CollectionDigest.bucket(of: entry.id)].add(entry.words, deleted: entry.isDeleted)
        }
        let statement = try db.makeStatement(sql: applySQL(collectionID: t.id))
        for (bucket, sum) in sums.enumerated() where sum.count > 0 { try apply(statement, bucket: bucket, sum) }
    }

    /// The statement that adds a change to one of a collection's buckets (see ``apply(_:bucket:_:)``).
    static func applySQL(collectionID: Int64) -> String {
        "UPDATE c\(collectionID)_digest SET count = count + ?, deleted = deleted + ?, hash = sn_digest_merge(hash, ?) WHERE bucket = ?"
    }

    /// Adds `change` to a bucket's row, with a statement of ``applySQL(collectionID:)``.
    static func apply(_ statement: Statement, bucket: Int, _ change: CollectionDigest.Accumulator) throws {
        try statement.execute(arguments: [change.count, change.deleted, Data(CollectionDigest.bytes(of: change.hash)), bucket])
    }

    static func read(_ db: GRDB.Database, _ t: CollectionTables) throws -> CollectionDigest {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT count, deleted, hash FROM \(t.digest) ORDER BY bucket"))
        let buckets = rows.map { row in
            CollectionDigest.Bucket(count: row[0], deleted: row[1], hash: Hex.string(Array((row[2] as Data?) ?? Data())))
        }
        guard let digest = CollectionDigest(buckets: buckets) else { throw StoreError.storage("the digest table \(t.digest) is damaged") }
        return digest
    }

    /// The entries of one bucket, by ID. It computes each ID's bucket (a scan of the ID index:
    /// about 0.4 s per million documents); comparisons ask only for the buckets that differ.
    static func entries(_ db: GRDB.Database, _ t: CollectionTables, bucket: Int) throws -> [CollectionDigest.Entry] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, rev, deleted FROM \(t.docs) WHERE id IN (SELECT id FROM \(t.docs) WHERE sn_digest_bucket(id) = ?) ORDER BY id
            """), arguments: [bucket]).map { CollectionDigest.Entry(id: $0[0], revisionID: $0[1], isDeleted: $0[2]) }
    }
}
