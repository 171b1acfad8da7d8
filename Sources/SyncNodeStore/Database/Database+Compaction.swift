import Foundation
import GRDB

extension Database {
    /// Reclaims space: drops the bodies of revisions that are no longer
    /// leaves, deletes blob files no kept body refers to (unless written in
    /// the last ten minutes: a sync in progress may be about to refer to
    /// them), and vacuums the file.
    /// - Throws: ``StoreError/databaseClosed(_:)`` when the database is closed; ``StoreError/storage(_:)``
    ///   when SQLite fails (the vacuum included).
    public func compact() throws {
        try compact(blobGracePeriod: 600, progress: { _ in })
    }

    /// Where a compaction is, as ``compact(progress:)`` reports it.
    public enum CompactionStep: Sendable, Equatable {
        /// Old bodies and unreferenced blobs: `done` of `of` collections.
        case collections(done: Int, of: Int)
        /// The file is being rewritten (SQLite's VACUUM, which tells no progress); the last step.
        case vacuum
    }

    /// ``compact()``, calling `progress` as each collection is done and as the vacuum starts.
    /// - Throws: as ``compact()``.
    public func compact(progress: (CompactionStep) -> Void) throws {
        try compact(blobGracePeriod: 600, progress: progress)
    }

    func compact(blobGracePeriod: TimeInterval, progress: (CompactionStep) -> Void = { _ in }) throws {
        // Each pass reads in a snapshot and writes in short transactions: writers beside a
        // compaction of a big database wait a batch at a time, not for the whole of it.
        let collections = try read { db in try Schema.allCollectionIDs(db) }.map(CollectionTables.init(id:))
        var droppedBodies = 0
        var referenced = Set<String>()
        // Per collection, the newest sequence its scan saw: what is written after is looked at again.
        var scanned: [Int64: Int64] = [:]
        progress(.collections(done: 0, of: collections.count))
        for (done, tables) in collections.enumerated() {
            droppedBodies += try dropNonLeafBodies(tables)
            let (digests, newest) = try read { db in
                (try Self.blobDigests(db, tables.docs) + Self.blobDigests(db, tables.revs),
                 try Int64.fetchOne(db, sql: "SELECT max(seq) FROM \(tables.docs)") ?? 0)
            }
            referenced.formUnion(digests)
            scanned[tables.id] = newest
            progress(.collections(done: done + 1, of: collections.count))
        }
        // A blob written by a save in progress (the sync layer stores attachment
        // content before the revision that refers to it) is young: keep blobs
        // newer than ten minutes even when nothing refers to them yet.
        let cutoff = Date().addingTimeInterval(-blobGracePeriod)
        let deletedBlobs = try write { db in
            // What was saved since the scans may refer to a blob again: bodies newer than a
            // collection's scan, bodies moved to its revisions table, collections made since.
            for tables in try Schema.allCollectionIDs(db).map(CollectionTables.init(id:)) {
                let since = scanned[tables.id].map { " AND seq > \($0)" } ?? ""
                referenced.formUnion(try Self.blobDigests(db, tables.docs, filter: since))
                referenced.formUnion(try Self.blobDigests(db, tables.revs))
            }
            var deleted = 0
            for digest in blobStore.allDigests() where !referenced.contains(digest) && blobStore.modified(digest: digest) < cutoff {
                blobStore.delete(digest: digest)
                deleted += 1
            }
            return deleted
        }
        progress(.vacuum)
        try reclaimSpace()
        logger.info("compacted", metadata: ["database": "\(name)", "droppedBodies": "\(droppedBodies)", "deletedBlobs": "\(deletedBlobs)"])
    }

    /// The digests of the blobs that bodies in `table` refer to (those `filter`, an SQL
    /// condition after `AND`, keeps).
    private static func blobDigests(_ db: GRDB.Database, _ table: String, filter: String = "") throws -> [String] {
        // Canonical JSON writes blob metadata with sorted keys, so this finds every blob.
        try String.fetchAll(db, sql: """
            SELECT json_extract(j.value, '$.digest') FROM \(table), json_tree(\(table).body) AS j
            WHERE \(table).body LIKE '%"@type":"blob"%'\(filter) AND j.type = 'object'
              AND json_extract(j.value, '$."@type"') = 'blob'
            """)
    }

    /// Drops the bodies of revisions that are no longer leaves: found in a snapshot, dropped in
    /// batches, each checked again against its document's tree as it is dropped.
    private func dropNonLeafBodies(_ tables: CollectionTables) throws -> Int {
        let found = try read { db in
            try Array(Row.fetchCursor(db, sql: """
                SELECT r.doc_key, r.rev, d.tree FROM \(tables.revs) r JOIN \(tables.docs) d ON d.key = r.doc_key
                """).compactMap { row -> (key: Int64, rev: String)? in
                let tree = try RevisionTree(serialized: row[2])
                let rev: String = row[1]
                if let index = tree.index(of: rev), tree.isLeaf(index) { return nil }
                return (row[0], rev)
            })
        }
        var dropped = 0
        for start in stride(from: 0, to: found.count, by: Self.compactionBatch) {
            dropped += try write { db in
                var count = 0
                for (key, rev) in found[start..<min(start + Self.compactionBatch, found.count)] {
                    guard let serialized = try String.fetchOne(db, sql: "SELECT tree FROM \(tables.docs) WHERE key = ?", arguments: [key]) else { continue }
                    let tree = try RevisionTree(serialized: serialized)
                    if let index = tree.index(of: rev), tree.isLeaf(index) { continue }
                    try db.execute(sql: "DELETE FROM \(tables.revs) WHERE doc_key = ? AND rev = ?", arguments: [key, rev])
                    count += db.changesCount
                }
                return count
            }
        }
        return dropped
    }

    /// Rows dropped, or pages given back, per write transaction of a compaction.
    static let compactionBatch = 500

    /// Gives the free pages back to the file system. A database kept with incremental vacuum
    /// (every one made since) does it a batch of pages per short write; an older one is
    /// rewritten whole once (writers wait for it), and is kept so from then on.
    private func reclaimSpace() throws {
        try checkOpen()
        do {
            if try read({ db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") }) == Self.incrementalVacuum {
                while try write({ db in
                    try db.execute(sql: "PRAGMA incremental_vacuum(\(Self.compactionBatch * 4))")
                    return try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                }) > 0 {}
            } else {
                try pool.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                    try db.execute(sql: "PRAGMA auto_vacuum = \(Self.incrementalVacuum)")
                    try db.execute(sql: "VACUUM")
                }
            }
            // The moved pages (a VACUUM's: the whole file) went through the WAL, and the file
            // keeps its length until a checkpoint: without one, a compacted file measured larger
            // than before. Truncating the WAL needs the readers gone: wait a second for them,
            // not the writers' full patience, and leave the WAL long if one is still reading.
            // The background checkpointer's pass holds the checkpoint a moment: the truncation
            // reports busy at once then (not waiting), so it is tried again within that second,
            // each try waiting a tenth of it for readers.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA busy_timeout = 100")
                defer { try? db.execute(sql: "PRAGMA busy_timeout = \(Int(Self.busyTimeout * 1000))") }
                let deadline = Date().addingTimeInterval(1)
                // Its row: busy (1 when it could not finish), the log's frames, those checkpointed.
                while try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") != 0, Date() < deadline {
                    usleep(50_000)
                }
            }
        } catch {
            throw StoreError.from(error, doing: "vacuum")
        }
    }

    /// How long a connection waits for a lock another holds (a CLI command beside a running node).
    static let busyTimeout: TimeInterval = 10

    /// SQLite's `auto_vacuum` mode that keeps what `incremental_vacuum` needs to give pages back.
    static let incrementalVacuum = 2
}
