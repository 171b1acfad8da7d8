import Foundation

/// Runs ``Database/reapTombstones(now:)`` on a timer while a ``TombstonePolicy`` is set: every
/// eighth of the time to live, at least every second and at most every minute.
final class TombstoneReaper: Sendable {
    private let timer = DatabaseTimer(label: "syncnode.tombstones")

    func start(database: Database, every interval: Double) {
        timer.attach(database)
        timer.schedule(after: 0, repeating: min(max(interval, 1), 60), leeway: .milliseconds(100)) { [self] in run() }
    }

    func stop() {
        timer.stop()
    }

    private func run() {
        guard let database = timer.database else { return }
        do {
            let reaped = try database.reapTombstones(now: Date()).reduce(0) { $0 + $1.reaped }
            if reaped > 0 { database.logger.info("reaped tombstones", metadata: ["database": "\(database.name)", "count": "\(reaped)"]) }
        } catch StoreError.databaseClosed {
            stop()
        } catch {
            // The next pass tries again (a busy writer, a horizon that cannot be read now).
            database.logger.error("reaping tombstones failed: \(error)")
        }
    }
}
