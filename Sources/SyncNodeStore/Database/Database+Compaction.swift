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
        let collections = try read { db in try Schema.allCollectionIDs(db) }.map(CollectionTables.init(id:))
        var droppedBodies = 0
        var deletedBlobs = 0
        try write { db in
            var referenced = Set<String>()
            progress(.collections(done: 0, of: collections.count))
            for (done, tables) in collections.enumerated() {
                droppedBodies += try dropNonLeafBodies(db, tables)
                for table in [tables.docs, tables.revs] {
                    // Canonical JSON writes blob metadata with sorted keys, so this finds every blob.
                    let digests = try String.fetchAll(db, sql: """
                        SELECT json_extract(j.value, '$.digest') FROM \(table), json_tree(\(table).body) AS j
                        WHERE \(table).body LIKE '%"@type":"blob"%' AND j.type = 'object'
                          AND json_extract(j.value, '$."@type"') = 'blob'
                        """)
                    referenced.formUnion(digests)
                }
                progress(.collections(done: done + 1, of: collections.count))
            }
            // A blob written by a save in progress (the sync layer stores attachment
            // content before the revision that refers to it) is young: keep blobs
            // newer than ten minutes even when nothing refers to them yet.
            let cutoff = Date().addingTimeInterval(-blobGracePeriod)
            for digest in blobStore.allDigests() where !referenced.contains(digest) && blobStore.modified(digest: digest) < cutoff {
                blobStore.delete(digest: digest)
                deletedBlobs += 1
            }
        }
        progress(.vacuum)
        try mappingVacuum()
        logger.info("compacted", metadata: ["database": "\(name)", "droppedBodies": "\(droppedBodies)", "deletedBlobs": "\(deletedBlobs)"])
    }

    private func dropNonLeafBodies(_ db: GRDB.Database, _ tables: CollectionTables) throws -> Int {
        let rows = try Row.fetchAll(db, sql: """
            SELECT r.doc_key, r.rev, d.tree FROM \(tables.revs) r JOIN \(tables.docs) d ON d.key = r.doc_key
            """)
        var dropped = 0
        for row in rows {
            let tree = try RevisionTree(serialized: row[2])
            let rev: String = row[1]
            if let index = tree.index(of: rev), tree.isLeaf(index) { continue }
            try db.execute(sql: "DELETE FROM \(tables.revs) WHERE doc_key = ? AND rev = ?", arguments: [row[0] as Int64, rev])
            dropped += 1
        }
        return dropped
    }

    private func mappingVacuum() throws {
        try checkOpen()
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                try db.execute(sql: "VACUUM")
            }
        } catch {
            throw StoreError.storage("vacuum: \(error)")
        }
    }
}
