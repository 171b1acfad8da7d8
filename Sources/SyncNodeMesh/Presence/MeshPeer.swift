import Foundation
import SyncNodeStore
import SyncNodeSync

/// A peer as a ``MeshNode`` sees it: who it is, where, whether it is trusted, and how each
/// shared collection's replication with it is going.
public struct MeshPeer: Sendable, Identifiable {
    /// The peer's node UUID (stable across restarts and address changes).
    public var id: String { uuid }
    public var uuid: String
    public var name: String
    public var host: String
    public var port: Int
    /// Its IP addresses, as DNS-SD resolved them (or the pairing URL's host).
    public var addresses: [String]
    /// The SHA-256 fingerprint of its certificate (nil for a plain-HTTP peer).
    public var fingerprint: String?
    /// Whether the trust policy admits it (only trusted peers are synced with).
    public var trusted: Bool
    /// Found through DNS-SD (false: known from a pairing URL only).
    public var discovered: Bool
    /// Per keyspace: the replication with this peer.
    public var collections: [Keyspace: CollectionSync]

    /// One collection's replication with a peer.
    public struct CollectionSync: Sendable {
        public var activity: ReplicatorActivity
        /// Changes examined of those known, for the pass in progress.
        public var progress: ReplicatorProgress
        public var pushed: Int
        public var pulled: Int
        /// When a pass last ended with both sides caught up.
        public var lastSync: Date?
        /// The last error, until a pass succeeds.
        public var lastError: String?
        /// Whether this node and the peer agree on the collection, as last measured.
        public var state: SyncState = .connecting
        /// Why it is not ``SyncState/inSync`` (nil when it is).
        public var reason: String?
        /// Changes not yet examined each way, as last counted (nil until the peer could be asked).
        /// A direction this node does not replicate (the peer pulls what it needs) is nil: the
        /// digests compared for ``state`` cover it.
        public var pending: PendingChanges?
        /// When it was last measured in sync.
        public var lastInSync: Date?
        /// The selector this node pulls the keyspace with (``MeshConfiguration/subscriptions``); nil: everything.
        public var subscription: DocumentValue?
    }

    /// How a collection's replication with a peer stands, measured: the replicator's activity
    /// alone cannot tell (a continuous replicator idles while the peer's feed is silent, also
    /// when the peer has changes it has not announced).
    public enum SyncState: String, Sendable {
        /// The peer has not been reached yet (or the replication is starting again).
        case connecting
        /// Changes are pending either way, or are moving, or the digests differ.
        case catchingUp = "catching_up"
        /// Nothing pending either way, the replicator idle, and both sides' digests equal.
        case inSync = "in_sync"
        /// The peer cannot be reached, or could not say what is pending; retrying.
        case stalled
        /// The peer refuses this node (its certificate, credential or writes), until that changes.
        case refused
    }

    /// The peer as JSON, for `GET /_node/peers`.
    var json: DocumentValue {
        var collections: [String: DocumentValue] = [:]
        for (keyspace, sync) in self.collections {
            var entry: [String: DocumentValue] = [
                "activity": .string(sync.activity.rawValue), "completed": .int(Int64(sync.progress.completed)),
                "total": .int(Int64(sync.progress.total)), "pushed": .int(Int64(sync.pushed)), "pulled": .int(Int64(sync.pulled)),
            ]
            if let at = sync.lastSync { entry["last_sync"] = .string(ISO8601DateFormatter().string(from: at)) }
            if let error = sync.lastError { entry["last_error"] = .string(error) }
            entry.merge(sync.statusJSON) { _, new in new }
            collections[keyspace.name] = .dictionary(entry)
        }
        return [
            "uuid": .string(uuid), "name": .string(name), "host": .string(host), "port": .int(Int64(port)),
            "addresses": .array(addresses.map { .string($0) }),
            "fingerprint": fingerprint.map { .string($0) } ?? .null, "trusted": .bool(trusted), "discovered": .bool(discovered),
            "collections": .dictionary(collections),
        ]
    }
}

extension MeshPeer.CollectionSync {
    /// The measured state, for `GET /_node/peers` and `GET /_node/sync-status`.
    var statusJSON: [String: DocumentValue] {
        var entry: [String: DocumentValue] = [
            "state": .string(state.rawValue), "reason": reason.map { .string($0) } ?? .null,
            "pending": .dictionary([
                "push": pending?.push.map { .int(Int64($0)) } ?? .null, "pull": pending?.pull.map { .int(Int64($0)) } ?? .null,
            ]),
            "last_in_sync": lastInSync.map { .string(ISO8601DateFormatter().string(from: $0)) } ?? .null,
            "seconds_since_in_sync": lastInSync.map { .int(Int64(max(0, Date().timeIntervalSince($0)).rounded())) } ?? .null,
            "subscription": subscription ?? .null,
        ]
        if state == .inSync { entry["seconds_since_in_sync"] = .int(0) }
        return entry
    }
}
