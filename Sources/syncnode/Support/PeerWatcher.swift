import Foundation
import SyncNodeDiscovery
import SyncNodeStore
import SyncNodeSync

/// `serve`'s view of the network: reports peers appearing and going on
/// stderr and, with `--auto-sync`, keeps a continuous replication of every
/// database both sides serve with each trusted peer while it answers.
actor PeerWatcher {
    struct AutoSync {
        var directory: NodeDirectory
        var databases: @Sendable () -> [String]
        var trust: TrustStore
        /// Presented to peers as the client certificate.
        var identity: TLSIdentity?
        var user: String?
        var password: String?
        var conflicts: ConflictPolicy
    }

    private let autoSync: AutoSync?
    /// Per trusted peer: the replications, one per database both serve.
    private var syncs: [String: (peer: Peer, replications: [String: PeerSync])] = [:]

    init(autoSync: AutoSync?) {
        self.autoSync = autoSync
    }

    /// Follows `events` until they end, then stops every replication.
    func run(_ events: AsyncStream<PeerEvent>) async {
        for await event in events {
            switch event {
            case .appeared(let peer):
                Output.progress("syncnode: peer \(peer.name) appeared at \(peer.host):\(peer.port) (uuid \(peer.uuid), dbs \(peer.record.databases.joined(separator: ",")))")
                start(peer)
            case .updated(let peer):
                Output.progress("syncnode: peer \(peer.name) updated: \(peer.host):\(peer.port), dbs \(peer.record.databases.joined(separator: ","))")
                if let running = syncs[peer.uuid], running.peer.host != peer.host || running.peer.port != peer.port
                    || running.peer.record.databases != peer.record.databases {
                    await stop(peer.uuid)
                    start(peer)
                }
            case .disappeared(let peer):
                Output.progress("syncnode: peer \(peer.name) lost (uuid \(peer.uuid))")
                await stop(peer.uuid)
            }
        }
        for uuid in Array(syncs.keys) { await stop(uuid) }
    }

    /// This node's databases changed: sync the new ones with the peers that serve them too.
    func databasesChanged() {
        for (_, running) in syncs { startMissing(running.peer) }
    }

    private func start(_ peer: Peer) {
        guard let autoSync, syncs[peer.uuid] == nil else { return }
        guard autoSync.trust.admit(fingerprint: peer.record.fingerprint, uuid: peer.uuid, name: peer.name) else {
            Output.progress("syncnode: not syncing with \(peer.name): \(autoSync.trust.refusal(fingerprint: peer.record.fingerprint, uuid: peer.uuid))")
            return
        }
        syncs[peer.uuid] = (peer, [:])
        startMissing(peer)
        if syncs[peer.uuid]?.replications.isEmpty == true {
            Output.progress("syncnode: no database in common with \(peer.name) yet")
        }
    }

    /// Starts a replication of each database both sides serve that has none yet.
    private func startMissing(_ peer: Peer) {
        guard let autoSync, var running = syncs[peer.uuid] else { return }
        for name in autoSync.databases() where peer.record.databases.contains(name) && running.replications[name] == nil {
            guard let collection = try? autoSync.directory.database(name)?.defaultCollection() else { continue }
            let url = peer.url(database: name, user: autoSync.user, password: autoSync.password)
            running.replications[name] = PeerSync(
                collection: collection, url: url, identity: autoSync.identity, trustOnFirstUse: false, conflicts: autoSync.conflicts, label: "sync \(peer.name)/\(name)")
        }
        syncs[peer.uuid] = running
    }

    private func stop(_ uuid: String) async {
        guard let running = syncs.removeValue(forKey: uuid) else { return }
        for sync in running.replications.values { await sync.stop() }
    }
}
