import Foundation
import GRDB

/// Where a collection's ``CollectionDigest`` lives: `c<id>_digest`, one row per bucket
/// (`bucket`, `count`, `deleted`, `hash`), kept by triggers on the documents table. Triggers,
/// not the write paths, so that no path (a save, a replicated revision, a purge, expiry,
/// compaction, a migration) can forget it, and it commits or rolls back with the write.
/// Each trigger calls two SQL functions every connection of the store registers:
/// `sn_digest_bucket(id)` and `sn_digest_xor(hash, id, rev, deleted)`.
enum DigestTable {
    static func registerFunctions(_ db: GRDB.Database) {
        db.add(function: DatabaseFunction("sn_digest_bucket", argumentCount: 1, pure: true) { args in
            guard let id = String.fromDatabaseValue(args[0]) else { return nil }
            return CollectionDigest.bucket(ofUTF8: Array(id.utf8))
        })
        db.add(function: DatabaseFunction("sn_digest_xor", argumentCount: 4, pure: true) { args in
            guard let id = String.fromDatabaseValue(args[1]), let rev = String.fromDatabaseValue(args[2]) else { return nil }
            var hash = Data.fromDatabaseValue(args[0]).map(Array.init) ?? []
            if hash.count != 16 { hash = [UInt8](repeating: 0, count: 16) }
            let entry = CollectionDigest.Entry.hash(id: Array(id.utf8), rev: Array(rev.utf8), deleted: Int64.fromDatabaseValue(args[3]) == 1)
            for i in 0..<16 { hash[i] ^= entry[i] }
            return Data(hash)
        })
    }

    /// The table, its empty buckets and the triggers, for a new collection.
    static func create(_ db: GRDB.Database, _ t: CollectionTables) throws {
        let digest = t.digest, docs = t.docs
        // Out with an entry, in with an entry: a document's bucket row, in one statement each.
        func remove(_ row: String) -> String {
            "UPDATE \(digest) SET count = count - 1, deleted = deleted - \(row).deleted, hash = sn_digest_xor(hash, \(row).id, \(row).rev, \(row).deleted) WHERE bucket = sn_digest_bucket(\(row).id);"
        }
        func add(_ row: String) -> String {
            "UPDATE \(digest) SET count = count + 1, deleted = deleted + \(row).deleted, hash = sn_digest_xor(hash, \(row).id, \(row).rev, \(row).deleted) WHERE bucket = sn_digest_bucket(\(row).id);"
        }
        try db.execute(sql: """
            CREATE TABLE \(digest)(
                bucket INTEGER PRIMARY KEY,
                count INTEGER NOT NULL,
                deleted INTEGER NOT NULL,
                hash BLOB NOT NULL);
            WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM b WHERE n < \(CollectionDigest.bucketCount - 1))
            INSERT INTO \(digest)(bucket, count, deleted, hash) SELECT n, 0, 0, zeroblob(16) FROM b;
            CREATE TRIGGER \(digest)_insert AFTER INSERT ON \(docs) BEGIN \(add("NEW")) END;
            CREATE TRIGGER \(digest)_delete AFTER DELETE ON \(docs) BEGIN \(remove("OLD")) END;
            CREATE TRIGGER \(digest)_update AFTER UPDATE OF id, rev, deleted ON \(docs)
                WHEN OLD.id IS NOT NEW.id OR OLD.rev IS NOT NEW.rev OR OLD.deleted IS NOT NEW.deleted
                BEGIN \(remove("OLD")) \(add("NEW")) END;
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
            let id: String = row[0], rev: String = row[1], deleted: Bool = row[2]
            let utf8 = Array(id.utf8)
            sums[CollectionDigest.bucket(ofUTF8: utf8)].add(CollectionDigest.Entry.hash(id: utf8, rev: Array(rev.utf8), deleted: deleted), deleted: deleted)
        }
        let update = try db.makeStatement(sql: "UPDATE \(t.digest) SET count = ?, deleted = ?, hash = ? WHERE bucket = ?")
        for (bucket, sum) in sums.enumerated() where sum.count > 0 {
            try update.execute(arguments: [sum.count, sum.deleted, Data(sum.hash), bucket])
        }
    }

    static func read(_ db: GRDB.Database, _ t: CollectionTables) throws -> CollectionDigest {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT count, deleted, hash FROM \(t.digest) ORDER BY bucket"))
        let buckets = rows.map { row in
            CollectionDigest.Bucket(count: row[0], deleted: row[1], hash: CollectionDigest.hex(Array((row[2] as Data?) ?? Data())))
        }
        guard let digest = CollectionDigest(buckets: buckets) else { throw StoreError.storage("the digest table \(t.digest) is damaged") }
        return digest
    }

    /// The entries of one bucket, by ID. It computes each ID's bucket (a scan of the ID index:
    /// about a second per million documents); comparisons ask only for the buckets that differ.
    static func entries(_ db: GRDB.Database, _ t: CollectionTables, bucket: Int) throws -> [CollectionDigest.Entry] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, rev, deleted FROM \(t.docs) WHERE id IN (SELECT id FROM \(t.docs) WHERE sn_digest_bucket(id) = ?) ORDER BY id
            """), arguments: [bucket]).map { CollectionDigest.Entry(id: $0[0], revisionID: $0[1], isDeleted: $0[2]) }
    }
}
