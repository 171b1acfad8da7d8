import GRDB

/// When each collection's sequence stood where: a tombstone's age, which no row keeps.
///
/// Each pass of the reaper notes the collection's last sequence with the time. A tombstone
/// at sequence `s` was written before the first note whose sequence is at least `s`, so it
/// is older than the time to live once that note is. Ages are over-estimated by at most
/// one pass, never under-estimated.
enum TombstoneClock {
    static func createTable(_ db: GRDB.Database) throws {
        try db.execute(sql: """
            CREATE TABLE tombstone_clock(
                collection_id INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                at REAL NOT NULL,
                PRIMARY KEY(collection_id, seq))
            """)
    }

    /// Notes the collection's sequence at `now`, and forgets notes older than the newest one
    /// past `cutoff` (the only one of them that still bounds anything).
    ///
    /// A clock set back notes nothing until it passes the latest pass again (kept in `meta`):
    /// a note dated before an earlier pass would make tombstones look older than they are.
    static func record(_ db: GRDB.Database, collectionID: Int64, now: Double, cutoff: Double) throws {
        let lastPass = try Double.fetchOne(db, sql: "SELECT CAST(value AS REAL) FROM meta WHERE key = 'tombstone_clock_pass'") ?? 0
        guard now >= lastPass else { return }
        try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES('tombstone_clock_pass', ?)", arguments: ["\(now)"])
        guard let sequence = try Int64.fetchOne(db, sql: "SELECT last_seq FROM collections WHERE id = ?", arguments: [collectionID]) else { return }
        let latest = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM tombstone_clock WHERE collection_id = ?", arguments: [collectionID])
        if latest.map({ sequence > $0 }) ?? true {
            try db.execute(sql: "INSERT OR IGNORE INTO tombstone_clock(collection_id, seq, at) VALUES(?, ?, ?)", arguments: [collectionID, sequence, now])
        }
        if let bound = try ageBound(db, collectionID: collectionID, cutoff: cutoff) {
            try db.execute(sql: "DELETE FROM tombstone_clock WHERE collection_id = ? AND seq < ?", arguments: [collectionID, bound])
        }
    }

    /// The highest sequence known to have been reached at or before `cutoff`: every tombstone
    /// up to it is older than `cutoff`. Nil when none is known.
    static func ageBound(_ db: GRDB.Database, collectionID: Int64, cutoff: Double) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(seq) FROM tombstone_clock WHERE collection_id = ? AND at <= ?", arguments: [collectionID, cutoff])
    }
}
