/// The live parts a listener works with, beside its ``ListenerConfiguration`` (which holds
/// plain values): the replications it lists, its audit log, what the node beyond it tells an
/// administrator, and the callbacks its owner hears from. A ``Listener`` makes a default one;
/// a mesh node passes its own.
public struct ListenerEnvironment: Sendable {
    /// The replications this node runs, listed at `GET /_active_tasks` and `GET /_scheduler/jobs`:
    /// the listener's own (`POST /_replicate`) and those its owner adds (a mesh node's peers).
    public var replicationTasks: ReplicationTasks
    /// Who was invited, admitted, refused and untrusted: logged and kept for `GET /_node/events`.
    public var auditLog: AuditLog
    /// What the node beyond the listener tells and lets an administrator do (its name, pairing
    /// URL, peers, trust): the dashboard's data at `/_node/...`. A mesh node provides one; nil
    /// answers those endpoints with 404.
    public var console: (any NodeConsole)?
    /// The keyspaces `GET /_node/keyspaces` may list (a mesh node's shared ones); nil lists every
    /// keyspace the asker may read. It narrows what peers sync on their own, not what clients
    /// may read (that is `_security`'s).
    public var offeredKeyspaces: (@Sendable () -> [Keyspace])?
    /// Called once per connection whose client presented a certificate that is
    /// not trusted and no password (a peer asking to sync): with its fingerprint and address.
    public var onUntrustedPeer: (@Sendable (_ fingerprint: String, _ address: String) -> Void)?
    /// Called when a peer redeems an invitation and is trusted (a mesh node then syncs with it too).
    public var onPeerAdmitted: (@Sendable (AdmittedPeer) -> Void)?
    /// Tests only: answers chosen requests with an error status instead of serving them.
    package var faultInjector: FaultInjector?

    /// An environment; every parameter sets the property of the same name.
    public init(
        replicationTasks: ReplicationTasks = ReplicationTasks(), auditLog: AuditLog = AuditLog(), console: (any NodeConsole)? = nil,
        offeredKeyspaces: (@Sendable () -> [Keyspace])? = nil,
        onUntrustedPeer: (@Sendable (_ fingerprint: String, _ address: String) -> Void)? = nil,
        onPeerAdmitted: (@Sendable (AdmittedPeer) -> Void)? = nil
    ) {
        self.replicationTasks = replicationTasks
        self.auditLog = auditLog
        self.console = console
        self.offeredKeyspaces = offeredKeyspaces
        self.onUntrustedPeer = onUntrustedPeer
        self.onPeerAdmitted = onPeerAdmitted
    }
}
