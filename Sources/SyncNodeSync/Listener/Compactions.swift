import Dispatch
import Logging
import Synchronization
import SyncNodeStore

/// The compactions `POST /{db}/_compact` started: one per database at a time, each on a
/// thread of its own (a vacuum of a large file takes a while, and must not hold a
/// cooperative thread or the request).
final class Compactions: Sendable {
    private let running = Mutex<Set<String>>([])

    /// Whether `database` is being compacted (`compact_running` in `GET /{db}`).
    func isRunning(_ database: String) -> Bool { running.withLock { $0.contains(database) } }

    /// Compacts `database` in the background unless a compaction of it runs already.
    func start(_ database: Database, logger: Logger) {
        let name = database.name
        guard running.withLock({ $0.insert(name).inserted }) else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            do {
                try database.compact()
            } catch {
                logger.warning("compaction failed", metadata: ["database": "\(name)", "error": "\(error)"])
            }
            _ = running.withLock { $0.remove(name) }
        }
    }
}
