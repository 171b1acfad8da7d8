import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// A continuous replication of one collection with one peer, reporting every state change.
///
/// A replicator stops for good on errors no retry of its own can fix (401, 403, a certificate
/// that does not match). Between mesh nodes these can pass: a peer that trusts on first use
/// refuses this node until it has seen it through DNS-SD itself, which may be a moment after
/// this node saw the peer. So a replication that stopped on an error starts again, after
/// 2, 4, ... up to 30 s, for as long as the mesh keeps it.
final class PeerReplication: Sendable {
    let replicator: Replicator
    private let token: ListenerToken
    /// Where the node lists it (`GET /_active_tasks`).
    private let tasks: ReplicationTasks
    private let stopped: Flag
    /// Measures whether it is in sync (replications with peers the board shows).
    private let audit: SyncAudit?

    init(
        collection: DocumentCollection, url: URL, configuration: MeshConfiguration, tasks: ReplicationTasks, type: ReplicatorType,
        trustOnFirstUse: Bool, selector: DocumentValue? = nil, filtersPushes: Bool = true, createTarget: Bool = false,
        report: @escaping @Sendable (ReplicatorStatus) -> Void, judged: (@Sendable (SyncAudit.Judgement, _ crossed: Bool) -> Bool)? = nil
    ) throws {
        var config = ReplicatorConfiguration(collection: collection, target: .url(url))
        config.replicatorType = type
        config.selector = selector
        config.filtersPushes = filtersPushes
        config.createTarget = createTarget
        // The node signs in with its certificate too: a peer that trusts it needs no password.
        config.clientIdentity = try configuration.clientIdentity()
        config.continuous = true
        config.conflictResolver = configuration.conflictResolver
        config.compression = configuration.compression
        config.acceptOnlySelfSignedServerCertificate = trustOnFirstUse
        // A LAN peer that drops out is usually back within seconds (a partition heals, a node restarts).
        config.maxAttemptWaitTime = .seconds(5)
        let replicator = Replicator(config: config)
        let stopped = Flag()
        let failures = Mutex(0)
        let audit = judged.map { SyncAudit(replicator: replicator, interval: configuration.syncCheckInterval, report: $0) }
        let activity = Mutex(ReplicatorActivity.stopped)
        token = replicator.addChangeListener { change in
            report(change.status)
            let changed = activity.withLock { last in
                defer { last = change.status.activity }
                return last != change.status.activity
            }
            if changed { audit?.wake() }
            guard change.status.activity == .stopped, change.status.error != nil, !stopped.isSet else {
                if change.status.activity == .idle { failures.withLock { $0 = 0 } }
                return
            }
            let attempt = failures.withLock { count in
                count += 1
                return count
            }
            Task {
                try? await Task.sleep(for: RetryPolicy.meshRestart.delay(afterFailures: attempt))
                if !stopped.isSet { replicator.start() }
            }
        }
        self.replicator = replicator
        self.audit = audit
        self.stopped = stopped
        self.tasks = tasks
        tasks.add(replicator)
        replicator.start()
    }

    /// The local collection it replicates.
    var collection: DocumentCollection { replicator.config.collection }

    /// Stops after the batch in flight (its checkpoint is saved), for good.
    func stop() async {
        stopped.set()
        audit?.stop()
        replicator.stop()
        await replicator.waitUntilStopped()
        token.remove()
        tasks.remove(replicator)
    }

    private final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }
}
