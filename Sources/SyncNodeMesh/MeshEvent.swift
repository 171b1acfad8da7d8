import SyncNodeDiscovery
import SyncNodeSync

/// What happens to a ``MeshNode``, as ``MeshConfiguration/onEvent`` sees it: enough to log
/// every change of its view of the network (`syncnode serve` prints one line for each).
public enum MeshEvent: Sendable {
    /// DNS-SD became unavailable (the reason says why), or available again.
    case discovery(DiscoveryStatus)
    /// A peer was found (``MeshNode/peers`` says whether it is trusted).
    case peerAppeared(Peer)
    /// A peer's address or advertised keyspaces changed.
    case peerUpdated(Peer)
    /// A peer stopped answering or withdrew its record.
    case peerLost(Peer)
    /// A peer was found that the trust policy does not admit (the reason says how to).
    case peerRefused(Peer, reason: String)
    /// A trusted peer shares no database with this node (yet).
    case nothingInCommon(Peer)
    /// A client presented a certificate no one trusts: it asks to sync.
    case untrustedClient(fingerprint: String, address: String)
    /// A replication with a peer changed state. `label` names it as `sync NAME/KEYSPACE`
    /// (or `sync HOST:PORT` for one made with ``MeshNode/sync(with:collection:trustOnFirstUse:)``).
    case replication(label: String, status: ReplicatorStatus)
    /// A keyspace became in sync with a peer (measured: nothing pending either way, equal
    /// digests), or stopped being so; `sync` says how it stands now, and why.
    case syncState(peer: String, keyspace: Keyspace, sync: MeshPeer.CollectionSync)
}
