import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the write-ahead log into the database file on a connection and a
/// queue of its own, so that writers do not stop to do it.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the log
/// past 1000 pages, on the writer's thread: about 15% of a bulk insert's time.
/// Here the writer's commit hook only asks, and a passive checkpoint (which
/// never blocks the writer and never waits for it) copies the frames
/// committed so far while the writer goes on. Once the whole log has been
/// copied, the writer's next transaction starts the log from the beginning.
/// A pass copies only what was committed when it began, though, so behind a
/// steady writer the checkpointer never quite catches up: a 100,000-document
/// insert left a 147 MB log when the writer waited for 256 MiB. So once the
/// log reaches ``writerPages`` the writer copies the rest itself (little:
/// the passes copied the bulk) and the log restarts, at about 18 MB.
///
/// Behind a steady writer of small transactions the passes never catch up either. Asking after
/// every commit past ``requestPages`` made a pass, with its two fsyncs, every 3.5 single saves
/// (2,833 fsyncs for 5,000 saves). So a commit asks only once the log has grown
/// ``requestPages`` since the last time it asked (131 fsyncs for the same saves), and when the
/// writer has been quiet for ``quietInterval`` a last pass copies the rest, so that its next
/// transaction can restart the log.
final class BackgroundCheckpointer: Sendable {
    private let path: String
    /// The passes' queue (internal so that a test can hold it, as a busy machine might).
    let queue = DispatchQueue(label: "syncnode.checkpointer", qos: .utility)
    private struct State {
        var scheduled = false
        var closed = false
        var connection: DatabaseQueue?
    }
    private let state = Mutex(State())
    private let passCount = Atomic(0)
    /// The log pages at which a commit next asks for a pass (touched only by the writer's hook).
    private let nextRequest = Atomic<Int32>(BackgroundCheckpointer.requestPages)
    /// When the last commit past ``requestPages`` was made (`DispatchTime` nanoseconds).
    private let lastCommit = Atomic<UInt64>(0)
    /// Whether a pass waits for the writer to go quiet: set by the writer's hook, without a lock.
    private let quietPassScheduled = Atomic(false)
    /// Checkpoints run so far.
    var passes: Int { passCount.load(ordering: .relaxed) }

    /// Log pages (4 KiB) at which a commit asks for a checkpoint: SQLite's own threshold.
    static let requestPages: Int32 = 256
    /// Log pages (16 MiB) at which the writer checkpoints itself after all.
    static let writerPages: Int32 = 4096
    /// How long the writer must have made no commit before the log's rest is copied.
    static let quietInterval: UInt64 = 50_000_000

    /// A checkpointer for the database file at `path`; its connection opens at the first checkpoint.
    init(path: String) { self.path = path }

    /// Replaces SQLite's automatic checkpoint on the writer's connection `db` with requests to this
    /// checkpointer, which must outlive that connection.
    func install(on db: GRDB.Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, handle, _, pages in
            guard let context else { return SQLITE_OK }
            if pages >= BackgroundCheckpointer.writerPages {
                sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else {
                Unmanaged<BackgroundCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(logPages: pages)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A commit left the log at `pages`: asks for a pass once it has grown ``requestPages`` since
    /// the last time it asked (or since it restarted), and for one once the writer is quiet.
    private func committed(logPages pages: Int32) {
        var threshold = nextRequest.load(ordering: .relaxed)
        if pages < threshold - Self.requestPages { threshold = Self.requestPages }  // the log restarted
        guard pages >= threshold else {
            nextRequest.store(threshold, ordering: .relaxed)
            if pages >= Self.requestPages { requestWhenQuiet() }
            return
        }
        nextRequest.store(pages + Self.requestPages, ordering: .relaxed)
        request()
    }

    /// Schedules a pass for when no commit has come for ``quietInterval``, unless one is scheduled.
    private func requestWhenQuiet() {
        lastCommit.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        // After a close the pass finds no connection and does nothing.
        guard !quietPassScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        passWhenQuiet(after: Self.quietInterval)
    }

    private func passWhenQuiet(after nanoseconds: UInt64) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            let quiet = DispatchTime.now().uptimeNanoseconds &- lastCommit.load(ordering: .relaxed)
            if quiet < Self.quietInterval {
                passWhenQuiet(after: Self.quietInterval - quiet)
                return
            }
            quietPassScheduled.store(false, ordering: .releasing)
            checkpoint()
        }
    }

    /// Schedules a checkpoint, unless one is scheduled and has not started yet.
    func request() {
        let schedule = state.withLock { s in
            guard !s.scheduled, !s.closed else { return false }
            s.scheduled = true
            return true
        }
        guard schedule else { return }
        queue.async { [self] in
            state.withLock { $0.scheduled = false }  // commits from now on ask again
            checkpoint()
        }
    }

    private func checkpoint() {
        guard let connection = connection() else { return }
        passCount.add(1, ordering: .relaxed)
        // A failed pass (the file busy, a disk error) loses nothing: the log keeps the frames, and
        // the next pass, or the writer past ``writerPages``, copies them.
        _ = try? connection.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
    }

    /// The checkpointer's connection, opened on first use (on the queue); nil once closed.
    private func connection() -> DatabaseQueue? {
        // Checked before opening: a pass that waited for the writer to go quiet can come after the close.
        let (existing, closed) = state.withLock { ($0.connection, $0.closed) }
        if closed { return nil }
        if let existing { return existing }
        var configuration = Configuration()
        configuration.label = "syncnode.checkpointer"
        guard let opened = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        let kept = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.connection = opened
            return true
        }
        if !kept { try? opened.close() }
        return kept ? opened : nil
    }

    /// Waits for a pass under way and closes the connection; later requests do nothing.
    func close() {
        state.withLock { $0.closed = true }
        queue.sync {}
        let connection = state.withLock { s in
            defer { s.connection = nil }
            return s.connection
        }
        try? connection?.close()
    }
}
