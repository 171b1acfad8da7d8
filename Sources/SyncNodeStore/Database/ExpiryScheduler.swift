import Foundation
import GRDB

/// Purges expired documents: once when the database opens (catching up on
/// the time it was closed), then with a timer set for the next expiration.
final class ExpiryScheduler: Sendable {
    private let timer = DatabaseTimer(label: "syncnode.expiry")

    func start(database: Database) {
        timer.attach(database)
        reschedule()
    }

    /// Purges what is due and sets the timer for the next expiration.
    func reschedule() {
        timer.async { [self] in run() }
    }

    func stop() {
        timer.stop()
    }

    private func run() {
        guard let database = timer.database else { return }
        let next: Date?
        do {
            next = try database.purgeExpired(now: Date())
        } catch StoreError.databaseClosed {
            return
        } catch {
            // Try again later (a busy writer, a collection deleted meanwhile): stopping here
            // would leave expired documents until the next expiration is set.
            database.logger.error("purging expired documents failed; retrying in a minute: \(error)")
            next = Date().addingTimeInterval(60)
        }
        guard let next else { return timer.cancel() }
        timer.schedule(after: next.timeIntervalSinceNow, leeway: .milliseconds(5)) { [self] in run() }
    }
}

extension Database {
    /// Purges every document whose expiration has passed and returns the next expiration.
    func purgeExpired(now: Date) throws -> Date? {
        var next: Double?
        try write { db in
            // Listed inside the write transaction, so a collection deleted meanwhile is not visited.
            for tables in try Schema.allCollectionIDs(db).map(CollectionTables.init(id:)) {
                let ids = try String.fetchAll(
                    db, sql: "SELECT id FROM \(tables.docs) WHERE expiration IS NOT NULL AND expiration <= ?",
                    arguments: [now.timeIntervalSince1970])
                for id in ids {
                    try db.execute(sql: "DELETE FROM \(tables.revs) WHERE doc_key = (SELECT key FROM \(tables.docs) WHERE id = ?)", arguments: [id])
                    if let row = try Row.fetchOne(db, sql: "DELETE FROM \(tables.docs) WHERE id = ? RETURNING rev, deleted", arguments: [id]) {
                        digests.record(collectionID: tables.id, id: id, old: (row[0], row[1]), new: nil)
                    }
                    _ = try sequences.next(db, collectionID: tables.id)  // a purge, as purgeRow's
                    notifier.record(db, collectionID: tables.id, change: .removed(id))
                }
                if !ids.isEmpty {
                    logger.debug("purged expired documents", metadata: ["count": "\(ids.count)"])
                }
                if let soonest = try Double.fetchOne(db, sql: "SELECT min(expiration) FROM \(tables.docs) WHERE expiration IS NOT NULL") {
                    next = min(next ?? soonest, soonest)
                }
            }
        }
        return next.map(Date.init(timeIntervalSince1970:))
    }
}
