import Synchronization

/// The continuous replications a listener runs for `POST /_replicate`,
/// by replication ID; stopped with the listener.
final class ServerReplications: Sendable {
    private let running = Mutex<[String: Replicator]>([:])
    /// Where the node lists them (`_active_tasks`).
    let tasks: ReplicationTasks

    init(tasks: ReplicationTasks) {
        self.tasks = tasks
    }

    /// Starts `replicator` under `id` unless one runs there already; false if it did.
    func start(_ replicator: Replicator, id: String) -> Bool {
        running.withLock { all -> Bool in
            // By its task, not its status: a just-started replicator still reads `stopped`.
            if let existing = all[id], existing.isRunning { return false }
            if let existing = all[id] { tasks.remove(existing) }
            all[id] = replicator
            tasks.add(replicator)
            replicator.start()  // under the lock, so a concurrent request sees it running
            return true
        }
    }

    /// Stops and forgets the replication `id`; false if there is none.
    func cancel(id: String) async -> Bool {
        guard let replicator = running.withLock({ $0.removeValue(forKey: id) }) else { return false }
        replicator.stop()
        await replicator.waitUntilStopped()
        tasks.remove(replicator)
        return true
    }

    func stopAll() async {
        let all = running.withLock { all in
            defer { all = [:] }
            return Array(all.values)
        }
        for replicator in all {
            replicator.stop()
            await replicator.waitUntilStopped()
            tasks.remove(replicator)
        }
    }
}
