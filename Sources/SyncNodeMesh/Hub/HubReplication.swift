import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// One keyspace kept in sync with the hub (``MeshConfiguration/hubs``), continuously and both
/// ways, through one member at a time.
///
/// A watch looks at the replication twice a second. Once it has been offline or failing for
/// ``MeshConfiguration/hubFailover``, the replication stops (its checkpoint saved) and starts
/// again with the next member. The members of a cluster share its UUID, and checkpoints are keyed
/// on it: the next member resumes from the checkpoint, so at most the batch in flight crosses
/// again.
///
/// The hub shows on the presence board as the peer ``boardID`` (`GET /_node/peers`,
/// `/_node/sync-status`, the dashboard), at the member in use, measured in sync as LAN peers are.
final class HubReplication: Sendable {
    /// The hub's entry on the presence board: one for the whole cluster, whichever member is used.
    static let boardID = "hub"

    private struct State {
        var member = 0
        var replication: PeerReplication?
        var failingSince: ContinuousClock.Instant?
        /// Changes the member's replication had examined in its pass at its last status.
        var examined = 0
        /// What the replications with earlier members moved, and the one with the current member.
        var movedBefore = ReplicationResult()
        var moved = ReplicationResult()
        /// The cluster as checkpoints name it, once a member has been reached.
        var identity: String?
        var failovers = 0
        var stopped = false
    }

    let keyspace: Keyspace
    /// The hub database (``MeshConfiguration/hubDatabase(for:)``).
    let database: String
    /// The local collection it replicates.
    let collection: DocumentCollection
    private let configuration: MeshConfiguration
    private let tasks: ReplicationTasks
    private let board: PresenceBoard
    private let state = Mutex(State())
    private let watch = Mutex<Task<Void, Never>?>(nil)

    /// Starts replicating `collection` with the first hub member.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the keyspace has no valid hub
    ///   database name, and the errors of making a replicator (the node's client identity).
    init(keyspace: Keyspace, collection: DocumentCollection, configuration: MeshConfiguration, tasks: ReplicationTasks,
         board: PresenceBoard) throws {
        self.keyspace = keyspace
        self.database = try MeshConfiguration.hubDatabase(for: keyspace)
        self.collection = collection
        self.configuration = configuration
        self.tasks = tasks
        self.board = board
        try connect(member: 0)
        guard configuration.hubs.count > 1 else { return }
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                guard let self else { return }
                if self.isFailing { await self.failOver() }
            }
        }
        watch.withLock { $0 = task }
    }

    /// How many times the replication moved to another member.
    var failovers: Int { state.withLock { $0.failovers } }

    /// The revisions written each way with every member used so far: what crossed again after a
    /// failover shows as more than the documents needed.
    var moved: ReplicationResult {
        state.withLock { $0.movedBefore + $0.moved }
    }

    /// The hub as this node's checkpoints name it, `<cluster uuid>/<database>` (every member
    /// shares it), once a member has been reached; nil before.
    var remoteIdentity: String? {
        let current = state.withLock { $0.replication }?.replicator.remoteIdentity
        return state.withLock { s in
            if let current { s.identity = current }
            return s.identity
        }
    }

    /// The member in use, without its credentials: `HOST:PORT`.
    var member: String { state.withLock { Self.hostAndPort(configuration.hubs[$0.member]) } }

    private var isFailing: Bool {
        state.withLock { s in s.failingSince.map { ContinuousClock.now - $0 >= configuration.hubFailover } ?? false }
    }

    private static func hostAndPort(_ url: URL) -> String { "\(url.host ?? "?"):\(url.port.map(String.init) ?? "")" }

    /// Starts the replication with member `index`; returns it when the hub stopped meanwhile, for
    /// the caller to stop (a failover under way when the node stopped).
    @discardableResult
    private func connect(member index: Int) throws -> PeerReplication? {
        guard !state.withLock({ $0.stopped }) else { return nil }
        let url = configuration.hubs[index].appendingPathComponent(database)
        let label = "hub \(Self.hostAndPort(url))/\(database)"
        let member = configuration.hubs[index]
        board.update(Self.boardID, make: {
            MeshPeer(uuid: Self.boardID, name: "hub", host: "", port: 0, addresses: configuration.hubs.compactMap(\.host),
                     fingerprint: nil, trusted: true, discovered: false, collections: [:])
        }) { peer in
            peer?.host = member.host ?? ""
            peer?.port = member.port ?? (member.scheme == "https" ? 443 : 80)
        }
        // A subscription chooses what comes from the hub; the node's own changes all go to it.
        let subscription = configuration.subscription(for: keyspace)
        let replication = try PeerReplication(
            collection: collection, url: url, configuration: configuration, tasks: tasks, type: .pushAndPull,
            trustOnFirstUse: false, selector: subscription, filtersPushes: false, createTarget: true
        ) { [weak self, board, keyspace, configuration] status in
            self?.note(status, member: index)
            board.record(status, peer: Self.boardID, keyspace: keyspace, subscription: subscription)
            configuration.onEvent?(.replication(label: label, status: status))
        } judged: { [board, keyspace, configuration] judgement, crossed in
            board.settle(judgement, crossed: crossed, peer: Self.boardID, name: "hub", keyspace: keyspace, onEvent: configuration.onEvent)
        }
        let kept = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            (s.member, s.replication, s.failingSince, s.examined) = (index, replication, nil, 0)
            return true
        }
        return kept ? nil : replication
    }

    /// Notes when the replication with `member` started failing, or that it works again: idle, or
    /// busy and either error-free or examining changes. A retry is busy again after its wait with
    /// the error still set, and must not restart the clock; connecting between retries is neither.
    /// A member that answers and refuses this node (401, 403) is not failing: the members share
    /// their users, so the next one would refuse it too.
    private func note(_ status: ReplicatorStatus, member: Int) {
        let refused = (status.error as? CouchError).map { [401, 403].contains($0.status) } ?? false
        let failing = !refused && (status.activity == .offline || (status.activity == .stopped && status.error != nil))
        state.withLock { s in
            guard s.member == member else { return }
            let progressed = status.progress.completed > s.examined
            s.examined = status.progress.completed
            s.moved = status.result
            let working = status.activity == .idle || (status.activity == .busy && (status.error == nil || progressed))
            if working || refused { s.failingSince = nil } else if failing, s.failingSince == nil { s.failingSince = .now }
        }
    }

    private func failOver() async {
        guard let (old, from) = state.withLock({ s -> (PeerReplication?, Int)? in
            guard !s.stopped else { return nil }
            defer { s.replication = nil }
            return (s.replication, s.member)
        }) else { return }
        let next = (from + 1) % configuration.hubs.count
        configuration.logger.warning("hub member failing: moving to the next", metadata: [
            "keyspace": "\(keyspace)", "from": "\(Self.hostAndPort(configuration.hubs[from]))", "to": "\(Self.hostAndPort(configuration.hubs[next]))",
        ])
        await old?.stop()
        // The next member is the one in use from now on, even if it cannot be started: the
        // following failover moves past it.
        state.withLock { s in
            s.failovers += 1
            s.movedBefore = s.movedBefore + s.moved
            (s.member, s.failingSince, s.moved) = (next, .now, ReplicationResult())
        }
        do {
            await (try connect(member: next))?.stop()
        } catch {
            configuration.logger.error("cannot replicate with the hub", metadata: ["keyspace": "\(keyspace)", "error": "\(error)"])
        }
    }

    /// Stops for good, after the batch in flight (its checkpoint saved).
    func stop() async {
        let watching = watch.withLock { $0 }
        watching?.cancel()
        // A failover under way finishes first (it keeps nothing once stopped is set): what it
        // stops and starts must be stopped before this returns.
        state.withLock { $0.stopped = true }
        await watching?.value
        let replication = state.withLock { s -> PeerReplication? in
            defer { s.replication = nil }
            return s.replication
        }
        await replication?.stop()
    }
}

private extension ReplicationResult {
    static func + (a: Self, b: Self) -> Self {
        Self(pushed: a.pushed + b.pushed, pulled: a.pulled + b.pulled, failed: a.failed + b.failed)
    }
}
