import Synchronization

/// The continuous replications a listener runs for `POST /_replicate`,
/// by replication ID; stopped with the listener.
final class ServerReplications: Sendable {
    private let running = Mutex<[String: Replicator]>([:])
    /// Per replication ID: whether whoever started it may still run it (checked at each ``revalidate()``).
    private let allowed = Mutex<[String: @Sendable () -> Bool]>([:])
    /// Where the node lists them (`_active_tasks`).
    let tasks: ReplicationTasks

    init(tasks: ReplicationTasks) {
        self.tasks = tasks
    }

    /// Starts `replicator` under `id` unless one runs there already; false if it did.
    /// `allowed` tells whether whoever started it may still run it.
    func start(_ replicator: Replicator, id: String, allowed: @escaping @Sendable () -> Bool = { true }) -> Bool {
        running.withLock { all -> Bool in
            // By its task, not its status: a just-started replicator still reads `stopped`.
            if let existing = all[id], existing.isRunning { return false }
            if let existing = all[id] { tasks.remove(existing) }
            all[id] = replicator
            // The check of whoever started this one, not of a later asker of the same ID.
            self.allowed.withLock { $0[id] = allowed }
            tasks.add(replicator)
            replicator.start()  // under the lock, so a concurrent request sees it running
            // One that stops by itself (refused, its peer gone for good) is listed no more as running.
            Task { [weak self] in
                await replicator.waitUntilStopped()
                self?.ended(replicator, id: id)
            }
            return true
        }
    }

    /// `replicator` stopped: forgotten under `id` and listed as recent.
    private func ended(_ replicator: Replicator, id: String) {
        _ = forget(replicator, id: id)
        tasks.remove(replicator)
    }

    /// Forgets `replicator` under `id`, with its access check; false when another runs there now.
    private func forget(_ replicator: Replicator, id: String) -> Bool {
        running.withLock { all in
            guard all[id] === replicator else { return false }
            all[id] = nil
            allowed.withLock { _ = $0.removeValue(forKey: id) }
            return true
        }
    }

    /// Stops and forgets the replication `id`; false if there is none.
    func cancel(id: String) async -> Bool {
        allowed.withLock { _ = $0.removeValue(forKey: id) }
        guard let replicator = running.withLock({ $0.removeValue(forKey: id) }) else { return false }
        replicator.stop()
        await replicator.waitUntilStopped()
        tasks.remove(replicator)
        return true
    }

    /// Cancels each replication whose starter may run it no more (untrusted, removed, dropped
    /// from `_security`).
    func revalidate() async {
        let checks = allowed.withLock { $0 }
        for (id, stillAllowed) in checks {
            // Only the job that was checked: one restarted under the same ID meanwhile has its own starter.
            guard let checked = running.withLock({ $0[id] }), !stillAllowed(), forget(checked, id: id) else { continue }
            checked.stop()
            await checked.waitUntilStopped()
            tasks.remove(checked)
        }
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
