import Foundation
import GRDB

/// Where a collection's ``CollectionDigest`` lives: `c<id>_buckets`, its 256 buckets packed
/// 32 to a row (`first`, the row's first bucket; `sums`, each bucket's ``CollectionDigest/Accumulator``
/// as stored, 1,024 bytes). Every write transaction changes it, or the short ``DigestLog`` of
/// changes not yet folded into it, once before it commits, by what its writes changed
/// (``DigestLedger``), so it commits or rolls back with them. An SQL function registered on
/// every connection of the store, `sn_digest_bucket(id)`, lists a bucket.
///
/// A fold names about 64 buckets at once. Kept a row per bucket (`c<id>_digest`, before
/// `v10-packed-digests`), that was 128 statements, and the largest part of what the digest
/// cost a single save (7,700 of 24,600 instructions, counted by callgrind); packed, it is 16,
/// on as many pages.
enum DigestTable {
    static let bucketsPerRow = 32

    /// The table of collection `id`'s digest (``CollectionTables/digest``).
    static func name(_ id: Int64) -> String { "c\(id)_buckets" }
    /// The table a row per bucket that files before `v10-packed-digests` kept instead.
    static func legacyName(_ id: Int64) -> String { "c\(id)_digest" }
    private static let rowSize = bucketsPerRow * CollectionDigest.Accumulator.storedSize

    static func registerFunctions(_ db: GRDB.Database) {
        db.add(function: DatabaseFunction("sn_digest_bucket", argumentCount: 1, pure: true) { args in
            guard var id = String.fromDatabaseValue(args[0]) else { return nil }
            return id.withUTF8 { CollectionDigest.bucket(ofUTF8: UnsafeRawBufferPointer($0)) }
        })
    }

    /// The table and its empty buckets, for a new collection.
    static func create(_ db: GRDB.Database, _ t: CollectionTables) throws {
        try db.execute(sql: """
            CREATE TABLE \(t.digest)(first INTEGER PRIMARY KEY, sums BLOB NOT NULL);
            WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + \(bucketsPerRow) FROM b WHERE n + \(bucketsPerRow) < \(CollectionDigest.bucketCount))
            INSERT INTO \(t.digest)(first, sums) SELECT n, zeroblob(\(rowSize)) FROM b;
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

    /// Gives the collection its packed table if it has none, and drops a digest kept a row per
    /// bucket (`c<id>_digest`, before `v10-packed-digests`, or made by such a binary since).
    /// That digest is moved as it stands: the collection's ``DigestLog`` adds to it as it did.
    /// Without one that reads as 256 buckets, the documents are counted again and the log, which
    /// added to what is lost, is dropped.
    static func repack(_ db: GRDB.Database, _ t: CollectionTables) throws {
        let legacy = legacyName(t.id)
        let hasLegacy = try db.tableExists(legacy)
        if try !db.tableExists(t.digest) {
            if hasLegacy, let sums = try legacySums(db, legacy) {
                try create(db, t)
                try apply(db, collectionID: t.id, sums.enumerated().map { ($0.offset, $0.element) })
            } else {
                try db.execute(sql: "UPDATE collections SET digest_log = NULL WHERE id = ?", arguments: [t.id])
                try build(db, t)
            }
        }
        if hasLegacy { try db.execute(sql: "DROP TABLE \(legacy)") }
    }

    /// ``repack(_:_:)`` for every collection.
    static func repackAll(_ db: GRDB.Database) throws {
        for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") { try repack(db, CollectionTables(id: id)) }
    }

    /// Whether some collection lacks its packed table or still has a row-per-bucket one: a
    /// binary from before `v10-packed-digests` opened the file since and made a collection.
    static func needsRepacking(_ db: GRDB.Database) throws -> Bool {
        // The two names of ``name(_:)`` and ``legacyName(_:)``, as SQL spells them.
        try Bool.fetchOne(db, sql: """
            SELECT EXISTS(SELECT 1 FROM collections WHERE 'c' || id || '_buckets' NOT IN (SELECT name FROM sqlite_master))
                OR EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name GLOB 'c[0-9]*_digest')
            """) ?? false
    }

    /// The 256 buckets of a row-per-bucket table; nil unless it holds exactly them.
    private static func legacySums(_ db: GRDB.Database, _ legacy: String) throws -> [CollectionDigest.Accumulator]? {
        let rows = try Row.fetchAll(db, sql: "SELECT bucket, count, deleted, hash FROM \(legacy) ORDER BY bucket")
        let sums = rows.enumerated().compactMap { index, row -> CollectionDigest.Accumulator? in
            guard Int64.fromDatabaseValue(row[0]) == Int64(index), let count = Int64.fromDatabaseValue(row[1]),
                  let deleted = Int64.fromDatabaseValue(row[2]),
                  let hash = Data.fromDatabaseValue(row[3])?.withUnsafeBytes(CollectionDigest.Words.init(bytes:)) else { return nil }
            return CollectionDigest.Accumulator(count: Int(count), deleted: Int(deleted), hash: hash)
        }
        return sums.count == CollectionDigest.bucketCount && rows.count == CollectionDigest.bucketCount ? sums : nil
    }

    /// Adds each of `changes` (sorted by bucket, each bucket once) to a collection's rows: each
    /// row they touch read, combined here, written back, with raw cached statements.
    static func apply(_ db: GRDB.Database, collectionID: Int64, _ changes: some Sequence<(bucket: Int, change: CollectionDigest.Accumulator)>) throws {
        let read = try SQLiteStatement.cached(db, "SELECT sums FROM \(name(collectionID)) WHERE first = ?")
        let write = try SQLiteStatement.cached(db, "UPDATE \(name(collectionID)) SET sums = ? WHERE first = ?")
        var row = [UInt8](repeating: 0, count: rowSize)
        var first: Int?
        func writeRow() throws {
            guard let first else { return }
            write.bind(2, Int64(first))
            try row.withUnsafeBytes { try write.stepOnce(bindingInPlace: $0, at: 1) }
        }
        for (bucket, change) in changes {
            let rowFirst = bucket - bucket % bucketsPerRow
            if rowFirst != first {
                try writeRow()
                read.bind(1, Int64(rowFirst))
                defer { read.reset() }
                guard try read.step() else { throw damaged(collectionID, "has no row for bucket \(bucket)") }
                // A damaged row is said, as reading the digest says it, never overwritten with a guess.
                let copied = read.withBlob(0) { stored -> Bool in
                    guard stored.count == rowSize else { return false }
                    row.withUnsafeMutableBytes { $0.copyMemory(from: stored) }
                    return true
                }
                guard copied else { throw damaged(collectionID, "is damaged (bucket \(bucket))") }
                first = rowFirst
            }
            row.withUnsafeMutableBytes { bytes in
                let offset = (bucket - rowFirst) * CollectionDigest.Accumulator.storedSize
                var sum = CollectionDigest.Accumulator(loading: UnsafeRawBufferPointer(bytes), at: offset)
                sum.add(change)
                sum.store(into: bytes, at: offset)
            }
        }
        try writeRow()
    }

    private static func damaged(_ collectionID: Int64, _ what: String) -> StoreError {
        StoreError.storage("the digest table \(name(collectionID)) \(what)")
    }

    /// The digest: the table's rows plus the changes logged since they were last written (``DigestLog``).
    static func read(_ db: GRDB.Database, _ t: CollectionTables) throws -> CollectionDigest {
        var sums = try stored(db, t)
        for (bucket, change) in try DigestLog.read(db, collectionID: t.id) { sums[bucket].add(change) }
        guard let digest = CollectionDigest(buckets: sums.map(\.bucket)) else { throw damaged(t.id, "is damaged") }
        return digest
    }

    /// The 256 buckets as the table holds them, without the log.
    static func stored(_ db: GRDB.Database, _ t: CollectionTables) throws -> [CollectionDigest.Accumulator] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT first, sums FROM \(t.digest) ORDER BY first"))
        var sums: [CollectionDigest.Accumulator] = []
        sums.reserveCapacity(CollectionDigest.bucketCount)
        for (index, row) in rows.enumerated() {
            // Read as database values: GRDB's typed subscripts stop the process on a wrong type.
            guard Int64.fromDatabaseValue(row[0]) == Int64(index * bucketsPerRow), let bytes = Data.fromDatabaseValue(row[1]),
                  bytes.count == rowSize else {
                throw damaged(t.id, "is damaged")
            }
            bytes.withUnsafeBytes { raw in
                for offset in stride(from: 0, to: rowSize, by: CollectionDigest.Accumulator.storedSize) {
                    sums.append(CollectionDigest.Accumulator(loading: raw, at: offset))
                }
            }
        }
        guard sums.count == CollectionDigest.bucketCount else { throw damaged(t.id, "is damaged") }
        return sums
    }

    /// The live entries of one bucket, by ID. It computes each ID's bucket (a scan of the ID index:
    /// about 0.4 s per million documents); comparisons ask only for the buckets that differ.
    static func entries(_ db: GRDB.Database, _ t: CollectionTables, bucket: Int) throws -> [CollectionDigest.Entry] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, rev, deleted FROM \(t.docs) WHERE id IN (SELECT id FROM \(t.docs) WHERE sn_digest_bucket(id) = ?) AND deleted = 0 ORDER BY id
            """), arguments: [bucket]).map { CollectionDigest.Entry(id: $0[0], revisionID: $0[1], isDeleted: $0[2]) }
    }
}
