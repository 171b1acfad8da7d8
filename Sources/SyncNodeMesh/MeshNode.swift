import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import SyncNodeDiscovery
import SyncNodeStore
import SyncNodeSync

/// A whole node in one object: a listener that speaks the CouchDB replication protocol, a
/// DNS-SD advertisement, a browser for peers, the trust policy, and a continuous replication
/// of every shared collection with every trusted peer, with their presence.
///
/// ```swift
/// let node = MeshNode(configuration: try MeshConfiguration(directory: try NodeDirectory(url: dataURL)))
/// try await node.start()
/// for await peers in node.peerUpdates() {
///     print(peers.map { "\($0.name) trusted: \($0.trusted)" })
/// }
/// ```
///
/// Nodes find each other through DNS-SD on a LAN; across subnets, or where multicast is
/// blocked, ``pair(with:)`` takes a peer's ``pairingURL``. `MeshNode` is also a
/// ServiceLifecycle `Service`: ``run()`` starts it and stops it gracefully on shutdown.
public final class MeshNode: Sendable {
    public let configuration: MeshConfiguration
    /// The node's listener (its port and URLs once started).
    public let listener: Listener
    private let board = PresenceBoard()
    let replications: PeerReplications
    private let console: MeshConsole
    /// Shared with the console's and listener's callbacks, made before the node is whole.
    private let running: ServiceState<Running>

    private struct Running: Sendable {
        var node: RunningNode
        var pairingURL: PairingURL
        var advertiser: Advertiser?
        var browser: Browser?
        var watching: Task<Void, Never>?
        var refreshing: Task<Void, Never>
        /// The listener's access-change action that rechecks trust.
        var rechecking: Int
    }

    public init(configuration: MeshConfiguration) {
        self.configuration = configuration
        var listenerConfig = configuration.listener
        listenerConfig.directory = configuration.directory
        var environment = ListenerEnvironment()
        environment.faultInjector = configuration.faultInjector
        let audit = environment.auditLog
        replications = PeerReplications(configuration: configuration, tasks: environment.replicationTasks, board: board)
        let running = ServiceState<Running>()
        self.running = running
        console = MeshConsole(configuration: configuration, board: board, replications: replications, pair: { [configuration, replications] url in
            try await Self.pair(with: url, configuration: configuration, replications: replications, port: running.withLock { $0?.node.port })
        }, invite: { [configuration] scope, lifetime, uses, note in
            guard let node = running.withLock({ $0?.node }) else { throw SyncError.invalidConfiguration("the node is not started") }
            return try Self.invite(node: node, configuration: configuration, audit: audit, scope: scope, lifetime: lifetime, uses: uses, note: note)
        }, revoke: { [configuration, replications] id in
            try await Self.revokeInvitation(id: id, configuration: configuration, audit: audit, replications: replications)
        })
        environment.console = console
        environment.onPeerAdmitted = { [configuration, replications, running] admitted in
            // The peer that redeemed an invitation is synced with at the address it came from,
            // pinned to the certificate it presented: both sides sync, not only the one that scanned.
            guard let port = admitted.port, let uuid = admitted.uuid, let database = running.withLock({ $0?.node.database }),
                  let base = URL(string: "https://\(admitted.address.contains(":") ? "[\(admitted.address)]" : admitted.address):\(port)/") else { return }
            let url = PairingURL(base: base, database: database, uuid: uuid, fingerprint: admitted.fingerprint)
            Task {
                try? configuration.directory.pairedPeers.save(url)
                await Self.syncPaired(url, fingerprint: admitted.fingerprint, with: replications)
            }
        }
        environment.offeredKeyspaces = { [configuration] in Self.keyspaces(configuration) }
        if let onEvent = configuration.onEvent {
            environment.onUntrustedPeer = { fingerprint, address in
                onEvent(.untrustedClient(fingerprint: fingerprint, address: address))
            }
        }
        listener = Listener(config: listenerConfig, environment: environment)
    }

    /// The keyspaces this node shares: each shared database (its default collection) and
    /// `db.scope.collection` for its other collections.
    public var sharedKeyspaces: [Keyspace] { Self.keyspaces(configuration) }

    static func keyspaces(_ configuration: MeshConfiguration) -> [Keyspace] {
        var out: [Keyspace] = []
        for name in configuration.directory.openDatabaseNames() {
            var all = [Keyspace.database(name)]
            if let db = try? configuration.directory.database(name) {
                all += ((try? db.allCollections()) ?? []).map(Keyspace.init).filter { $0 != all[0] }
            }
            out += all.filter(configuration.shares)
        }
        return out
    }

    /// The URL a peer pairs with (``pair(with:)``, `syncnode pair`): this node's addresses,
    /// database, UUID, certificate fingerprint and the invitation made at start
    /// (``MeshConfiguration/startInvitation``), never a password. Nil until ``start()``.
    public var pairingURL: PairingURL? { running.withLock { $0?.pairingURL } }

    /// Makes an invitation and returns it with the pairing URL that carries its token: the
    /// peer that redeems it (``pair(with:)`` on its side) is trusted by its certificate with
    /// `scope`.
    /// - Parameters:
    ///   - scope: what the peer may reach (default: write access to every keyspace).
    ///   - lifetime: how long it is honoured (default 15 minutes).
    ///   - uses: how many peers may redeem it; nil for any number (default 1).
    ///   - note: kept beside it.
    /// - Throws: `SyncError/invalidConfiguration(_:)` before ``start()``, or what
    ///   `InvitationStore/create(scope:lifetime:uses:note:)` throws.
    public func invite(scope: PeerScope = .everything, lifetime: Duration = .seconds(15 * 60), uses: Int? = 1, note: String = "") throws -> (invitation: Invitation, url: PairingURL) {
        guard let node = running.withLock({ $0?.node }) else { throw SyncError.invalidConfiguration("the node is not started: it has no address to invite to") }
        return try Self.invite(node: node, configuration: configuration, audit: listener.environment.auditLog, scope: scope, lifetime: lifetime, uses: uses, note: note)
    }

    private static func invite(node: RunningNode, configuration: MeshConfiguration, audit: AuditLog, scope: PeerScope, lifetime: Duration, uses: Int?,
                               note: String) throws -> (invitation: Invitation, url: PairingURL) {
        let (invitation, token) = try configuration.directory.invitations.create(scope: scope, lifetime: lifetime, uses: uses, note: note)
        audit.record(.invitationMade, "invitation \(invitation.id) made: \(scope), \(invitation.usesDescription), until \(ISO8601DateFormatter().string(from: invitation.expires))", [
            "invitation": invitation.id, "scope": scope.description,
        ])
        return (invitation, node.pairingURL(uuid: configuration.directory.uuid, invitation: token, keyspace: scope.keyspaces?.first))
    }

    /// Revokes invitation `id` (or a unique prefix): it is honoured no more, and the peers that
    /// redeemed it are trusted no more (their replications stop). Nil when there is no such invitation.
    /// - Throws: what `InvitationStore/revoke(id:)` and `TrustStore/remove(fingerprint:)` throw.
    public func revokeInvitation(id: String) async throws -> Invitation? {
        try await Self.revokeInvitation(id: id, configuration: configuration, audit: listener.environment.auditLog, replications: replications)
    }

    static func revokeInvitation(
        id: String, configuration: MeshConfiguration, audit: AuditLog, replications: PeerReplications
    ) async throws -> Invitation? {
        guard let (invitation, untrusted) = try configuration.directory.invitations.revoke(id: id, untrustingIn: configuration.trust) else {
            return nil
        }
        audit.record(.invitationRevoked, "invitation \(invitation.id) revoked; \(untrusted.count) peer(s) that redeemed it untrusted", [
            "invitation": invitation.id,
        ])
        for fingerprint in untrusted { await replications.trustChanged(fingerprint: fingerprint) }
        return invitation
    }

    /// Every peer known: found through DNS-SD or paired, with each shared collection's
    /// replication state. Also served as JSON at `GET /_node/peers`.
    public var peers: [MeshPeer] { board.peers }

    /// ``peers`` now and after each change, until the node stops; a slow reader gets the newest.
    public func peerUpdates() -> AsyncStream<[MeshPeer]> { board.updates() }

    /// Calls `listener` on `queue` (default: main) with ``peers`` now and after each change,
    /// until the token is removed or the node stops.
    public func addPeersListener(queue: DispatchQueue = .main, _ listener: @escaping @Sendable ([MeshPeer]) -> Void) -> ListenerToken {
        board.addListener(queue: queue, listener)
    }

    /// Starts listening, advertising, browsing and syncing; returns once the listener is bound.
    /// Calling it again while started does nothing; calling it while another call is starting it
    /// waits for that one.
    /// - Throws: what `Listener/start()` throws (the port is taken, the identity is unusable);
    ///   the store's error when a shared database or collection cannot be opened or made.
    public func start() async throws {
        // Two starts at once would bind two listeners: the second waits for the first.
        // Stopped while it was starting: what it started stops now.
        _ = try await running.start({ try await launch { try await listener.start() } }, undo: shutDown)
    }

    /// Starts the listener (with `startListener`), advertising, browsing and the replications; what runs.
    private func launch(startingListener startListener: () async throws -> Void) async throws -> Running {
        try configuration.checkSubscriptions()
        try configuration.checkHubs()
        for keyspace in configuration.shared ?? [] {
            guard let db = try configuration.directory.database(keyspace.database, create: true) else { continue }
            if let collection = keyspace.collection { _ = try db.createCollection(name: collection, scope: keyspace.scope) }
        }
        try await startListener()
        guard let base = listener.urls.first, let port = listener.port else {
            await listener.stop()
            throw SyncError.listenerFailed("the listener has no address")
        }
        let shared = sharedKeyspaces
        let fingerprint = listener.tlsIdentity?.fingerprint
        let node = RunningNode(
            pid: getpid(), port: port, scheme: base.scheme ?? "https", host: configuration.listener.host, fingerprint: fingerprint,
            database: (configuration.pairingKeyspace ?? shared.first ?? .defaultDatabase).name)
        var pairing = node.pairingURL(uuid: configuration.directory.uuid)
        let onStatus = DiscoveryStatusRelay(configuration.onEvent)
        let record = ServiceRecord(
            name: configuration.name, port: port, uuid: configuration.directory.uuid, keyspaces: shared,
            tls: fingerprint != nil, fingerprint: fingerprint, requiresAuth: configuration.listener.authenticator != nil)
        let advertiser: Advertiser?
        var browser: Browser?
        var watching: Task<Void, Never>?
        do {
            // `syncnode invite` on this directory reads where the node listens.
            try node.write(directory: configuration.directory)
            if let lifetime = configuration.startInvitation, fingerprint != nil, configuration.listener.authenticator != nil {
                pairing = try Self.invite(node: node, configuration: configuration, audit: listener.environment.auditLog, scope: .everything, lifetime: lifetime, uses: nil, note: "made at start").url
            }
            advertiser = configuration.advertise ? try Advertiser(record: record, onStatus: onStatus.report) : nil
            if configuration.browse {
                let connected = listener.connectedPeers
                browser = try Browser(ignoring: configuration.directory.uuid, authenticator: configuration.peerCredential,
                                      isConnected: { await connected.isConnected($0) }, onStatus: onStatus.report)
            }
        } catch {
            // Failed after the listener bound: nothing of this start is left running or announced.
            RunningNode.remove(directory: configuration.directory)
            await listener.stop()
            throw error
        }
        advertiser?.start()
        if let browser {
            browser.start()
            watching = Task { [replications] in await replications.run(browser.events) }
        }
        // A peer untrusted (here, or by `syncnode trust remove` or `invite --revoke` elsewhere) is
        // no longer synced with, within the listener's 200 ms look at the file.
        let rechecking = listener.onAccessChange { [replications] in Task { await replications.recheckTrust() } }
        let refreshing = Task { [configuration, replications] in
            // Databases clients create or open up (an event), collections made here or by another
            // process (looked for every few seconds): advertised, and synced with the peers that share them.
            // Peers paired before a restart, and (looked for at each tick) by `syncnode pair` meanwhile.
            let paired = configuration.directory.pairedPeers
            var pairedStamp = FileStamp.of(paired.file)
            var pairedKnown = paired.load()
            for url in pairedKnown {
                guard let fingerprint = url.fingerprint, !Task.isCancelled else { continue }
                await Self.syncPaired(url, fingerprint: fingerprint, with: replications)
            }
            var advertised = shared
            await replications.syncHubs(shared)
            let names = configuration.directory.databaseNameUpdates()
            await withTaskGroup(of: Void.self) { group in
                let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                group.addTask {
                    for await _ in names { tick.yield() }
                    tick.finish()
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: configuration.keyspaceRefreshInterval)
                        tick.yield()
                    }
                    tick.finish()
                }
                for await _ in ticks {
                    let stamp = FileStamp.of(paired.file)
                    if stamp != pairedStamp {
                        pairedStamp = stamp
                        let now = paired.load()
                        // Those this process paired itself (pair(with:), an invitation redeemed here) sync already.
                        for url in now where !pairedKnown.contains(url) {
                            guard let fingerprint = url.fingerprint, await !replications.isPaired(url.uuid) else { continue }
                            await Self.syncPaired(url, fingerprint: fingerprint, with: replications)
                        }
                        pairedKnown = now
                    }
                    await replications.refreshAsked()
                    // `syncnode trust remove` edits the file under a running node.
                    await replications.recheckTrust()
                    // A database deleted (and perhaps made again) between two looks leaves the names unchanged.
                    let dropped = await replications.dropDeleted()
                    let now = Self.keyspaces(configuration)
                    guard now != advertised || dropped else { continue }
                    if now != advertised {
                        advertised = now
                        advertiser?.update(keyspaces: now)
                    }
                    await replications.keyspacesChanged()
                    await replications.syncHubs(now)
                }
                group.cancelAll()
            }
        }
        console.started(pairing)
        return Running(node: node, pairingURL: pairing, advertiser: advertiser, browser: browser, watching: watching, refreshing: refreshing,
                       rechecking: rechecking)
    }

    /// Replicates with the node a pairing URL names, across subnets where DNS-SD cannot see
    /// it. When the URL carries an invitation, it is redeemed first (`InvitationClient`),
    /// trying each of the URL's addresses: the other node then trusts this one's certificate.
    /// The other node's fingerprint is added to the trusted peers here (so it also signs in
    /// by certificate), the URL (without its invitation) is kept in `.node/paired-peers.json`
    /// (so a restarted node syncs with it again), and its keyspaces are synced from now on. If
    /// it later appears through DNS-SD it is the same peer (its UUID), not a second replication.
    /// No password is sent or kept.
    /// - Throws: `SyncError/invalidConfiguration(_:)` for a URL without a fingerprint (plain
    ///   HTTP cannot be pinned) or when the URL cannot be saved; what `InvitationClient/redeem(_:identity:uuid:name:port:timeout:)`
    ///   throws (the other node's refusal, no address answering); what
    ///   `TrustStore/add(fingerprint:uuid:note:scope:invitation:)` throws.
    public func pair(with url: PairingURL) async throws {
        // Before start() the pairing is only recorded: start() syncs with every paired peer, and
        // replications started now would outlive a node that is never started or stopped.
        let started = running.withLock { $0 != nil }
        try await Self.pair(with: url, configuration: configuration, replications: started ? replications : nil, port: listener.port)
    }

    private static func pair(with url: PairingURL, configuration: MeshConfiguration, replications: PeerReplications?, port: Int?) async throws {
        let kept = try await Pairing.record(
            url, directory: configuration.directory, trust: configuration.trust, name: configuration.name, port: port,
            clientIdentity: try configuration.clientIdentity())
        guard let fingerprint = kept.fingerprint else { return }
        guard let replications else { return }
        await syncPaired(kept, fingerprint: fingerprint, with: replications)
    }

    private static func syncPaired(_ url: PairingURL, fingerprint: String, with replications: PeerReplications) async {
        let record = ServiceRecord(
            name: url.host, port: url.port, uuid: url.uuid, keyspaces: Keyspace(url.database).map { [$0] } ?? [], tls: true,
            fingerprint: fingerprint, requiresAuth: url.user != nil)
        let credential = url.user.flatMap { user in url.password.map { BasicAuthenticator(username: user, password: $0) } }
        await replications.pair(Peer(record: record, host: url.host, addresses: [url.host]), credential: credential)
    }

    /// Keeps `collection` replicated (push and pull, continuously) with the database at `url`,
    /// any CouchDB-compatible peer, until the node stops. A `fp=` in the URL pins the peer's
    /// certificate; `trustOnFirstUse` pins whichever self-signed one it first presents.
    /// - Throws: `SyncError/invalidIdentity(_:)` when the node's client identity cannot be loaded.
    public func sync(with url: URL, collection: DocumentCollection, trustOnFirstUse: Bool = false) async throws {
        try await replications.sync(with: url, collection: collection, trustOnFirstUse: trustOnFirstUse)
    }

    /// Stops syncing, advertising and browsing, then the listener (requests in flight
    /// finish). Replications end after the batch in flight, their checkpoints saved.
    public func stop() async {
        guard let state = running.takeForStop() else { return }
        await shutDown(state)
    }

    private func shutDown(_ state: Running) async {
        RunningNode.remove(directory: configuration.directory)
        listener.removeAccessChangeAction(state.rechecking)
        console.started(nil)
        state.refreshing.cancel()
        await state.refreshing.value
        state.advertiser?.stop()
        await state.browser?.stop()
        await state.watching?.value
        await replications.stopAll()
        await listener.stop()
        board.finish()
    }
}

extension MeshNode: Service {
    /// Starts the node, with its listener serving in the calling task (`Listener/run()`), and
    /// runs until its service group shuts down gracefully or is cancelled, ``stop()`` is called,
    /// or the listener fails after it bound; then stops it. When ``start()`` was called first, or
    /// its listener was started by hand, it only waits for the group's shutdown and then stops.
    /// - Throws: the errors of ``start()``, and the listener's error when it fails after it bound
    ///   (the group then shuts its other services down).
    public func run() async throws {
        try await running.runAsService(start: { tasks in
            try await running.start({
                try await launch {
                    // Its listener started by hand: the node runs until the group's shutdown.
                    if try await !listener.serve(in: &tasks) { tasks.addTask { try? await gracefulShutdown() } }
                }
            }, undo: shutDown) != nil
        }, stop: stop)
    }
}

/// DNS-SD's availability as events, once per change, whichever of the advertiser and the
/// browser notices first.
private final class DiscoveryStatusRelay: Sendable {
    private let onEvent: (@Sendable (MeshEvent) -> Void)?
    private let last = Mutex<DiscoveryStatus?>(nil)

    init(_ onEvent: (@Sendable (MeshEvent) -> Void)?) {
        self.onEvent = onEvent
    }

    func report(_ status: DiscoveryStatus) {
        let previous = last.withLock { l in
            defer { l = status }
            return l
        }
        guard previous != status else { return }
        // The first "running" is no news.
        if case .running = status, previous == nil { return }
        onEvent?(.discovery(status))
    }
}
