import SyncNodeStore
import SyncNodeSync

extension MeshNode {
    /// The horizon for a ``TombstonePolicy`` on this node's databases: a tombstone goes once
    /// every trusted peer whose scope covers its keyspace has read past it, and, with
    /// ``MeshConfiguration/hubs``, once this node has pushed it to the hub (its push checkpoint
    /// there is past it; the hub passes it on to the other sites).
    ///
    /// ```swift
    /// node.configuration.directory.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(30 * 86_400), horizon: node.tombstoneHorizon)
    /// ```
    ///
    /// Until a hub member has been reached, tombstones of shared keyspaces are held back.
    public var tombstoneHorizon: CheckpointHorizon {
        CheckpointHorizon(trust: configuration.trust) { [configuration, replications] keyspace in
            // The keyspaces the hub replicates: shared, in a database everyone may read.
            guard !configuration.hubs.isEmpty, Self.keyspaces(configuration).contains(keyspace) else { return [] }
            let hub = replications.hubs.withLock { $0[keyspace] }
            return [CheckpointHorizon.Remote(name: HubReplication.boardID, identity: hub?.remoteIdentity)]
        }
    }
}
