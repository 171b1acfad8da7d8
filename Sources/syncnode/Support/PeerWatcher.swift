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
        var trust: TrustedPeers
        var user: String?
        var password: String?
    }

    private let autoSync: AutoSync?
    private var syncs: [String: (peer: Peer, replications: [PeerSync])] = [:]

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

    private func start(_ peer: Peer) {
        guard let autoSync, syncs[peer.uuid] == nil else { return }
        guard autoSync.trust.admit(peer) else {
            Output.progress("syncnode: not syncing with \(peer.name): \(autoSync.trust.refusal(peer))")
            return
        }
        let shared = autoSync.databases().filter(peer.record.databases.contains)
        var replications: [PeerSync] = []
        for name in shared {
            guard let collection = try? autoSync.directory.database(name)?.defaultCollection() else { continue }
            let url = peer.url(database: name, user: autoSync.user, password: autoSync.password)
            replications.append(PeerSync(collection: collection, url: url, trustOnFirstUse: false, label: "sync \(peer.name)/\(name)"))
        }
        if replications.isEmpty {
            Output.progress("syncnode: no database in common with \(peer.name)")
        }
        syncs[peer.uuid] = (peer, replications)
    }

    private func stop(_ uuid: String) async {
        guard let running = syncs.removeValue(forKey: uuid) else { return }
        for sync in running.replications { await sync.stop() }
    }
}
