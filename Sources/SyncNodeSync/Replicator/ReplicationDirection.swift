/// Which way one half of a replication moves revisions.
public enum ReplicationDirection: String, Sendable, CaseIterable {
    /// Local revisions sent to the peer.
    case push
    /// The peer's revisions received here.
    case pull
}
