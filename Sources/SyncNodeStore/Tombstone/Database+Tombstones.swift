import Foundation
import GRDB

extension Database {
    /// When tombstones are reaped; nil (the default) keeps them forever.
    ///
    /// Setting a policy starts reaping in the background (the first pass at once), and
    /// remembers its time to live in the file so `syncnode info` can report on it.
    /// Setting nil stops it.
    public var tombstonePolicy: TombstonePolicy? {
        get { state.withLock { $0.tombstonePolicy } }
        set {
            state.withLock { $0.tombstonePolicy = newValue }
            do {
                try write { db in
                    if let newValue {
                        try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES('tombstone_ttl', ?)", arguments: ["\(newValue.seconds)"])
                    } else {
                        try db.execute(sql: "DELETE FROM meta WHERE key = 'tombstone_ttl'")
                    }
                }
            } catch {
                logger.error("could not record the tombstone policy: \(error)")
            }
            if let newValue {
                tombstoneReaper.start(database: self, every: newValue.seconds / 8)
            } else {
                tombstoneReaper.stop()
            }
        }
    }

    /// The time to live of the last ``tombstonePolicy`` set on this file (by this process or an
    /// earlier one); nil when none is.
    public func recordedTombstoneTimeToLive() throws -> Duration? {
        try readStatement { db in
            try Double.fetchOne(db, sql: "SELECT CAST(value AS REAL) FROM meta WHERE key = 'tombstone_ttl'").map { .milliseconds(Int64($0 * 1000)) }
        }
    }

    /// One pass of the ``tombstonePolicy``: in each collection, purges the tombstones older
    /// than its time to live that its horizon lets go. The reaper calls it on a timer.
    ///
    /// Reaped tombstones leave the changes feed and the digest, as purged documents do;
    /// ``compact()`` then gives their space back.
    /// - Returns: a report per collection; empty without a policy. A collection that fails (its
    ///   horizon cannot be read, it was deleted meanwhile) is logged and left out.
    /// - Throws: ``StoreError`` when the database is closed or its collections cannot be listed.
    @discardableResult
    public func reapTombstones(now: Date = Date()) throws -> [TombstoneReport] {
        guard let policy = tombstonePolicy else { return [] }
        return try allCollections().compactMap { collection in
            do {
                return try collection.tombstones(under: policy, now: now, reap: true)
            } catch StoreError.databaseClosed(let name) {
                throw StoreError.databaseClosed(name)
            } catch {
                // One collection (deleted meanwhile, a horizon that cannot be read) holds no other back.
                logger.error("reaping tombstones failed", metadata: ["collection": "\(collection.fullName)", "error": "\(error)"])
                return nil
            }
        }
    }

    /// What ``reapTombstones(now:)`` would find under `policy`, without reaping or writing.
    /// - Throws: ``StoreError`` when the store fails, or what the horizon throws.
    public func tombstoneReport(under policy: TombstonePolicy, now: Date = Date()) throws -> [TombstoneReport] {
        try allCollections().map { try $0.tombstones(under: policy, now: now, reap: false) }
    }
}

extension DocumentCollection {
    /// Tombstones per reap: one write transaction each, so writers wait briefly.
    private static let reapBatch = 500

    func tombstones(under policy: TombstonePolicy, now: Date, reap: Bool) throws -> TombstoneReport {
        try checkLive()
        let cutoff = now.timeIntervalSince1970 - policy.seconds
        if reap {
            try database.write { db in
                try TombstoneClock.record(db, collectionID: tableID, now: now.timeIntervalSince1970, cutoff: cutoff)
            }
        }
        let bound = try database.readStatement { db in try TombstoneClock.ageBound(db, collectionID: tableID, cutoff: cutoff) } ?? 0
        let total = try tombstoneCount(through: nil), expired = try tombstoneCount(through: bound)
        var report = TombstoneReport(collection: fullName, tombstones: total, expired: expired, waiting: 0, reaped: 0, holders: [])
        guard expired > 0 else { return report }
        let hold = try policy.horizon?.hold(on: self) ?? TombstoneHold()
        let limit = min(bound, hold.sequence ?? bound)
        report.waiting = expired - (try limit > 0 ? tombstoneCount(through: limit) : 0)
        if report.waiting > 0 { report.holders = hold.peers.filter { $0.sequence < bound }.map { "\($0.name) \($0.note)" } }
        if reap, limit > 0 { report.reaped = try reapTombstones(through: limit) }
        return report
    }

    /// Tombstones at sequences up to `sequence` (nil: all).
    private func tombstoneCount(through sequence: Int64?) throws -> Int {
        try database.readStatement { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM \(tables.docs) WHERE deleted = 1 AND seq <= ?", arguments: [sequence ?? Int64.max]) ?? 0
        }
    }

    /// Purges the tombstones at sequences up to `sequence`, a batch per transaction.
    private func reapTombstones(through sequence: Int64) throws -> Int {
        var reaped = 0
        while true {
            let batch = try database.write { db in
                let ids = try String.fetchAll(db, sql: "SELECT id FROM \(tables.docs) WHERE deleted = 1 AND seq <= ? LIMIT ?",
                                              arguments: [sequence, Self.reapBatch])
                for id in ids { _ = try purgeRow(db, id: id) }
                return ids.count
            }
            reaped += batch
            if batch < Self.reapBatch { return reaped }
        }
    }
}
