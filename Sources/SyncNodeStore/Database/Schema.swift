import Foundation
import GRDB

/// The SQLite schema.
///
/// - `meta(key, value)`: the database UUID.
/// - `collections(id, scope, name, last_seq, digest_log)`: one row per collection
///   (IDs never reused); its sequence counter lives here so it survives purges and
///   is shared by every connection and process, and so do its digest changes
///   not yet folded into its digest table (``DigestLog``).
/// - per collection `c<id>_docs`: one row per document (winner revision's body,
///   revision tree, latest sequence, expiration); `c<id>_revs`: bodies of the
///   other revisions (conflicting leaves, and ancestors until compaction);
///   `c<id>_local`: `_local` documents (checkpoints), never replicated, with who wrote
///   each and when (``TombstoneHorizon``s read them);
///   `c<id>_buckets`: the ``CollectionDigest``'s 256 buckets, 32 to a row (``DigestTable``, kept by ``DigestLedger``).
/// - `indexes(id, collection_id, name, definition)`: value indexes
///   (`c<cid>_ix<id>`, SQLite expression indexes on the docs table) and
///   full-text indexes (`c<cid>_fts<id>`, FTS5 tables kept by triggers).
/// - `tombstone_clock(collection_id, seq, at)`: when each collection's sequence was
///   seen where (``TombstoneClock``), to tell a tombstone's age.
enum Schema {
    static func migrate(_ pool: DatabasePool) throws -> String {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                CREATE TABLE collections(
                    id INTEGER PRIMARY KEY,
                    scope TEXT NOT NULL,
                    name TEXT NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    UNIQUE(scope, name));
                """)
            try db.execute(sql: "INSERT INTO meta(key, value) VALUES('uuid', ?)", arguments: [newUUID()])
            try createCollection(db, scope: Names.defaultScope, name: Names.defaultCollection)
        }
        migrator.registerMigration("v2-indexes") { db in try IndexCatalog.createTable(db) }
        migrator.registerMigration("v3-collection-ids") { db in
            // A collection's ID names its tables and keys listeners, compiled queries and the
            // change watcher's counters: one made after the newest was deleted must not get its ID.
            try db.execute(sql: """
                CREATE TABLE collections_v3(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    scope TEXT NOT NULL,
                    name TEXT NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    UNIQUE(scope, name));
                INSERT INTO collections_v3(id, scope, name, last_seq) SELECT id, scope, name, last_seq FROM collections;
                DROP TABLE collections;
                ALTER TABLE collections_v3 RENAME TO collections;
                """)
        }
        migrator.registerMigration("v4-deleted-index") { db in
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") { try createDeletedIndex(db, CollectionTables(id: id)) }
        }
        migrator.registerMigration("v5-couchdb-winners") { db in
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") { try repickWinners(db, CollectionTables(id: id)) }
        }
        migrator.registerMigration("v6-digests") { db in
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") { try DigestTable.build(db, CollectionTables(id: id)) }
        }
        migrator.registerMigration("v7-digest-log") { db in
            try db.execute(sql: "ALTER TABLE collections ADD COLUMN digest_log BLOB")
        }
        migrator.registerMigration("v8-tombstone-clock") { db in
            try TombstoneClock.createTable(db)
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") {
                let t = CollectionTables(id: id)
                // Collections made by this version's createCollection have them already.
                guard try !db.columns(in: t.local).contains(where: { $0.name == "writer" }) else { continue }
                try db.execute(sql: "ALTER TABLE \(t.local) ADD COLUMN writer TEXT; ALTER TABLE \(t.local) ADD COLUMN written_at REAL")
            }
        }
        migrator.registerMigration("v9-live-digests") { db in
            // Digests leave tombstones out from this version on: counted again without them.
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM collections") {
                let t = CollectionTables(id: id)
                try db.execute(sql: "DROP TABLE IF EXISTS \(t.digest); DROP TABLE IF EXISTS \(DigestTable.legacyName(id))")
                try db.execute(sql: "UPDATE collections SET digest_log = NULL WHERE id = ?", arguments: [id])
                try DigestTable.build(db, t)
            }
        }
        migrator.registerMigration("v10-packed-digests", migrate: DigestTable.repackAll)
        try migrator.migrate(pool)
        // A binary from before v10 may have opened the file since, and made a collection the old way.
        if try pool.read(DigestTable.needsRepacking) {
            try pool.write(DigestTable.repackAll)
        }
        return try pool.read { db in
            guard let uuid = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'uuid'") else {
                throw StoreError.storage("database has no UUID")
            }
            return uuid
        }
    }

    static func newUUID() -> String { UUID().uuidString.lowercased() }

    static func assignNewUUID(_ db: GRDB.Database) throws {
        try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'uuid'", arguments: [newUUID()])
    }

    static func createCollection(_ db: GRDB.Database, scope: String, name: String) throws {
        try db.execute(sql: "INSERT INTO collections(scope, name) VALUES(?, ?)", arguments: [scope, name])
        let t = CollectionTables(id: db.lastInsertedRowID)
        try db.execute(sql: """
            CREATE TABLE \(t.docs)(
                key INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                rev TEXT NOT NULL,
                seq INTEGER NOT NULL,
                deleted INTEGER NOT NULL,
                body TEXT NOT NULL,
                tree TEXT NOT NULL,
                expiration REAL);
            CREATE UNIQUE INDEX \(t.docs)_seq ON \(t.docs)(seq);
            CREATE INDEX \(t.docs)_expiration ON \(t.docs)(expiration) WHERE expiration IS NOT NULL;
            CREATE TABLE \(t.revs)(
                doc_key INTEGER NOT NULL,
                rev TEXT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY(doc_key, rev));
            CREATE TABLE \(t.local)(
                id TEXT PRIMARY KEY NOT NULL,
                generation INTEGER NOT NULL,
                body TEXT NOT NULL,
                writer TEXT,
                written_at REAL);
            """)
        try createDeletedIndex(db, t)
        try DigestTable.create(db, t)
    }

    /// Tombstones by sequence, small: counting documents (database info, asked for by
    /// PouchDB on every batch) reads this and the sequence index, never the bodies.
    private static func createDeletedIndex(_ db: GRDB.Database, _ t: CollectionTables) throws {
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(t.docs)_deleted ON \(t.docs)(seq) WHERE deleted = 1")
    }

    /// Winners stored before CouchDB's order: between a 32-hex-digit suffix and another shape
    /// at the same generation, the stored winner may be the other leaf. Each row's winner is
    /// picked again from its tree, and the bodies swap places if it changed (no new sequence:
    /// the leaves are the same, only which one shows).
    private static func repickWinners(_ db: GRDB.Database, _ t: CollectionTables) throws {
        // Trees only (bodies are read just for the rows that change): an upgrade must not hold every body in memory.
        let rows = try Row.fetchAll(db, sql: "SELECT key, rev, tree FROM \(t.docs) WHERE instr(tree, char(10)) > 0")
        for row in rows {
            let key: Int64 = row["key"], stored: String = row["rev"], tree = try RevisionTree(serialized: row["tree"])
            guard let winner = tree.winner, tree.nodes[winner].rev != stored else { continue }
            let winnerRev = tree.nodes[winner].rev
            let storedBody = try String.fetchOne(db, sql: "SELECT body FROM \(t.docs) WHERE key = ?", arguments: [key]) ?? "{}"
            let body = try String.fetchOne(db, sql: "SELECT body FROM \(t.revs) WHERE doc_key = ? AND rev = ?", arguments: [key, winnerRev]) ?? "{}"
            try db.execute(sql: "DELETE FROM \(t.revs) WHERE doc_key = ? AND rev = ?", arguments: [key, winnerRev])
            try db.execute(sql: "INSERT OR REPLACE INTO \(t.revs)(doc_key, rev, body) VALUES(?, ?, ?)", arguments: [key, stored, storedBody])
            try db.execute(sql: "UPDATE \(t.docs) SET rev = ?, deleted = ?, body = ? WHERE key = ?",
                           arguments: [winnerRev, tree.nodes[winner].deleted ? 1 : 0, body, key])
        }
    }

    static func dropCollection(_ db: GRDB.Database, id: Int64) throws {
        let t = CollectionTables(id: id)
        try IndexCatalog.deleteAll(db, collectionID: id)
        try db.execute(sql: "DROP TABLE \(t.docs); DROP TABLE \(t.revs); DROP TABLE \(t.local); DROP TABLE IF EXISTS \(t.digest); DROP TABLE IF EXISTS \(DigestTable.legacyName(id));")
        try db.execute(sql: "DELETE FROM collections WHERE id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM tombstone_clock WHERE collection_id = ?", arguments: [id])
    }

    static func collectionID(_ db: GRDB.Database, scope: String, name: String) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT id FROM collections WHERE scope = ? AND name = ?", arguments: [scope, name])
    }

    static func collectionNames(_ db: GRDB.Database, scope: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM collections WHERE scope = ? ORDER BY name", arguments: [scope])
    }

    static func scopeNames(_ db: GRDB.Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT DISTINCT scope FROM collections ORDER BY scope")
    }

    static func allCollectionIDs(_ db: GRDB.Database) throws -> [Int64] {
        try Int64.fetchAll(db, sql: "SELECT id FROM collections")
    }
}

/// The table names of one collection, and the statements run once per
/// document. Names come from the integer row ID, never from user input, so
/// they are safe to interpolate into SQL.
///
/// All are made once: building the text (an allocation) for every statement
/// of every document showed in the write path's profile.
struct CollectionTables: Sendable {
    let id: Int64
    let docs: String
    let revs: String
    let local: String
    let digest: String

    /// A document's row by ID: key, rev, seq, deleted, body, tree.
    let selectRow: String
    /// A live document's winner by ID: rev, seq, deleted, body.
    let selectDocument: String
    /// A document's key, winning rev and tree by ID, without its body.
    let selectTree: String
    let updateRow: String
    let insertRow: String
    let keepBody: String
    let dropBody: String
    /// ID and tree of the documents named in a JSON array of IDs (a batch's `_revs_diff`).
    let selectTrees: String
    /// A page of changes after a sequence: id, rev, seq, deleted, tree (and body).
    let selectChanges: String
    let selectChangesWithBodies: String

    init(id: Int64) {
        self.id = id
        docs = "c\(id)_docs"
        revs = "c\(id)_revs"
        local = "c\(id)_local"
        digest = DigestTable.name(id)
        selectRow = "SELECT key, rev, seq, deleted, body, tree FROM \(docs) WHERE id = ?"
        selectDocument = "SELECT rev, seq, deleted, body FROM \(docs) WHERE id = ?"
        selectTree = "SELECT key, rev, tree FROM \(docs) WHERE id = ?"
        updateRow = "UPDATE \(docs) SET rev = ?1, seq = ?2, deleted = ?3, body = ?4, tree = ?5 WHERE key = ?6"
        // Doing nothing when the ID is taken lets a new document's save skip looking first (see
        // `DocumentCollection.insertFirstRevision`); every other caller has looked.
        insertRow = "INSERT INTO \(docs)(rev, seq, deleted, body, tree, id) VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(id) DO NOTHING"
        keepBody = "INSERT OR REPLACE INTO \(revs)(doc_key, rev, body) VALUES(?1, ?2, ?3)"
        dropBody = "DELETE FROM \(revs) WHERE doc_key = ?1 AND rev = ?2"
        selectTrees = "SELECT d.id, d.tree FROM json_each(?1) AS j JOIN \(docs) AS d ON d.id = j.value"
        selectChanges = "SELECT id, rev, seq, deleted, tree FROM \(docs) WHERE seq > ?1 ORDER BY seq LIMIT ?2"
        selectChangesWithBodies = "SELECT id, rev, seq, deleted, tree, body FROM \(docs) WHERE seq > ?1 ORDER BY seq LIMIT ?2"
    }
}
