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
    /// Per keyspace (`db`, or `db.scope.collection`): the replication with this peer.
    public var collections: [String: CollectionSync]

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
            collections[keyspace] = .dictionary(entry)
        }
        return [
            "uuid": .string(uuid), "name": .string(name), "host": .string(host), "port": .int(Int64(port)),
            "addresses": .array(addresses.map { .string($0) }),
            "fingerprint": fingerprint.map { .string($0) } ?? .null, "trusted": .bool(trusted), "discovered": .bool(discovered),
            "collections": .dictionary(collections),
        ]
    }
}
