import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// The node's current view of its peers, shared by the replications that update it and the
/// readers that watch it (``MeshNode/peers``, ``MeshNode/peerUpdates()``, `GET /_node/peers`).
final class PresenceBoard: Sendable {
    private struct State {
        var peers: [String: MeshPeer] = [:]
        var watchers: [UUID: AsyncStream<[MeshPeer]>.Continuation] = [:]
    }
    private let state = Mutex(State())

    var peers: [MeshPeer] {
        state.withLock { $0.peers.values.sorted { ($0.name, $0.uuid) < ($1.name, $1.uuid) } }
    }

    var json: DocumentValue { .array(peers.map(\.json)) }

    /// Changes the peer `uuid` (made by `make` if new; `edit` may set it to nil to drop it) and
    /// tells the watchers.
    func update(_ uuid: String, make: () -> MeshPeer?, _ edit: (inout MeshPeer?) -> Void) {
        let (snapshot, watchers) = state.withLock { s -> ([MeshPeer], [AsyncStream<[MeshPeer]>.Continuation]) in
            var peer = s.peers[uuid] ?? make()
            edit(&peer)
            s.peers[uuid] = peer
            return (s.peers.values.sorted { ($0.name, $0.uuid) < ($1.name, $1.uuid) }, Array(s.watchers.values))
        }
        for watcher in watchers { watcher.yield(snapshot) }
    }

    /// The replication `label` of keyspace `keyspace` with peer `uuid` reported `status`.
    func record(_ status: ReplicatorStatus, peer uuid: String, keyspace: Keyspace, subscription: DocumentValue? = nil) {
        update(uuid, make: { nil }) { peer in
            // A stopped replication's last word, arriving after its entry was cleared, adds none back.
            guard peer?.collections[keyspace] != nil || status.activity != .stopped else { return }
            var sync = peer?.collections[keyspace] ?? MeshPeer.CollectionSync(
                activity: .stopped, progress: ReplicatorProgress(), pushed: 0, pulled: 0, lastSync: nil, lastError: nil)
            sync.activity = status.activity
            sync.subscription = subscription
            sync.progress = status.progress
            sync.pushed = status.result.pushed
            sync.pulled = status.result.pulled
            if let error = status.error {
                sync.lastError = "\(error)"
            } else if status.activity == .idle {
                sync.lastSync = Date()
                sync.lastError = nil
            }
            // In sync was measured while idle: a replicator that is no longer idle is not, until measured again.
            if sync.state == .inSync, status.activity != .idle {
                sync.state = .catchingUp
                sync.reason = "the replicator is \(status.activity.rawValue)"
            }
            peer?.collections[keyspace] = sync
        }
    }

    /// The replication of `keyspace` with peer `uuid` was judged; returns how it stands now (nil:
    /// the peer or the replication is not on the board). A judgement of in sync that a newer
    /// status overtook (the replicator is busy again) is taken as catching up.
    @discardableResult
    func record(_ judgement: SyncAudit.Judgement, peer uuid: String, keyspace: Keyspace) -> MeshPeer.CollectionSync? {
        var recorded: MeshPeer.CollectionSync?
        update(uuid, make: { nil }) { peer in
            guard var sync = peer?.collections[keyspace] else { return }
            sync.state = judgement.state
            sync.reason = judgement.reason
            if judgement.state == .inSync, sync.activity != .idle {
                sync.state = .catchingUp
                sync.reason = "the replicator is \(sync.activity.rawValue)"
            }
            // Unknown when the peer could not be asked: no count rather than an old one.
            sync.pending = judgement.pending
            if sync.state == .inSync { sync.lastInSync = Date() }
            peer?.collections[keyspace] = sync
            recorded = sync
        }
        return recorded
    }

    /// Records an audit's judgement of `keyspace` with the peer `uuid` (shown as `name`) and, when
    /// it `crossed` into or out of in sync and stands, tells `onEvent`. Returns whether it stands:
    /// the board may already hold a newer status's demotion (a pass running), and a later
    /// judgement says it then. What a replication's `judged` hook does.
    func settle(_ judgement: SyncAudit.Judgement, crossed: Bool, peer uuid: String, name: String, keyspace: Keyspace,
                onEvent: (@Sendable (MeshEvent) -> Void)?) -> Bool {
        guard let sync = record(judgement, peer: uuid, keyspace: keyspace),
              (sync.state == .inSync) == (judgement.state == .inSync) else { return false }
        if crossed { onEvent?(.syncState(peer: name, keyspace: keyspace, sync: sync)) }
        return true
    }

    /// Snapshots from now on, the current one first; only the newest waits for a slow reader.
    func updates() -> AsyncStream<[MeshPeer]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [MeshPeer].self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        let current = state.withLock { s in
            s.watchers[id] = continuation
            return s.peers.values.sorted { ($0.name, $0.uuid) < ($1.name, $1.uuid) }
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) } }
        return stream
    }

    /// Calls `listener` on `queue` with each snapshot from now on, the current one first.
    func addListener(queue: DispatchQueue, _ listener: @escaping @Sendable ([MeshPeer]) -> Void) -> ListenerToken {
        let stream = updates()
        let task = Task {
            for await peers in stream { queue.async { listener(peers) } }
        }
        return ListenerToken { task.cancel() }
    }

    /// Ends every watcher's sequence (the node stopped).
    func finish() {
        let watchers = state.withLock { s in
            defer { s.watchers = [:] }
            return Array(s.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }
}
