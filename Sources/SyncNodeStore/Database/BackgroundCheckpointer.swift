import Dispatch
import GRDB
import Synchronization

/// Copies the write-ahead log into the database file from a connection of its
/// own while bulk writes go on, so the copy overlaps the writing instead of
/// following it.
///
/// SQLite's passive checkpoint never blocks the writer and never waits for it:
/// each pass copies the frames committed so far. Once a pass has copied the
/// whole log, the writer's next transaction starts the log from the
/// beginning, so the log also stays small. What is left at the end is one
/// batch or two for the final checkpoint.
final class BackgroundCheckpointer: Sendable {
    private let connection: DatabaseQueue
    private let stopped = Mutex(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// How long a pass waits before the next one: a batch of a thousand
    /// one-kilobyte documents commits about this often.
    static let interval: DispatchTimeInterval = .milliseconds(20)

    /// Opens a connection to `path` and starts checkpointing on a thread of its own.
    init(path: String) throws {
        var configuration = Configuration()
        configuration.label = "syncnode.checkpointer"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        DispatchQueue.global(qos: .utility).async { [self] in run() }
    }

    private func run() {
        defer { done.signal() }
        while !stopped.withLock({ $0 }) {
            // A failed pass (the file busy, a disk error) is not the import's failure:
            // the final checkpoint copies whatever this one did not.
            _ = try? connection.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
            _ = wake.wait(timeout: .now() + Self.interval)
        }
    }

    /// Stops after the pass under way and closes the connection.
    func stop() {
        stopped.withLock { $0 = true }
        wake.signal()
        done.wait()
        try? connection.close()
    }
}
