import Dispatch
import Foundation
import Synchronization

/// Runs ``Database/reapTombstones(now:)`` on a timer while a ``TombstonePolicy`` is set: every
/// eighth of the time to live, at least every second and at most every minute.
final class TombstoneReaper: Sendable {
    private struct State {
        weak var database: Database?
        var timer: DispatchSourceTimer?
    }

    private let queue = DispatchQueue(label: "syncnode.tombstones")
    private let state = Mutex(State())

    func start(database: Database, every interval: Double) {
        let period = min(max(interval, 1), 60)
        state.withLock { s in
            s.timer?.cancel()
            s.database = database
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: period, leeway: .milliseconds(100))
            timer.setEventHandler { [self] in run() }
            timer.resume()
            s.timer = timer
        }
    }

    func stop() {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
            s.database = nil
        }
    }

    private func run() {
        guard let database = state.withLock({ $0.database }) else { return }
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
