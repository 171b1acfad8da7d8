import Foundation
import Logging
import SyncNodeStore
import SyncNodeSync

/// What a ``MeshNode`` is: its data, what it shares, how it listens, what it is called and
/// whom it trusts.
///
/// ```swift
/// let directory = try NodeDirectory(url: dataURL)
/// var config = try MeshConfiguration(directory: directory)
/// config.name = "kitchen-laptop"
/// let node = MeshNode(configuration: config)
/// try await node.start()
/// print(node.pairingURL?.url.absoluteString ?? "")   // hand this to a peer DNS-SD cannot see
/// // ... the app reads and writes directory.database("default") as usual ...
/// await node.stop()
/// ```
public struct MeshConfiguration: Sendable {
    /// The node's data directory: its identity, users, trusted peers and databases.
    public var directory: NodeDirectory
    /// The listener's options: port (0 picks a free one), host, TLS, authentication, limits, and
    /// `trustedPeers` (the certificates that sign in; ``init(directory:trust:)`` sets ``trust``).
    /// Its `directory` is ``directory``.
    public var listener: ListenerConfiguration
    /// The name peers see (the DNS-SD instance name); the host name by default.
    public var name: String = ProcessInfo.processInfo.hostName
    /// What is shared with peers: each entry a database name (all its collections, in every
    /// scope, including collections created later) or a keyspace `db.scope.collection` (that
    /// collection alone). Nil shares every database of the directory. Either way, a database
    /// with members or readers in its `_security` is never shared.
    public var shared: [Keyspace]?

    /// Whether `keyspace` is shared by ``shared``.
    public func shares(_ keyspace: Keyspace) -> Bool {
        guard let shared else { return true }
        return keyspace.isCovered(by: shared)
    }

    /// What the node pulls, per keyspace: a Mango selector, for example
    /// `[Keyspace("orders")!: ["store": "s1"]]`. From every peer, and from the hub (``hubs``),
    /// only the documents it matches are pulled (the peer's feed filters them); the hub still
    /// receives every change of this node's. A database's name applies to all its
    /// collections; a keyspace `db.scope.collection` to that one, before its database's entry.
    /// Keyspaces without one pull everything.
    ///
    /// A document that stops matching stays here and stops updating. A deletion is pulled only
    /// when the selector matches the tombstone: add `{"$or": [{"_deleted": true}, ...]}` to pull
    /// deletions. The node's own writes still reach peers that pull from it, whatever they
    /// match. Subscriptions need ``peerSync`` `.pull` (the default): with `.pushAndPull` they
    /// would also hold back this node's pushes, so starting refuses that pairing.
    public var subscriptions: [Keyspace: DocumentValue] = [:]

    /// The selector the node pulls `keyspace` with (``subscriptions``); nil: everything.
    public func subscription(for keyspace: Keyspace) -> DocumentValue? {
        subscriptions[keyspace] ?? subscriptions[.database(keyspace.database)]
    }

    /// Refuses ``subscriptions`` the node could not keep: with ``PeerSync/pushAndPull``, or a
    /// selector that is not a Mango selector CouchDB would take (compiled here, before any peer
    /// is asked, against the keyspace's database when the directory has it).
    func checkSubscriptions() throws {
        guard !subscriptions.isEmpty else { return }
        guard peerSync == .pull else {
            throw SyncError.invalidConfiguration("subscriptions filter what a node pulls: they need peerSync .pull, not .pushAndPull")
        }
        for (keyspace, selector) in subscriptions {
            guard case .dictionary = selector else {
                throw SyncError.invalidConfiguration("the subscription to \(keyspace) is not a JSON object (a Mango selector): \(selector.toJSON())")
            }
            if let db = try directory.database(keyspace.database) { _ = try ChangeSelector(selector, for: try db.defaultCollection()) }
        }
    }
    /// A hub beyond the LAN: the members of one Apache CouchDB cluster (or one URL in front of
    /// them), each `http(s)://USER:PASSWORD@HOST:PORT` with a server admin's credentials (the
    /// hub's databases are made as needed). Every shared keyspace is replicated with the hub
    /// continuously, both ways, through one member at a time, into the database
    /// ``hubDatabase(for:)`` names. When the member in use fails for ``hubFailover``, the next
    /// one takes over; the members share the cluster's UUID, on which checkpoints are keyed, so
    /// it resumes where the last one stopped. Empty (the default): no hub. With a tombstone
    /// policy, use ``MeshNode/tombstoneHorizon``, which waits for the hub too.
    public var hubs: [URL] = []
    /// How long the hub member in use may fail (unreachable, erroring) before the next is used.
    public var hubFailover: Duration = .seconds(3)
    /// Whom the node replicates with and who may sign in by certificate: fingerprints, the
    /// trusted-peers file, trust on first use (see `TrustStore`).
    public var trust: TrustStore
    /// Publish the node through DNS-SD.
    public var advertise = true
    /// Look for peers through DNS-SD (``MeshNode/peers`` lists them).
    public var browse = true
    /// Keep a continuous replication of every shared collection with each trusted peer found.
    public var autoSync = true
    /// How each pair of nodes replicates (see ``PeerSync``); `.pull` by default.
    public var peerSync: PeerSync = .pull
    /// Whether replications with peers ask for gzip-encoded answers and send large bodies
    /// encoded (see ``ReplicatorConfiguration/compression``). On by default; turn it off where
    /// the link is faster than the nodes can compress.
    public var compression = true

    /// Which side of a pair of nodes sends a change.
    public enum PeerSync: Sendable {
        /// Each node pulls from the peers it trusts, and only pulls. A change crosses each link
        /// once, and a node receives only from peers it trusts; two nodes sync both ways when
        /// each trusts (or has paired with) the other.
        case pull
        /// Each node pushes to and pulls from the peers it trusts: a peer that does not run a
        /// mesh node, or does not trust this one back, still receives this node's changes
        /// (when it lets this node write). Both sides of a mutual pair offer every change, and
        /// the second offer is answered with "not missing" (`_changes` rows and `_revs_diff`
        /// cross twice; bodies once).
        case pushAndPull
    }

    /// The credential sent to peers that ask for a password (and to probe them), besides the
    /// node's client certificate, which trusted peers accept instead.
    public var peerCredential: BasicAuthenticator?
    /// How long the invitation made at ``MeshNode/start()`` is honoured (any number of peers
    /// may redeem it meanwhile); ``MeshNode/pairingURL`` carries it. Nil makes none: the
    /// pairing URL then admits only peers trusted already, and ``MeshNode/invite(scope:lifetime:uses:note:)``
    /// makes invitations on demand.
    public var startInvitation: Duration? = .seconds(15 * 60)
    /// The keyspace the pairing URL names; the first shared one by default.
    public var pairingKeyspace: Keyspace?
    /// How replications end conflicts: the default picks each conflict's winner alike on every
    /// node; nil keeps them as CouchDB does.
    public var conflictResolver: ConflictResolver? = .default
    /// How often the node looks for collections created since (also by other processes), to
    /// advertise and sync them.
    public var keyspaceRefreshInterval: Duration = .seconds(2)
    /// How often each replication with a peer is measured (changes pending each way, digests)
    /// while nothing happens and it is not in sync (15 times less often while it is); it is also
    /// measured whenever its activity changes.
    public var syncCheckInterval: Duration = .seconds(2)
    /// Called for every ``MeshEvent``, on the node's tasks: keep it short.
    public var onEvent: (@Sendable (MeshEvent) -> Void)?
    public var logger = Logger(label: "syncnode.mesh")
    /// Tests only: the listener answers chosen requests with an error status instead of serving them.
    package var faultInjector: FaultInjector?

    /// A node on `directory`, secure by default: HTTPS with the node's identity on a free port,
    /// peers in the directory's trusted-peers file (and those that redeem its invitations)
    /// signing in by certificate, and people by the directory's own generated credential (or a
    /// user made with `syncnode user add`), which no pairing URL carries.
    /// - Throws: `SyncError` when the credential cannot be made; what
    ///   `TrustStore/init(directory:trusted:trustOnFirstUse:)` throws for a malformed
    ///   trusted-peers file.
    public init(directory: NodeDirectory, trust: TrustStore? = nil) throws {
        self.directory = directory
        let own = try directory.generatedCredential()
        let authenticator = ListenerAuthenticator.users([own.user: own.password]).fallingBack(to: directory.users.authenticator())
        let trust = try trust ?? directory.trustedPeers()
        self.listener = ListenerConfiguration(directory: directory, authenticator: authenticator, trustedPeers: trust)
        self.trust = trust
    }

    /// A node serving databases the app has open, all in one directory (the node's: its
    /// identity, users and trusted peers live there too), secure by default as
    /// ``init(directory:trust:)``; they are what it shares. The node uses these `Database`
    /// objects, not copies, so the app's change listeners hear what peers send.
    /// - Throws: `SyncError/invalidConfiguration(_:)` when there is none, or they are not in one
    ///   directory; what ``init(directory:trust:)`` throws.
    public init(databases: [Database], trust: TrustStore? = nil) throws {
        guard let first = databases.first else { throw SyncError.invalidConfiguration("a mesh node needs at least one database") }
        let directory = try NodeDirectory(url: first.path.deletingLastPathComponent())
        for database in databases { try directory.adopt(database) }
        try self.init(directory: directory, trust: trust)
        shared = databases.map { .database($0.name) }
    }

    /// A node on `directory` with exactly this listener configuration (its authentication,
    /// TLS and limits as given) and trust policy.
    public init(directory: NodeDirectory, listener: ListenerConfiguration, trust: TrustStore) {
        self.directory = directory
        self.listener = listener
        self.trust = trust
    }

    /// The certificate the node presents to peers as a client: the one its listener serves
    /// (imported, or the node's own); nil over plain HTTP.
    func clientIdentity() throws -> TLSIdentity? {
        listener.disableTLS ? nil : try listener.tlsIdentity ?? directory.tlsIdentity()
    }
}
