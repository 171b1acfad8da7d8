import Foundation
import Synchronization
import SyncNodeStore

/// One replication a node runs or ran: what it connects and how it is going.
public struct ReplicationTask: Sendable, Identifiable {
    /// Unique among the node's tasks while it runs.
    public let id: String
    /// Where changes come from: a local keyspace (`db` or `db.scope.collection`) or a peer's URL
    /// without its password. A push-and-pull replication names the local side as its source.
    public let source: String
    /// Where changes go.
    public let target: String
    /// `push`, `pull` or `push_and_pull`.
    public let direction: String
    /// Runs until stopped (true) or for one pass.
    public let continuous: Bool
    /// When it was listed.
    public let startedOn: Date
    /// When its status last changed.
    public var updatedOn: Date
    /// When it ended; nil while it runs.
    public var endedOn: Date?
    /// Its status at ``updatedOn`` (at ``endedOn`` for an ended task).
    public var status: ReplicatorStatus

    /// CouchDB's `_active_tasks` entry (with `state`, `last_error` and `ended_on` beside CouchDB's fields).
    public var json: DocumentValue {
        let progress = status.progress
        var entry: [String: DocumentValue] = [
            "type": "replication", "replication_id": .string(id), "source": .string(source), "target": .string(target),
            "direction": .string(direction), "continuous": .bool(continuous),
            "started_on": .int(Int64(startedOn.timeIntervalSince1970)), "updated_on": .int(Int64(updatedOn.timeIntervalSince1970)),
            "changes_pending": .int(Int64(max(0, progress.total - progress.completed))),
            "docs_read": .int(Int64(progress.completed)),
            "docs_written": .int(Int64(status.result.pushed + status.result.pulled)),
            "doc_write_failures": .int(Int64(status.result.failed)),
            "checkpointed_source_seq": status.lastCheckpoint.map { .string($0) } ?? .null,
            "progress": .int(Int64(progress.total == 0 ? 100 : progress.completed * 100 / progress.total)),
            "state": .string(endedOn == nil ? status.activity.rawValue : "ended"),
        ]
        if let error = status.error { entry["last_error"] = .string("\(error)") }
        if let endedOn { entry["ended_on"] = .int(Int64(endedOn.timeIntervalSince1970)) }
        return .dictionary(entry)
    }
}

/// The replications a node runs, for `GET /_active_tasks`, `GET /_scheduler/jobs` and the
/// dashboard. Whoever starts a replicator lists it here and removes it when it stops for good;
/// the last few removed stay listed as recent.
public final class ReplicationTasks: Sendable {
    private struct Entry: Sendable {
        var task: ReplicationTask
        let replicator: Replicator
        let token: ListenerToken
    }
    private struct State {
        var running: [ObjectIdentifier: Entry] = [:]
        var recent: [ReplicationTask] = []
        var next = 0
        /// What the removed tasks moved.
        var ended = ReplicationResult()
    }
    private let state = Mutex(State())
    private let keepRecent: Int

    /// A registry that keeps the last `keepRecent` ended tasks.
    public init(keepRecent: Int = 20) {
        self.keepRecent = keepRecent
    }

    /// Lists `replicator` as running (again: once only) until ``remove(_:)``.
    public func add(_ replicator: Replicator) {
        let key = ObjectIdentifier(replicator)
        state.withLock { s in
            guard s.running[key] == nil else { return }
            s.next += 1
            let config = replicator.config
            let local = Keyspace(config.collection).name
            let remote: String
            switch config.target {
            case .url(let url): remote = WireURL.redacted(url)
            case .collection(let collection): remote = Keyspace(collection).name
            }
            let (source, target, direction) = switch config.replicatorType {
            case .pull: (remote, local, "pull")
            case .push: (local, remote, "push")
            case .pushAndPull: (local, remote, "push_and_pull")
            }
            let task = ReplicationTask(
                id: "\(s.next)", source: source, target: target, direction: direction, continuous: config.continuous,
                startedOn: Date(), updatedOn: Date(), status: replicator.status)
            // Its status is read from it when asked; only the time of the last change is kept.
            let token = replicator.addChangeListener { [weak self] _ in
                self?.state.withLock { $0.running[key]?.task.updatedOn = Date() }
            }
            s.running[key] = Entry(task: task, replicator: replicator, token: token)
        }
    }

    /// Moves `replicator`'s task to the recent ones, with its final status.
    public func remove(_ replicator: Replicator) {
        let entry = state.withLock { s -> Entry? in
            guard var entry = s.running.removeValue(forKey: ObjectIdentifier(replicator)) else { return nil }
            entry.task.status = replicator.status
            entry.task.endedOn = Date()
            s.ended.add(entry.task.status.result)
            s.recent.insert(entry.task, at: 0)
            if s.recent.count > keepRecent { s.recent.removeLast(s.recent.count - keepRecent) }
            return entry
        }
        entry?.token.remove()
    }

    /// The running tasks, oldest first, each with its replicator's current status.
    public var running: [ReplicationTask] {
        state.withLock { s in
            s.running.values.map { entry in
                var task = entry.task
                task.status = entry.replicator.status
                return task
            }
        }.sorted { ($0.startedOn, $0.id) < ($1.startedOn, $1.id) }
    }

    /// What every task listed so far moved, the ended ones included.
    public var totals: ReplicationResult {
        state.withLock { s in
            s.running.values.reduce(into: s.ended) { sum, entry in sum.add(entry.replicator.status.result) }
        }
    }

    /// The tasks that ended, newest first.
    public var recent: [ReplicationTask] { state.withLock { $0.recent } }
}
