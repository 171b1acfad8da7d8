import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeStore
import SyncNodeSync

/// The node's replications with its peers: for each trusted peer, one per keyspace both
/// sides share, started as peers and keyspaces appear and stopped as they go.
actor PeerReplications {
    private let configuration: MeshConfiguration
    private let board: PresenceBoard
    /// Per trusted peer (by UUID): where it is, and the replications, by keyspace.
    /// The listener's list of replications, where each one started here is shown.
    private let tasks: ReplicationTasks
    private var syncs: [String: (peer: Peer, replications: [Keyspace: PeerReplication])] = [:]
    /// Replications with URLs the app named (any CouchDB-compatible peer).
    private var explicit: [PeerReplication] = []
    /// Per shared keyspace, its replication with the hub (``MeshConfiguration/hubs``); read
    /// without waiting for the actor by the tombstone horizon (``MeshNode/tombstoneHorizon``).
    nonisolated let hubs = Mutex<[Keyspace: HubReplication]>([:])
    /// The probe that asks a peer for its keyspaces (`GET /_node/keyspaces`), for the peers
    /// whose DNS-SD record does not list them all: those paired by URL, and those whose record
    /// says `more=1`.
    private var asking: [String: NodeProbe] = [:]
    /// The peers paired by URL (by UUID), and the credential each one's URL carried, if any
    /// (an invitation's URL carries none: they sign each other in by certificate).
    private var paired: Set<String> = []
    private var pairedCredentials: [String: BasicAuthenticator] = [:]
    /// The scope each synced peer (by UUID) had when its replications were started.
    private var scopes: [String: PeerScope] = [:]
    /// Every peer on the board, as last seen, so a change of trust can be applied to it.
    private var seen: [String: (peer: Peer, discovered: Bool)] = [:]

    init(configuration: MeshConfiguration, tasks: ReplicationTasks, board: PresenceBoard) {
        self.configuration = configuration
        self.tasks = tasks
        self.board = board
    }

    private func emit(_ event: MeshEvent) { configuration.onEvent?(event) }

    /// Follows DNS-SD's `events` until they end, then stops every replication.
    func run(_ events: AsyncStream<PeerEvent>) async {
        for await event in events {
            switch event {
            case .appeared(let peer), .updated(let peer):
                if case .appeared = event { emit(.peerAppeared(peer)) } else { emit(.peerUpdated(peer)) }
                if let running = syncs[peer.uuid], running.peer.host != peer.host || running.peer.port != peer.port {
                    // Moved (a paired peer that restarted elsewhere appears anew): its replications
                    // and its keyspace probe point at the old address.
                    await stop(peer.uuid)
                    await asking.removeValue(forKey: peer.uuid)?.shutdown()
                }
                await start(peer, discovered: true)
            case .disappeared(let peer):
                emit(.peerLost(peer))
                if paired.contains(peer.uuid) {
                    // Paired by URL: DNS-SD no longer sees it, but its address may still answer.
                    board.update(peer.uuid, make: { nil }) { $0?.discovered = false }
                } else {
                    await stop(peer.uuid)
                    // An HTTP client must be shut down before it is released.
                    await asking.removeValue(forKey: peer.uuid)?.shutdown()
                    seen[peer.uuid] = nil
                    board.update(peer.uuid, make: { nil }) { $0 = nil }
                }
            }
        }
        await stopAll()
    }

    /// The trust in `fingerprint` changed: its peers are shown as the policy now says, synced
    /// with if newly trusted (as any peer is), and no longer synced with if not.
    func trustChanged(fingerprint: String) async {
        for (uuid, entry) in seen where entry.peer.record.fingerprint == fingerprint {
            // Lost while an earlier peer was handled (this actor awaits in between): left alone.
            guard seen[uuid] != nil else { continue }
            if !configuration.trust.admit(fingerprint: fingerprint, uuid: uuid, name: entry.peer.name) {
                await untrusted(entry.peer)
            } else {
                await start(entry.peer, discovered: entry.discovered)
            }
        }
    }

    /// Stops syncing with each peer whose certificate is trusted no more (its fingerprint
    /// removed from the trusted-peers file, by `syncnode trust remove` or another process).
    func recheckTrust() async {
        for (uuid, running) in syncs {
            guard let fingerprint = running.peer.record.fingerprint, syncs[uuid] != nil else { continue }
            guard let trusted = configuration.trust.peer(clientFingerprint: fingerprint) else {
                await untrusted(running.peer)
                continue
            }
            // Its scope changed (narrowed by `trust add --access read`, say): synced again as it now says.
            if trusted.scope != scopes[uuid] {
                await stop(uuid)
                await start(running.peer, discovered: seen[uuid]?.discovered ?? false)
            }
        }
    }

    /// `peer` is trusted no more: its replications stop, and the board and the events say so.
    private func untrusted(_ peer: Peer) async {
        if syncs[peer.uuid] != nil {
            configuration.logger.notice("a peer is no longer trusted: its replications stop", metadata: ["peer": "\(peer.name)"])
            await stop(peer.uuid)
        }
        board.update(peer.uuid, make: { nil }) { $0?.trusted = false }
        emit(.peerRefused(peer, reason: configuration.trust.refusal(fingerprint: peer.record.fingerprint, uuid: peer.uuid)))
    }

    /// This node's keyspaces changed: sync the new ones with the peers that share them.
    func keyspacesChanged() {
        for (_, running) in syncs { startMissing(running.peer) }
    }

    /// Replicates with `peer`'s shared keyspaces, once the trust policy admits it.
    func start(_ peer: Peer, discovered: Bool) async {
        seen[peer.uuid] = (peer, discovered || seen[peer.uuid]?.discovered == true)
        var peer = peer
        // Without auto-sync a discovered peer is only shown: trust on first use must not record it.
        let syncing = configuration.autoSync || !discovered
        let trusted = syncing
            ? configuration.trust.admit(fingerprint: peer.record.fingerprint, uuid: peer.uuid, name: peer.name)
            : peer.record.fingerprint.flatMap(configuration.trust.principal(clientFingerprint:)) != nil
        if syncing, trusted, discovered, peer.record.hasMore, asking[peer.uuid] == nil,
           let keyspaces = await ask(peer, credential: configuration.peerCredential) {
            peer.record.keyspaces = keyspaces
        }
        board.update(peer.uuid, make: {
            MeshPeer(uuid: peer.uuid, name: peer.name, host: peer.host, port: peer.port, addresses: peer.addresses,
                     fingerprint: peer.record.fingerprint, trusted: trusted, discovered: discovered, collections: [:])
        }) { known in
            known?.fingerprint = peer.record.fingerprint
            known?.name = peer.name
            known?.host = peer.host
            known?.port = peer.port
            known?.addresses = peer.addresses
            known?.trusted = trusted
            if discovered { known?.discovered = true }
        }
        guard syncing else { return }
        guard trusted else {
            if syncs[peer.uuid] == nil {
                emit(.peerRefused(peer, reason: configuration.trust.refusal(fingerprint: peer.record.fingerprint, uuid: peer.uuid)))
            }
            return
        }
        let isNew = syncs[peer.uuid] == nil
        if isNew { syncs[peer.uuid] = (peer, [:]) } else { syncs[peer.uuid]?.peer = peer }
        startMissing(peer)
        if isNew, syncs[peer.uuid]?.replications.isEmpty == true { emit(.nothingInCommon(peer)) }
    }

    /// Starts a replication of each keyspace both sides share that has none yet. A
    /// collection the peer shares is made here if missing, when this node shares it too
    /// (its database is shared whole, or it is named) and has its database.
    private func startMissing(_ peer: Peer) {
        guard var running = syncs[peer.uuid] else { return }
        let open = Set(configuration.directory.openDatabaseNames())
        // What the peer was admitted to bounds what crosses, both ways: a peer that may only read
        // here is never pulled from (its changes would be writes here), and a keyspace outside its
        // scope is not synced at all. A peer known by UUID alone (plain HTTP) has no scope.
        let scope = peer.record.fingerprint.flatMap(configuration.trust.peer(clientFingerprint:))?.scope ?? .everything
        scopes[peer.uuid] = scope
        let type: ReplicatorType? = switch (scope.access, configuration.peerSync) {
        case (.write, .pull): .pull
        case (.write, .pushAndPull): .pushAndPull
        case (.read, .pushAndPull): .push
        case (.read, .pull): nil
        }
        guard let type else { return }
        for keyspace in peer.record.keyspaces where running.replications[keyspace] == nil {
            guard open.contains(keyspace.database), configuration.shares(keyspace), scope.allows(keyspace) else { continue }
            do {
                guard let db = try configuration.directory.database(keyspace.database) else { continue }
                let collection = try keyspace.collection.map { try db.createCollection(name: $0, scope: keyspace.scope) } ?? db.defaultCollection()
                let label = "sync \(peer.name)/\(keyspace)"
                let credential = pairedCredentials[peer.uuid] ?? configuration.peerCredential
                let url = peer.url(database: keyspace.name, user: credential?.username, password: credential?.password)
                // A subscription filters what is pulled; a read-only peer's push carries everything.
                let subscription = type == .push ? nil : configuration.subscription(for: keyspace)
                running.replications[keyspace] = try PeerReplication(
                    collection: collection, url: url, configuration: configuration, tasks: tasks,
                    type: type, trustOnFirstUse: false, selector: subscription
                ) { [board, configuration] status in
                    board.record(status, peer: peer.uuid, keyspace: keyspace, subscription: subscription)
                    configuration.onEvent?(.replication(label: label, status: status))
                } judged: { [board, configuration] judgement, crossed in
                    board.settle(judgement, crossed: crossed, peer: peer.uuid, name: peer.name, keyspace: keyspace, onEvent: configuration.onEvent)
                }
            } catch {
                configuration.logger.warning("cannot sync a keyspace", metadata: ["peer": "\(peer.name)", "keyspace": "\(keyspace)", "error": "\(error)"])
            }
        }
        syncs[peer.uuid] = running
    }

    /// The keyspaces replicated with the peer `uuid` now, sorted; empty when none runs.
    func keyspacesSynced(with uuid: String) -> [Keyspace] { syncs[uuid]?.replications.keys.sorted() ?? [] }

    /// Whether the peer `uuid` was paired by URL (and so is synced with already).
    func isPaired(_ uuid: String) -> Bool { paired.contains(uuid) }

    /// Replicates with a node that paired by URL, its keyspaces asked of it now and on each
    /// ``refreshAsked()``.
    func pair(_ peer: Peer, credential: BasicAuthenticator?) async {
        paired.insert(peer.uuid)
        pairedCredentials[peer.uuid] = credential
        var peer = peer
        if let keyspaces = await ask(peer, credential: credential) { peer.record.keyspaces = keyspaces }
        // A pairing URL names an address, not the node: its welcome tells (at most 63 bytes, as DNS-SD's).
        if let name = try? await asking[peer.uuid]?.name(), name.utf8.count <= 63 { peer.record.name = name }
        await start(peer, discovered: false)
    }

    /// The keyspaces `peer` offers, asked with its probe (made on first use, presenting this
    /// node's certificate); nil when it does not answer.
    private func ask(_ peer: Peer, credential: BasicAuthenticator?) async -> [Keyspace]? {
        let probe = asking[peer.uuid] ?? NodeProbe(
            scheme: "https", host: peer.host, port: peer.port, fingerprint: peer.record.fingerprint,
            authenticator: credential, timeout: .seconds(5),
            clientIdentity: try? configuration.clientIdentity())
        asking[peer.uuid] = probe
        return try? await probe.keyspaces()
    }

    /// Asks again each peer whose keyspaces DNS-SD does not list, and syncs new ones.
    func refreshAsked() async {
        for (uuid, probe) in asking {
            guard syncs[uuid] != nil, let keyspaces = try? await probe.keyspaces() else { continue }
            // Read again after the wait: the peer may have moved or gone meanwhile.
            guard var peer = syncs[uuid]?.peer, keyspaces != peer.record.keyspaces else { continue }
            peer.record.keyspaces = keyspaces
            syncs[uuid]?.peer = peer
            startMissing(peer)
        }
    }

    private func stop(_ uuid: String) async {
        scopes[uuid] = nil
        guard let running = syncs.removeValue(forKey: uuid) else { return }
        for sync in running.replications.values { await sync.stop() }
        // No replication, no state: what they last said (in sync, say) is no longer measured.
        board.update(uuid, make: { nil }) { $0?.collections = [:] }
    }

    /// Keeps `collection` replicated with the database at `url`.
    func sync(with url: URL, collection: DocumentCollection, trustOnFirstUse: Bool) throws {
        let label = "sync \(url.host ?? "?"):\(url.port.map(String.init) ?? "")"
        explicit.append(try PeerReplication(collection: collection, url: url, configuration: configuration, tasks: tasks, type: .pushAndPull, trustOnFirstUse: trustOnFirstUse) {
            [configuration] status in configuration.onEvent?(.replication(label: label, status: status))
        })
    }

    /// Stops the replications, with peers and the hub, of collections that are no longer the ones
    /// the directory serves under their names: their database or they were deleted, or deleted
    /// and made again (new ones, which ``keyspacesChanged()`` and ``syncHubs(_:)`` then start
    /// afresh). Returns whether it stopped any.
    func dropDeleted() async -> Bool {
        let directory = configuration.directory
        // A directory that cannot be read now says nothing: the next look decides.
        func gone(_ collection: DocumentCollection) -> Bool {
            do {
                guard let db = try directory.database(collection.database.name), db === collection.database else { return true }
                return try db.collection(name: collection.name, scope: collection.scopeName) !== collection
            } catch {
                return false
            }
        }
        var dropped: [(peer: String, keyspace: Keyspace, stop: () async -> Void)] = []
        for (uuid, running) in syncs {
            for (keyspace, sync) in running.replications where gone(sync.collection) {
                syncs[uuid]?.replications[keyspace] = nil
                dropped.append((uuid, keyspace, sync.stop))
            }
        }
        let hubsGone = hubs.withLock { hubs in
            let stale = hubs.filter { gone($0.value.collection) }
            for keyspace in stale.keys { hubs[keyspace] = nil }
            return stale
        }
        for (keyspace, hub) in hubsGone { dropped.append((HubReplication.boardID, keyspace, hub.stop)) }
        for (peer, keyspace, stop) in dropped {
            configuration.logger.notice("a collection was deleted (or made again): its replication stops", metadata: ["peer": "\(peer)", "keyspace": "\(keyspace)"])
            await stop()
            board.update(peer, make: { nil }) { $0?.collections[keyspace] = nil }
        }
        return !dropped.isEmpty
    }

    /// Replicates each of `keyspaces` not yet replicated with the hub, when there is one.
    func syncHubs(_ keyspaces: [Keyspace]) {
        guard !configuration.hubs.isEmpty else { return }
        for keyspace in keyspaces where hubs.withLock({ $0[keyspace] }) == nil {
            do {
                guard let db = try configuration.directory.database(keyspace.database) else { continue }
                let collection = try keyspace.collection.map { try db.createCollection(name: $0, scope: keyspace.scope) } ?? db.defaultCollection()
                let hub = try HubReplication(keyspace: keyspace, collection: collection, configuration: configuration, tasks: tasks, board: board)
                hubs.withLock { $0[keyspace] = hub }
            } catch {
                configuration.logger.warning("cannot sync a keyspace with the hub", metadata: ["keyspace": "\(keyspace)", "error": "\(error)"])
            }
        }
    }

    func stopAll() async {
        let stopping = hubs.withLock { hubs in
            defer { hubs = [:] }
            return Array(hubs.values)
        }
        for hub in stopping { await hub.stop() }
        if !stopping.isEmpty { board.update(HubReplication.boardID, make: { nil }) { $0 = nil } }
        for uuid in Array(syncs.keys) { await stop(uuid) }
        for probe in asking.values { await probe.shutdown() }
        asking = [:]
        for sync in explicit { await sync.stop() }
        explicit = []
    }
}
