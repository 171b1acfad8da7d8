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
    private let running = Mutex<Running?>(nil)

    private struct Running: Sendable {
        var pairingURL: PairingURL
        var advertiser: Advertiser?
        var browser: Browser?
        var watching: Task<Void, Never>?
        var refreshing: Task<Void, Never>
    }

    public init(configuration: MeshConfiguration) {
        self.configuration = configuration
        var listenerConfig = configuration.listener
        listenerConfig.directory = configuration.directory
        replications = PeerReplications(configuration: configuration, board: board)
        console = MeshConsole(configuration: configuration, board: board, replications: replications) { [configuration, replications] url in
            try await Self.pair(with: url, configuration: configuration, replications: replications)
        }
        listenerConfig.console = console
        listenerConfig.offeredKeyspaces = { [configuration] in Self.keyspaces(configuration) }
        if let onEvent = configuration.onEvent {
            let previous = listenerConfig.onUntrustedPeer
            listenerConfig.onUntrustedPeer = { fingerprint, address in
                previous?(fingerprint, address)
                onEvent(.untrustedClient(fingerprint: fingerprint, address: address))
            }
        }
        listener = Listener(config: listenerConfig)
    }

    /// The keyspaces this node shares: each shared database (its default collection) and
    /// `db.scope.collection` for its other collections.
    public var sharedKeyspaces: [String] { Self.keyspaces(configuration) }

    private static func keyspaces(_ configuration: MeshConfiguration) -> [String] {
        var out: [String] = []
        for name in configuration.directory.openDatabaseNames() {
            var all = [name]
            if let db = try? configuration.directory.database(name) {
                all += ((try? db.allCollections()) ?? []).map { Keyspace($0).name }.filter { $0 != name }
            }
            out += all.filter(configuration.shares)
        }
        return out
    }

    /// The URL a peer pairs with (``pair(with:)``, `syncnode sync`): this node's address,
    /// database, UUID, certificate fingerprint and, when configured, its credential. Nil until
    /// ``start()``.
    public var pairingURL: PairingURL? { running.withLock { $0?.pairingURL } }

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
    /// Calling it again while started does nothing.
    /// - Throws: what ``Listener/start()`` throws (the port is taken, the identity is unusable);
    ///   ``SyncError/invalidConfiguration(_:)`` for a ``MeshConfiguration/shared`` entry that names no
    ///   keyspace; the store's error when a shared database cannot be opened or made.
    public func start() async throws {
        guard running.withLock({ $0 == nil }) else { return }
        for name in configuration.shared ?? [] {
            guard let keyspace = Keyspace(name) else {
                throw SyncError.invalidConfiguration("shared: '\(name)' is neither a database name nor db.scope.collection")
            }
            guard let db = try configuration.directory.database(keyspace.database, create: true) else { continue }
            if let collection = keyspace.collection { _ = try db.createCollection(name: collection, scope: keyspace.scope) }
        }
        try await listener.start()
        guard let base = listener.urls.first, let port = listener.port else {
            await listener.stop()
            throw SyncError.listenerFailed("the listener has no address")
        }
        let shared = sharedKeyspaces
        let fingerprint = listener.tlsIdentity?.fingerprint
        let pairing = PairingURL(
            base: base, database: configuration.pairingDatabase ?? shared.first ?? "default",
            user: configuration.pairingCredential?.username, password: configuration.pairingCredential?.password,
            uuid: configuration.directory.uuid, fingerprint: fingerprint)
        let onStatus = DiscoveryStatusRelay(configuration.onEvent)
        let record = ServiceRecord(
            name: configuration.name, port: port, uuid: configuration.directory.uuid, databases: shared,
            tls: fingerprint != nil, fingerprint: fingerprint, requiresAuth: configuration.listener.authenticator != nil)
        let advertiser = configuration.advertise ? try Advertiser(record: record, onStatus: onStatus.report) : nil
        advertiser?.start()
        var browser: Browser?
        var watching: Task<Void, Never>?
        if configuration.browse {
            let made = try Browser(ignoring: configuration.directory.uuid, authenticator: configuration.peerCredential, onStatus: onStatus.report)
            made.start()
            watching = Task { [replications] in await replications.run(made.events) }
            browser = made
        }
        let refreshing = Task { [configuration, replications] in
            // Databases clients create or open up (an event), collections made here or by another
            // process (looked for every few seconds): advertised, and synced with the peers that share them.
            // Peers paired before a restart.
            for url in PairedPeers(directory: configuration.directory).load() {
                guard let fingerprint = url.fingerprint, !Task.isCancelled else { continue }
                await Self.syncPaired(url, fingerprint: fingerprint, with: replications)
            }
            var advertised = shared
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
                    await replications.refreshAsked()
                    // `syncnode trust remove` edits the file under a running node.
                    await replications.recheckTrust()
                    let now = Self.keyspaces(configuration)
                    guard now != advertised else { continue }
                    advertised = now
                    advertiser?.update(databases: now)
                    await replications.keyspacesChanged()
                }
                group.cancelAll()
            }
        }
        console.started(pairing)
        running.withLock { $0 = Running(pairingURL: pairing, advertiser: advertiser, browser: browser, watching: watching, refreshing: refreshing) }
    }

    /// Replicates with the node a pairing URL names, across subnets where DNS-SD cannot see
    /// it: its certificate fingerprint is added to the trusted peers (so it also signs in here
    /// by certificate), the URL is kept in `.node/paired-peers.json` (so a restarted node syncs
    /// with it again), and its keyspaces are synced from now on. If it later appears through
    /// DNS-SD it is the same peer (its UUID), not a second replication.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for a URL without a fingerprint (plain
    ///   HTTP cannot be pinned) or when the URL cannot be saved; what
    ///   ``TrustStore/add(fingerprint:uuid:note:)`` throws.
    public func pair(with url: PairingURL) async throws {
        try await Self.pair(with: url, configuration: configuration, replications: replications)
    }

    private static func pair(with url: PairingURL, configuration: MeshConfiguration, replications: PeerReplications) async throws {
        guard let fingerprint = url.fingerprint else {
            throw SyncError.invalidConfiguration("the pairing URL has no certificate fingerprint (fp=): only an HTTPS node can be paired with")
        }
        try configuration.trust.add(fingerprint: fingerprint, uuid: url.uuid, note: "paired \(url.host):\(url.port)")
        try PairedPeers(directory: configuration.directory).save(url)
        await syncPaired(url, fingerprint: fingerprint, with: replications)
    }

    private static func syncPaired(_ url: PairingURL, fingerprint: String, with replications: PeerReplications) async {
        let record = ServiceRecord(
            name: url.host, port: url.port, uuid: url.uuid, databases: [url.database], tls: true,
            fingerprint: fingerprint, requiresAuth: url.user != nil)
        let credential = url.user.flatMap { user in url.password.map { BasicAuthenticator(username: user, password: $0) } }
        await replications.pair(Peer(record: record, host: url.host, addresses: [url.host]), credential: credential)
    }

    /// Keeps `collection` replicated (push and pull, continuously) with the database at `url`,
    /// any CouchDB-compatible peer, until the node stops. A `fp=` in the URL pins the peer's
    /// certificate; `trustOnFirstUse` pins whichever self-signed one it first presents.
    /// - Throws: ``SyncError/invalidIdentity(_:)`` when the node's client identity cannot be loaded.
    public func sync(with url: URL, collection: DocumentCollection, trustOnFirstUse: Bool = false) async throws {
        try await replications.sync(with: url, collection: collection, trustOnFirstUse: trustOnFirstUse)
    }

    /// Stops syncing, advertising and browsing, then the listener (requests in flight
    /// finish). Replications end after the batch in flight, their checkpoints saved.
    public func stop() async {
        guard let state = running.withLock({ r in defer { r = nil }; return r }) else { return }
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
    /// Starts the node, runs until its service group shuts down gracefully (or the task is
    /// cancelled), then stops it.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await stop()
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
