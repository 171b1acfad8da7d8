import Dispatch
import Foundation
import GRDB
import Synchronization

/// Notices commits made by other processes on the same database file (a
/// `syncnode put` beside a running node) and tells this process's listeners.
///
/// In-process commits notify listeners directly; they also record the
/// sequences they took here, so the watcher skips them (unless another
/// process committed in between). When a file of the database's directory is
/// written (its write-ahead log, on every commit of any process), it reads
/// each collection's sequence counter (one small query) and, when another
/// process moved it, announces the documents changed since. On Linux the
/// process's ``DirectoryWriteMonitor`` wakes it, so an idle database costs no
/// wakeups at all; elsewhere it polls four times a second.
final class ExternalChangeWatcher: Sendable {
    private struct State {
        weak var database: Database?
        var seen: [Int64: Int64] = [:]
        var subscription: DirectoryWriteMonitor.Subscription?
        var paused = false
        var timer: SendableDispatchSource<any DispatchSourceTimer>?
    }

    private let queue = DispatchQueue(label: "syncnode.external-changes")
    private let state = Mutex(State())
    private let pollCount = Atomic(0)
    /// How many times the counters were read: no writes, no reads (on Linux).
    var polls: Int { pollCount.load(ordering: .relaxed) }
    static let interval = DispatchTimeInterval.milliseconds(250)

    func start(database: Database) throws {
        let counters = try database.read { db in try Self.counters(db) }
        let subscription = subscribe(database)
        let timer = subscription == nil ? makeTimer() : nil
        state.withLock { s in
            s.database = database
            s.seen = counters
            s.subscription = subscription
            s.timer = timer
        }
    }

    private func subscribe(_ database: Database) -> DirectoryWriteMonitor.Subscription? {
        DirectoryWriteMonitor.shared?.subscribe(directory: database.path.path) { [self] in
            queue.async { [self] in poll() }
        }
    }

    /// Stops watching the directory (not the timer, where there is one) while this
    /// process writes in bulk; other processes' commits meanwhile are found by ``resume()``.
    func pause() {
        let subscription = state.withLock { s in
            defer { s.subscription = nil }
            s.paused = s.subscription != nil
            return s.subscription
        }
        subscription?.cancel()
    }

    /// Watches again after ``pause()``, and looks for commits made while it did not.
    func resume() {
        guard let database = state.withLock({ s in s.paused ? s.database : nil }) else { return }
        let subscription = subscribe(database)
        let stopped = state.withLock { s in
            s.paused = false
            if s.database == nil { return true }
            s.subscription = subscription
            return false
        }
        if stopped { subscription?.cancel() }
        queue.async { [self] in poll() }
    }

    private func makeTimer() -> SendableDispatchSource<any DispatchSourceTimer> {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(50))
        timer.setEventHandler { [self] in poll() }
        timer.resume()
        return SendableDispatchSource(base: timer)
    }

    func stop() {
        state.withLock { s in
            s.subscription?.cancel()
            s.subscription = nil
            s.timer?.base.cancel()
            s.timer = nil
            s.database = nil
        }
    }

    /// Sequences this process committed (called just before its own commits).
    /// They are skipped only when they follow what was seen: another process's
    /// commit in between must still be announced (then these are announced
    /// again with it, which listeners tolerate better than a missed change).
    func noteOwnCommit(_ allocated: [Int64: SequenceAllocator.Allocated]) {
        state.withLock { s in
            for (id, range) in allocated where range.before == s.seen[id, default: 0] { s.seen[id] = range.last }
        }
    }

    private func advance(_ id: Int64, to seq: Int64) {
        state.withLock { s in
            if seq > s.seen[id, default: 0] { s.seen[id] = seq }
        }
    }

    private static func counters(_ db: GRDB.Database) throws -> [Int64: Int64] {
        var out: [Int64: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, last_seq FROM collections") { out[row[0]] = row[1] }
        return out
    }

    private func poll() {
        pollCount.add(1, ordering: .relaxed)
        guard let database = state.withLock({ $0.database }) else { return }
        do {
            let changed: [(Int64, [ChangedDocument], Int64)] = try database.read { db in
                let counters = try Self.counters(db)
                let seen = state.withLock { $0.seen }
                var out: [(Int64, [ChangedDocument], Int64)] = []
                // Nobody to tell: only move the counters on (no query four times a second).
                let listening = database.notifier.listenerCount > 0
                for (id, seq) in counters where seq > seen[id, default: 0] {
                    guard listening else { out.append((id, [], seq)); continue }
                    let tables = CollectionTables(id: id)
                    // Another process's writes: what they left is known, not who made them (`.local`:
                    // a CLI or app on the same data directory). Its purges leave no row to report.
                    let rows = try Row.fetchAll(
                        db, sql: "SELECT id, rev, deleted, tree FROM \(tables.docs) WHERE seq > ? ORDER BY seq", arguments: [seen[id, default: 0]])
                    out.append((id, try rows.map { row in
                        ChangedDocument(id: row[0], revisionID: row[1], isDeleted: row[2],
                                        isConflicted: try RevisionTree(serialized: row[3]).hasConflict, origin: .local)
                    }, seq))
                }
                return out
            }
            for (id, changes, seq) in changed {
                advance(id, to: seq)
                if !changes.isEmpty { database.notifier.deliver(collectionID: id, changes: changes) }
            }
        } catch {
            // Closed or busy: try again at the next tick.
        }
    }
}
