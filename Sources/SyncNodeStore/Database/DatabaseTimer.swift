import Dispatch
import Synchronization

/// Background work on a database, on a queue of its own: the expiry of documents and the reaping
/// of tombstones. It holds the database weakly and forgets it on ``stop()``, so work that fires
/// after the database closed finds nothing to do.
final class DatabaseTimer: Sendable {
    private struct State {
        weak var database: Database?
        var timer: DispatchSourceTimer?
    }

    private let queue: DispatchQueue
    private let state = Mutex(State())

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// The database the work is for; nil once stopped.
    var database: Database? { state.withLock { $0.database } }

    /// Works for `database` from now on (replacing any schedule).
    func attach(_ database: Database) {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
            s.database = database
        }
    }

    /// Runs `work` on the queue now.
    func async(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on the queue after `delay` seconds, then every `interval` seconds when one is
    /// given, in place of what was scheduled; nothing once stopped.
    func schedule(after delay: Double, repeating interval: Double? = nil, leeway: DispatchTimeInterval, _ work: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
            guard s.database != nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            if let interval {
                timer.schedule(deadline: .now() + max(0, delay), repeating: interval, leeway: leeway)
            } else {
                timer.schedule(deadline: .now() + max(0, delay), leeway: leeway)
            }
            timer.setEventHandler(handler: work)
            timer.resume()
            s.timer = timer
        }
    }

    /// Cancels what is scheduled, keeping the database.
    func cancel() {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
        }
    }

    /// Cancels what is scheduled and forgets the database.
    func stop() {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
            s.database = nil
        }
    }
}
